package io.github.te4j;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import org.bytedeco.javacpp.Pointer;

/**
 * The parameters of one kernel launch, in the order the kernel declares them:
 * {@link #add(CommContext)} for a {@code mooncake::device::CommCtx} taken by value,
 * {@link #add(DeviceBuffer)} for a pointer, and primitives for the C types of the same size
 * ({@code int32_t}/{@code uint32_t} as int, {@code int64_t}/{@code size_t} as long, ...).
 * A mutable builder; one instance may be launched many times (contexts and buffers are read at
 * each launch, so a context's RDMA tables attached later are seen). Not thread-safe: one
 * instance is marshalled into its own native parameter block at each launch, so threads that
 * launch at the same time each use their own.
 *
 * @since 0.1
 */
public final class KernelArgs
{
    private enum Type
    {
        COMM_CTX, BUFFER, POINTER, BYTES, I8, I16, I32, I64, F32, F64
    }

    private static final class Arg
    {
        final Type type;
        final long value;
        final Object ref;

        Arg(final Type type, final long value, final Object ref)
        {
            this.type = type;
            this.value = value;
            this.ref = ref;
        }
    }

    private final List<Arg> args = new ArrayList<>();

    // The launch layout, made on the first launch after the list changed: the parameters back to
    // back at 16-byte aligned offsets in a direct buffer, followed by the offsets as int64s, so
    // a launch hands native code two addresses and copies no Java array.
    private long[] offsets;
    private ByteBuffer block;
    private long blockAddress;
    private long offsetsAddress;
    private NativeResource[] resourceArray;
    private int version;
    // Per parameter, the CommContext version whose bytes the block holds (-1: none yet); only
    // contexts are copied again at a launch, everything else is written once after a layout.
    private int[] copiedCtxVersions;
    private long ctxCopies;

    /**
     * An empty parameter list.
     *
     * @return a new list
     * @since 0.1
     */
    public static KernelArgs of()
    {
        return new KernelArgs();
    }

    /**
     * A {@code CommCtx} passed by value: this context's P2P tables, RDMA tables and rank.
     *
     * @param ctx the context, open at launch
     * @return this list
     * @throws IllegalArgumentException when {@code ctx} is null
     * @since 0.1
     */
    public KernelArgs add(final CommContext ctx)
    {
        Errors.checkArgument(ctx != null, "argument " + args.size() + ": CommContext is null");
        push(new Arg(Type.COMM_CTX, 0, ctx));
        return this;
    }

    /**
     * A pointer to the start of {@code buffer}.
     *
     * @param buffer the buffer, open at launch
     * @return this list
     * @throws IllegalArgumentException when {@code buffer} is null
     * @since 0.1
     */
    public KernelArgs add(final DeviceBuffer buffer)
    {
        return add(buffer, 0);
    }

    /**
     * A pointer {@code offset} bytes into {@code buffer} (0 &lt;= offset &lt;= size).
     *
     * @param buffer the buffer, open at launch
     * @param offset bytes from its start, in [0, size]
     * @return this list
     * @throws IllegalArgumentException when {@code buffer} is null or {@code offset} is outside it
     * @since 0.1
     */
    public KernelArgs add(final DeviceBuffer buffer, final long offset)
    {
        Errors.checkArgument(buffer != null, "argument " + args.size() + ": DeviceBuffer is null");
        Errors.checkArgument(offset >= 0 && offset <= buffer.size(),
            "argument " + args.size() + ": offset " + offset + " outside " + buffer);
        push(new Arg(Type.BUFFER, offset, buffer));
        return this;
    }

    /**
     * A raw device address (memory te4j does not own, e.g. from the JavaCPP Presets for CUDA);
     * the caller keeps it valid until the kernel has run.
     *
     * @param address the address passed as the pointer
     * @return this list
     * @since 0.1
     */
    public KernelArgs addPointer(final long address)
    {
        push(new Arg(Type.POINTER, address, null));
        return this;
    }

    /**
     * A struct of the user's passed by value: its bytes, laid out as the C++ struct (little-endian).
     *
     * @param struct the struct's bytes (copied), 1 to 4096
     * @return this list
     * @throws IllegalArgumentException when {@code struct} is null, empty or longer than 4096 bytes
     * @since 0.1
     */
    public KernelArgs addBytes(final byte[] struct)
    {
        Errors.checkArgument(struct != null && struct.length > 0 && struct.length <= 4096,
            "argument " + args.size() + ": struct bytes null, empty or over 4096");
        push(new Arg(Type.BYTES, 0, struct.clone()));
        return this;
    }

    /**
     * A {@code char}/{@code int8_t} parameter.
     *
     * @param v the value
     * @return this list
     * @since 0.1
     */
    public KernelArgs addByte(final byte v)
    {
        push(new Arg(Type.I8, v, null));
        return this;
    }

    /**
     * A {@code short}/{@code int16_t} parameter.
     *
     * @param v the value
     * @return this list
     * @since 0.1
     */
    public KernelArgs addShort(final short v)
    {
        push(new Arg(Type.I16, v, null));
        return this;
    }

    /**
     * An {@code int}/{@code int32_t} parameter.
     *
     * @param v the value
     * @return this list
     * @since 0.1
     */
    public KernelArgs addInt(final int v)
    {
        push(new Arg(Type.I32, v, null));
        return this;
    }

    /**
     * A {@code long long}/{@code int64_t} parameter.
     *
     * @param v the value
     * @return this list
     * @since 0.1
     */
    public KernelArgs addLong(final long v)
    {
        push(new Arg(Type.I64, v, null));
        return this;
    }

    /**
     * A {@code float} parameter.
     *
     * @param v the value
     * @return this list
     * @since 0.1
     */
    public KernelArgs addFloat(final float v)
    {
        push(new Arg(Type.F32, Float.floatToRawIntBits(v), null));
        return this;
    }

    /**
     * A {@code double} parameter.
     *
     * @param v the value
     * @return this list
     * @since 0.1
     */
    public KernelArgs addDouble(final double v)
    {
        push(new Arg(Type.F64, Double.doubleToRawLongBits(v), null));
        return this;
    }

    private void push(final Arg a)
    {
        args.add(a);
        offsets = null;
        resourceArray = null;
        version++;
    }

    /** Changes with every parameter added: a launch checks a list again only after it changed. */
    int version()
    {
        return version;
    }

    /**
     * Number of parameters.
     *
     * @return the number of parameters added
     * @since 0.1
     */
    public int count()
    {
        return args.size();
    }

    /** Bytes of parameter {@code i} as the kernel receives it. */
    long sizeOf(final int i)
    {
        final Arg a = args.get(i);
        switch (a.type)
        {
            case COMM_CTX: return CommContext.commCtxSize();
            case BYTES: return ((byte[]) a.ref).length;
            case I8: return 1;
            case I16: return 2;
            case I32: case F32: return 4;
            default: return 8;
        }
    }

    /** What parameter {@code i} is, for messages. */
    String describe(final int i)
    {
        final Arg a = args.get(i);
        switch (a.type)
        {
            case COMM_CTX: return "CommContext (" + sizeOf(i) + " B)";
            case BUFFER: return "DeviceBuffer pointer (8 B)";
            case POINTER: return "pointer (8 B)";
            case BYTES: return "struct (" + sizeOf(i) + " B)";
            default: return a.type.name().toLowerCase() + " (" + sizeOf(i) + " B)";
        }
    }

    /** The te4j objects handed to the kernel (locked for the launch and tracked by the stream); not to be changed. */
    NativeResource[] resources()
    {
        if (resourceArray == null)
        {
            final List<NativeResource> out = new ArrayList<>();
            for (final Arg a : args)
            {
                if (a.ref instanceof NativeResource)
                {
                    out.add((NativeResource) a.ref);
                }
            }
            resourceArray = out.toArray(new NativeResource[0]);
        }
        return resourceArray;
    }

    /**
     * Writes the parameters into this list's native block (laid out on first use) and returns its
     * address; {@link #offsetsAddress()} then holds their offsets. Called with every resource
     * entered (open, not closing).
     */
    long marshal()
    {
        if (offsets == null)
        {
            layOut();
            writeFixed();
        }
        final int[] copied = copiedCtxVersions;
        for (int i = 0; i < copied.length; i++)
        {
            if (copied[i] == Integer.MIN_VALUE)
            {
                continue;
            }
            final CommContext ctx = (CommContext) args.get(i).ref;
            final int v = ctx.commCtxVersion();
            if (v != copied[i])
            {
                ctx.writeCommCtxEntered(blockAddress + offsets[i]);
                copied[i] = v;
                ctxCopies++;
            }
        }
        return blockAddress;
    }

    /** Writes every parameter but the contexts (which {@link #marshal()} copies when they change). */
    private void writeFixed()
    {
        final ByteBuffer b = block;
        final int[] copied = new int[offsets.length];
        for (int i = 0; i < offsets.length; i++)
        {
            final Arg a = args.get(i);
            final int at = (int) offsets[i];
            copied[i] = Integer.MIN_VALUE;
            switch (a.type)
            {
                case COMM_CTX:
                    copied[i] = -1;
                    break;
                case BUFFER:
                    b.putLong(at, ((DeviceBuffer) a.ref).address() + a.value);
                    break;
                case BYTES:
                    b.put(at, (byte[]) a.ref);
                    break;
                case I8:
                    b.put(at, (byte) a.value);
                    break;
                case I16:
                    b.putShort(at, (short) a.value);
                    break;
                case I32:
                case F32:
                    b.putInt(at, (int) a.value);
                    break;
                default:
                    b.putLong(at, a.value);
                    break;
            }
        }
        copiedCtxVersions = copied;
    }

    /** Where the int64 offsets of the parameters lie in the native block (after {@link #marshal()}). */
    long offsetsAddress()
    {
        return offsetsAddress;
    }

    /** Where the native block starts (after {@link #marshal()}). */
    long blockAddress()
    {
        return blockAddress;
    }

    /** How many times {@link #marshal()} copied a context's bytes into the block (for tests). */
    long ctxCopies()
    {
        return ctxCopies;
    }

    /** The parameter offsets of the last {@link #marshal()} (for tests). */
    long[] marshalledOffsets()
    {
        return offsets.clone();
    }

    /** A read-only view of the native block the last {@link #marshal()} wrote (for tests). */
    ByteBuffer marshalledBlock()
    {
        return block.asReadOnlyBuffer().order(ByteOrder.LITTLE_ENDIAN);
    }

    private void layOut()
    {
        final long[] at = new long[args.size()];
        long total = 0;
        for (int i = 0; i < at.length; i++)
        {
            at[i] = total;
            total += (sizeOf(i) + 15) & ~15L;
        }
        final long bytes = total + 8L * at.length;
        Errors.checkArgument(bytes <= Integer.MAX_VALUE - 16, "kernel parameters of " + total + " bytes");
        final ByteBuffer b = ByteBuffer.allocateDirect((int) Math.max(bytes, 8) + 16).alignedSlice(16)
            .order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < at.length; i++)
        {
            b.putLong((int) total + 8 * i, at[i]);
        }
        block = b;
        blockAddress = new Pointer(b).address();
        offsetsAddress = blockAddress + total;
        offsets = at;
    }
}
