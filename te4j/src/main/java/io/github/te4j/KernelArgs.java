package io.github.te4j;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

/**
 * The parameters of one kernel launch, in the order the kernel declares them:
 * {@link #add(CommContext)} for a {@code mooncake::device::CommCtx} taken by value,
 * {@link #add(DeviceBuffer)} for a pointer, and primitives for the C types of the same size
 * ({@code int32_t}/{@code uint32_t} as int, {@code int64_t}/{@code size_t} as long, ...).
 * A mutable builder; one instance may be launched many times (contexts and buffers are read at
 * each launch, so a context's RDMA tables attached later are seen). Not thread-safe.
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

    /** An empty parameter list. */
    public static KernelArgs of()
    {
        return new KernelArgs();
    }

    /** A {@code CommCtx} passed by value: this context's P2P tables, RDMA tables and rank. */
    public KernelArgs add(final CommContext ctx)
    {
        Errors.checkArgument(ctx != null, "argument " + args.size() + ": CommContext is null");
        args.add(new Arg(Type.COMM_CTX, 0, ctx));
        return this;
    }

    /** A pointer to the start of {@code buffer}. */
    public KernelArgs add(final DeviceBuffer buffer)
    {
        return add(buffer, 0);
    }

    /** A pointer {@code offset} bytes into {@code buffer} (0 &lt;= offset &lt;= size). */
    public KernelArgs add(final DeviceBuffer buffer, final long offset)
    {
        Errors.checkArgument(buffer != null, "argument " + args.size() + ": DeviceBuffer is null");
        Errors.checkArgument(offset >= 0 && offset <= buffer.size(),
            "argument " + args.size() + ": offset " + offset + " outside " + buffer);
        args.add(new Arg(Type.BUFFER, offset, buffer));
        return this;
    }

    /**
     * A raw device address (memory te4j does not own, e.g. from the JavaCPP Presets for CUDA);
     * the caller keeps it valid until the kernel has run.
     */
    public KernelArgs addPointer(final long address)
    {
        args.add(new Arg(Type.POINTER, address, null));
        return this;
    }

    /** A struct of the user's passed by value: its bytes, laid out as the C++ struct (little-endian). */
    public KernelArgs addBytes(final byte[] struct)
    {
        Errors.checkArgument(struct != null && struct.length > 0 && struct.length <= 4096,
            "argument " + args.size() + ": struct bytes null, empty or over 4096");
        args.add(new Arg(Type.BYTES, 0, struct.clone()));
        return this;
    }

    public KernelArgs addByte(final byte v)
    {
        args.add(new Arg(Type.I8, v, null));
        return this;
    }

    public KernelArgs addShort(final short v)
    {
        args.add(new Arg(Type.I16, v, null));
        return this;
    }

    public KernelArgs addInt(final int v)
    {
        args.add(new Arg(Type.I32, v, null));
        return this;
    }

    public KernelArgs addLong(final long v)
    {
        args.add(new Arg(Type.I64, v, null));
        return this;
    }

    public KernelArgs addFloat(final float v)
    {
        args.add(new Arg(Type.F32, Float.floatToRawIntBits(v), null));
        return this;
    }

    public KernelArgs addDouble(final double v)
    {
        args.add(new Arg(Type.F64, Double.doubleToRawLongBits(v), null));
        return this;
    }

    /** Number of parameters. */
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

    /** The te4j objects handed to the kernel (locked for the launch and tracked by the stream). */
    List<NativeResource> resources()
    {
        final List<NativeResource> out = new ArrayList<>();
        for (final Arg a : args)
        {
            if (a.ref instanceof NativeResource)
            {
                out.add((NativeResource) a.ref);
            }
        }
        return out;
    }

    /**
     * Lays the parameters out back to back, each at a 16-byte aligned offset, into a new array;
     * fills {@code offsets}. Called with every resource entered (open, not closing).
     */
    byte[] marshal(final long[] offsets)
    {
        long total = 0;
        for (int i = 0; i < args.size(); i++)
        {
            offsets[i] = total;
            total += (sizeOf(i) + 15) & ~15L;
        }
        final ByteBuffer b = ByteBuffer.allocate((int) Math.max(total, 1)).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < args.size(); i++)
        {
            final Arg a = args.get(i);
            final int at = (int) offsets[i];
            switch (a.type)
            {
                case COMM_CTX:
                    final byte[] ctx = ((CommContext) a.ref).commCtxBytesEntered();
                    b.put(at, ctx);
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
        return b.array();
    }
}
