package io.github.te4j;

import io.github.te4j.internal.NativeApi;
import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.Lock;
import java.util.function.BooleanSupplier;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.Pointer;

/**
 * A buffer of platform memory: GPU memory on {@link Platform#CUDA}, a shared-memory segment on
 * {@link Platform#HOST}. Made by {@link P2pTransport#allocateBuffer(long)} or registered with
 * {@link P2pTransport#registerBuffer(long, long)}. Reads and writes from Java are blocking copies
 * (from and into arrays, or direct ByteBuffers without an intermediate array); host threads reach
 * a host-platform buffer in place through a {@link #hostView() checked view}.
 *
 * <p>Closing it ends every use te4j makes of it, first: the streams and batches that use it are
 * drained (bounded: memory they may still touch is kept, not freed), its registrations with
 * transfer agents (its own, and raw ranges inside it) are withdrawn, and every RDMA transport of
 * the process deregisters it.
 *
 * @since 0.1
 */
public final class DeviceBuffer extends NativeResource
{
    private final P2pTransport owner;
    private final long address;
    private final long size;
    private final boolean registered;
    /** Run by close before the memory is freed ({@link #onRelease}). */
    private final List<BooleanSupplier> releaseHooks = new ArrayList<>();

    DeviceBuffer(final P2pTransport owner, final long address, final long size, final boolean registered)
    {
        super("DeviceBuffer@0x" + Long.toHexString(address));
        this.owner = owner;
        this.address = address;
        this.size = size;
        this.registered = registered;
    }

    /**
     * Platform address of the first byte (a GPU virtual address on CUDA).
     *
     * @return the address of the first byte
     * @since 0.1
     */
    public long address()
    {
        return address;
    }

    /**
     * Size in bytes.
     *
     * @return the size in bytes
     * @since 0.1
     */
    public long size()
    {
        return size;
    }

    /**
     * The platform of this buffer: its transport's.
     *
     * @return the platform whose memory this buffer is
     * @since 0.1
     */
    public Platform platform()
    {
        return owner.platform();
    }

    /**
     * CUDA device ordinal (0 on the host platform).
     *
     * @return the device ordinal
     * @since 0.1
     */
    public int device()
    {
        return owner.device();
    }

    /**
     * Whether this buffer was allocated elsewhere and only registered with te4j.
     *
     * @return true for memory given to {@link P2pTransport#registerBuffer(long, long)}, false for te4j's own
     * @since 0.1
     */
    public boolean isRegistered()
    {
        return registered;
    }

    P2pTransport owner()
    {
        return owner;
    }

    /**
     * Copies {@code length} bytes of {@code src} from {@code srcOffset} into this buffer at {@code offset}.
     *
     * @param offset where in this buffer the bytes go
     * @param src the bytes to copy
     * @param srcOffset the first byte of {@code src} to copy
     * @param length how many bytes
     * @throws IllegalArgumentException when {@code src} is null
     * @throws IndexOutOfBoundsException when a range falls outside {@code src} or this buffer
     * @throws ClosedException when this buffer is closed
     * @throws Te4jException when the native copy fails (e.g. {@code CUDA_ERROR})
     * @since 0.1
     */
    public void write(final long offset, final byte[] src, final int srcOffset, final int length)
    {
        Errors.checkArgument(src != null, "src is null");
        Errors.checkRange("src", srcOffset, length, src.length);
        Errors.checkRange("DeviceBuffer.write", offset, length, size);
        final Lock l = enter();
        try (BytePointer host = new BytePointer(length))
        {
            host.put(src, srcOffset, length);
            Errors.check(NativeApi.copyMemory(platform().nativeId(), device(), address + offset, host.address(), length),
                "DeviceBuffer.write", NativeApi::lastThreadError);
        }
        finally
        {
            l.unlock();
        }
    }

    /**
     * Copies all of {@code src} into this buffer at {@code offset}.
     *
     * @param offset where in this buffer the bytes go
     * @param src the bytes to copy
     * @throws IllegalArgumentException when {@code src} is null
     * @throws IndexOutOfBoundsException when the bytes do not fit at {@code offset}
     * @throws ClosedException when this buffer is closed
     * @throws Te4jException when the native copy fails (e.g. {@code CUDA_ERROR})
     * @since 0.1
     */
    public void write(final long offset, final byte[] src)
    {
        write(offset, src, 0, src == null ? 0 : src.length);
    }

    /**
     * Copies {@code length} bytes at {@code offset} of this buffer into {@code dst} from {@code dstOffset}.
     *
     * @param offset the first byte of this buffer to copy
     * @param dst where the bytes go
     * @param dstOffset where in {@code dst} the first byte goes
     * @param length how many bytes
     * @throws IllegalArgumentException when {@code dst} is null
     * @throws IndexOutOfBoundsException when a range falls outside {@code dst} or this buffer
     * @throws ClosedException when this buffer is closed
     * @throws Te4jException when the native copy fails (e.g. {@code CUDA_ERROR})
     * @since 0.1
     */
    public void read(final long offset, final byte[] dst, final int dstOffset, final int length)
    {
        Errors.checkArgument(dst != null, "dst is null");
        Errors.checkRange("dst", dstOffset, length, dst.length);
        Errors.checkRange("DeviceBuffer.read", offset, length, size);
        final Lock l = enter();
        try (BytePointer host = new BytePointer(length))
        {
            Errors.check(NativeApi.copyMemory(platform().nativeId(), device(), host.address(), address + offset, length),
                "DeviceBuffer.read", NativeApi::lastThreadError);
            host.get(dst, dstOffset, length);
        }
        finally
        {
            l.unlock();
        }
    }

    /**
     * Returns {@code length} bytes at {@code offset}.
     *
     * @param offset the first byte to read
     * @param length how many bytes, not negative
     * @return a new array with the bytes
     * @throws IllegalArgumentException when {@code length} is negative
     * @throws IndexOutOfBoundsException when the range falls outside this buffer
     * @throws ClosedException when this buffer is closed
     * @throws Te4jException when the native copy fails (e.g. {@code CUDA_ERROR})
     * @since 0.1
     */
    public byte[] read(final long offset, final int length)
    {
        Errors.checkArgument(length >= 0, "length=" + length + " is negative");
        // Before allocating: a length past the buffer must not cost a huge array (or an OutOfMemoryError).
        Errors.checkRange("DeviceBuffer.read", offset, length, size);
        final byte[] out = new byte[length];
        read(offset, out, 0, length);
        return out;
    }

    /**
     * Copies the remaining bytes of {@code src} (from its position to its limit) into this buffer
     * at {@code offset} and advances its position past them. A direct buffer is copied from
     * where it lies, without an intermediate array; a heap buffer from its array.
     *
     * @param offset where in this buffer the bytes go
     * @param src the bytes to copy, from its position to its limit
     * @throws IndexOutOfBoundsException when the bytes do not fit at {@code offset}
     * @throws IllegalArgumentException when {@code src} is null
     * @throws ClosedException when this buffer is closed
     * @throws Te4jException when the native copy fails (e.g. {@code CUDA_ERROR})
     * @since 0.1
     */
    public void write(final long offset, final ByteBuffer src)
    {
        Errors.checkArgument(src != null, "src is null");
        final int n = src.remaining();
        Errors.checkRange("DeviceBuffer.write", offset, n, size);
        if (!src.isDirect())
        {
            if (src.hasArray())
            {
                write(offset, src.array(), src.arrayOffset() + src.position(), n);
            }
            else
            {
                final byte[] copy = new byte[n];  // a read-only heap buffer hides its array
                src.duplicate().get(copy);
                write(offset, copy, 0, n);
            }
            src.position(src.position() + n);
            return;
        }
        copy(address + offset, directAddress(src), n, "DeviceBuffer.write");
        Reference.reachabilityFence(src);
        src.position(src.position() + n);
    }

    /**
     * Fills the remaining space of {@code dst} (from its position to its limit) with the bytes of
     * this buffer at {@code offset} and advances its position past them. A direct buffer is
     * filled where it lies, without an intermediate array; a heap buffer through its array.
     *
     * @param offset the first byte of this buffer to copy
     * @param dst where the bytes go, from its position to its limit
     * @throws IndexOutOfBoundsException when that many bytes do not lie at {@code offset}
     * @throws IllegalArgumentException when {@code dst} is read-only
     * @throws ClosedException when this buffer is closed
     * @throws Te4jException when the native copy fails (e.g. {@code CUDA_ERROR})
     * @since 0.1
     */
    public void read(final long offset, final ByteBuffer dst)
    {
        Errors.checkArgument(dst != null, "dst is null");
        Errors.checkArgument(!dst.isReadOnly(), "dst is read-only");
        final int n = dst.remaining();
        Errors.checkRange("DeviceBuffer.read", offset, n, size);
        if (!dst.isDirect())
        {
            read(offset, dst.array(), dst.arrayOffset() + dst.position(), n);
            dst.position(dst.position() + n);
            return;
        }
        copy(directAddress(dst), address + offset, n, "DeviceBuffer.read");
        Reference.reachabilityFence(dst);
        dst.position(dst.position() + n);
    }

    /** The address of a direct buffer's byte at its position. */
    private static long directAddress(final ByteBuffer b)
    {
        // At position 0 JavaCPP's pointer is the buffer's first byte, whatever it does with a position.
        final ByteBuffer base = b.duplicate();
        base.clear();
        return new Pointer(base).address() + b.position();
    }

    /** A blocking copy of {@code n} bytes while this buffer is entered (close waits for it). */
    private void copy(final long dst, final long src, final long n, final String what)
    {
        if (n == 0)
        {
            checkOpen();
            return;
        }
        final Lock l = enter();
        try
        {
            Errors.check(NativeApi.copyMemory(platform().nativeId(), device(), dst, src, n), what,
                NativeApi::lastThreadError);
        }
        finally
        {
            l.unlock();
        }
    }

    /**
     * A view of {@code length} bytes at {@code offset} of this buffer for host threads, whose every
     * access checks that this buffer is still open: host-platform buffers only (CUDA buffers are
     * device memory; copy those with {@link #read(long, ByteBuffer)}).
     *
     * <p>Why not a {@code ByteBuffer}: a direct ByteBuffer over this memory could not be
     * invalidated when the buffer closes, so a use after close would read or write memory that te4j
     * freed and the process may have reused (a JVM crash, or silent corruption of unrelated data).
     * The view costs one atomic increment and decrement per access; for bulk data use its
     * {@link HostMemoryView#get(int, ByteBuffer)} and {@link HostMemoryView#put(int, ByteBuffer)}.
     *
     * @param offset the first byte of the view in this buffer
     * @param length the view's size in bytes
     * @return the view; it stays valid while this buffer is open
     * @throws IllegalArgumentException on the CUDA platform, or when {@code length} exceeds
     *     {@link Integer#MAX_VALUE}
     * @throws IndexOutOfBoundsException when the range lies outside this buffer
     * @throws ClosedException when this buffer is closed
     * @since 0.1
     */
    public HostMemoryView hostView(final long offset, final long length)
    {
        Errors.checkArgument(platform() == Platform.HOST, this + " is device memory, which host threads cannot"
            + " reach (fix: copy it with read(offset, ByteBuffer) / write(offset, ByteBuffer))");
        Errors.checkRange("DeviceBuffer.hostView", offset, length, size);
        Errors.checkArgument(length <= Integer.MAX_VALUE, "length=" + length + " exceeds a view's "
            + Integer.MAX_VALUE + " bytes (fix: take several views)");
        final Lock l = enter();
        try
        {
            return new HostMemoryView(this, address + offset, (int) length);
        }
        finally
        {
            l.unlock();
        }
    }

    /**
     * {@link #hostView(long, long)} of the whole buffer.
     *
     * @return a view of all of this buffer
     * @throws IllegalArgumentException on the CUDA platform, or when the buffer exceeds {@link
     *     Integer#MAX_VALUE} bytes
     * @throws ClosedException when this buffer is closed
     * @since 0.1
     */
    public HostMemoryView hostView()
    {
        return hostView(0, size);
    }

    /**
     * On Java 22 or later, a {@code java.lang.foreign.MemorySegment} over this host-platform
     * buffer, in place: {@code MemorySegment seg = buffer.asMemorySegment();}. Its arena is this
     * buffer's: closing the buffer invalidates the segment for every thread before the memory is
     * freed, so an access after the close throws {@link IllegalStateException}. Typed as a type
     * parameter because te4j's base classes are Java 17, which has no MemorySegment; the class that
     * makes it is in the multi-release jar's {@code META-INF/versions/22}, present when te4j was
     * built by JDK 22 or later. {@code MemorySegment.reinterpret} is a restricted method: enable
     * native access for te4j to silence the JVM's warning.
     *
     * @param <S> {@code java.lang.foreign.MemorySegment}
     * @return the segment, typed as the caller's {@code MemorySegment} variable
     * @throws UnsupportedOperationException on Java 17 to 21, or with a te4j jar built by an older JDK
     * @throws IllegalArgumentException on the CUDA platform (device memory)
     * @throws ClosedException when this buffer is closed
     * @since 0.1
     */
    @SuppressWarnings("unchecked")
    public <S> S asMemorySegment()
    {
        Errors.checkArgument(platform() == Platform.HOST, this + " is device memory, which a MemorySegment cannot"
            + " reach from host threads (fix: copy it with read(offset, ByteBuffer) / write(offset, ByteBuffer))");
        final Lock l = enter();
        try
        {
            return (S) MemorySegmentView.of(this, address, size);
        }
        finally
        {
            l.unlock();
        }
    }

    /**
     * Runs {@code hook} when this buffer is closed, before its memory is freed (views that must
     * be invalidated first); it returns false when the memory must be kept instead. Called while
     * the caller has entered this buffer, so the close has not begun releasing.
     */
    void onRelease(final BooleanSupplier hook)
    {
        synchronized (releaseHooks)
        {
            releaseHooks.add(hook);
        }
    }

    /**
     * Sets {@code length} bytes at {@code offset} to {@code value}.
     *
     * @param offset the first byte to set
     * @param length how many bytes
     * @param value the byte to write
     * @throws IndexOutOfBoundsException when the range falls outside this buffer
     * @throws ClosedException when this buffer is closed
     * @throws Te4jException when the native fill fails (e.g. {@code CUDA_ERROR})
     * @since 0.1
     */
    public void fill(final long offset, final long length, final byte value)
    {
        Errors.checkRange("DeviceBuffer.fill", offset, length, size);
        final Lock l = enter();
        try
        {
            Errors.check(NativeApi.fillMemory(platform().nativeId(), device(), address + offset, value & 0xff, length),
                "DeviceBuffer.fill", NativeApi::lastThreadError);
        }
        finally
        {
            l.unlock();
        }
    }

    /** Throws unless this buffer is open; holds nothing. */
    void checkOpen()
    {
        enter().unlock();
    }

    @Override
    void release()
    {
        final List<BooleanSupplier> hooks;
        synchronized (releaseHooks)
        {
            hooks = new ArrayList<>(releaseHooks);
            releaseHooks.clear();
        }
        boolean mayFree = true;
        for (final BooleanSupplier h : hooks)
        {
            mayFree &= h.getAsBoolean();
        }
        owner.freeBufferInternal(this, mayFree);
    }

    @Override
    public String toString()
    {
        return "DeviceBuffer[" + platform() + ":" + device() + " 0x" + Long.toHexString(address) + " " + size + " B]";
    }
}
