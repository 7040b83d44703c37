package io.github.te4j;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.locks.Lock;
import org.bytedeco.javacpp.BytePointer;

/**
 * Host threads' access to a range of a host-platform {@link DeviceBuffer}, in place
 * ({@link DeviceBuffer#hostView(long, long)}): single values in the platform's byte order, and
 * bulk copies to and from ByteBuffers. Every access enters the buffer, the way te4j's own calls
 * do: once the buffer is closed, an access throws {@link ClosedException} instead of touching
 * freed memory, and a close waits for the accesses already inside.
 *
 * <p>Thread-safe: accesses from several threads are as safe as plain memory accesses (no
 * ordering between threads beyond what the caller arranges). Offsets are relative to the view.
 *
 * @since 0.1
 */
public final class HostMemoryView
{
    private final DeviceBuffer buffer;
    private final long address;
    private final int length;
    /** Never handed out: only this class touches the memory, and only while the buffer is entered. */
    private final ByteBuffer memory;

    HostMemoryView(final DeviceBuffer buffer, final long address, final int length)
    {
        this.buffer = buffer;
        this.address = address;
        this.length = length;
        this.memory = new AddressPointer(address, length).asByteBuffer().order(ByteOrder.nativeOrder());
    }

    /**
     * The view's size in bytes.
     *
     * @return the size
     * @since 0.1
     */
    public int size()
    {
        return length;
    }

    /**
     * Whether its buffer is still open (a later access may still find it closed).
     *
     * @return true while the buffer is open
     * @since 0.1
     */
    public boolean isOpen()
    {
        return !buffer.isClosed();
    }

    /**
     * The byte at {@code offset}.
     *
     * @param offset the byte's offset in the view
     * @return the byte
     * @throws IndexOutOfBoundsException when {@code offset} is outside the view
     * @throws ClosedException when the buffer is closed
     * @since 0.1
     */
    public byte get(final int offset)
    {
        Errors.checkRange("HostMemoryView.get", offset, 1, length);
        final Lock l = buffer.enter();
        try
        {
            return memory.get(offset);
        }
        finally
        {
            l.unlock();
        }
    }

    /**
     * Stores {@code value} at {@code offset}.
     *
     * @param offset the byte's offset in the view
     * @param value the byte to store
     * @throws IndexOutOfBoundsException when {@code offset} is outside the view
     * @throws ClosedException when the buffer is closed
     * @since 0.1
     */
    public void put(final int offset, final byte value)
    {
        Errors.checkRange("HostMemoryView.put", offset, 1, length);
        final Lock l = buffer.enter();
        try
        {
            memory.put(offset, value);
        }
        finally
        {
            l.unlock();
        }
    }

    /**
     * The 8 bytes at {@code offset}, in the platform's byte order.
     *
     * @param offset the offset of the first byte in the view
     * @return the value
     * @throws IndexOutOfBoundsException when the 8 bytes do not lie inside the view
     * @throws ClosedException when the buffer is closed
     * @since 0.1
     */
    public long getLong(final int offset)
    {
        Errors.checkRange("HostMemoryView.getLong", offset, Long.BYTES, length);
        final Lock l = buffer.enter();
        try
        {
            return memory.getLong(offset);
        }
        finally
        {
            l.unlock();
        }
    }

    /**
     * Stores {@code value} at {@code offset}, in the platform's byte order.
     *
     * @param offset the offset of the first byte in the view
     * @param value the value to store
     * @throws IndexOutOfBoundsException when the 8 bytes do not lie inside the view
     * @throws ClosedException when the buffer is closed
     * @since 0.1
     */
    public void putLong(final int offset, final long value)
    {
        Errors.checkRange("HostMemoryView.putLong", offset, Long.BYTES, length);
        final Lock l = buffer.enter();
        try
        {
            memory.putLong(offset, value);
        }
        finally
        {
            l.unlock();
        }
    }

    /**
     * Copies bytes from {@code offset} into the remaining space of {@code dst} (from its position
     * to its limit) and advances its position.
     *
     * @param offset the offset in the view of the first byte to copy
     * @param dst where the bytes go
     * @throws IndexOutOfBoundsException when that many bytes do not lie at {@code offset}
     * @throws IllegalArgumentException when {@code dst} is null or read-only
     * @throws ClosedException when the buffer is closed
     * @since 0.1
     */
    public void get(final int offset, final ByteBuffer dst)
    {
        Errors.checkArgument(dst != null, "dst is null");
        Errors.checkArgument(!dst.isReadOnly(), "dst is read-only");
        Errors.checkRange("HostMemoryView.get", offset, dst.remaining(), length);
        final Lock l = buffer.enter();
        try
        {
            final ByteBuffer from = memory.duplicate();
            from.limit(offset + dst.remaining()).position(offset);
            dst.put(from);
        }
        finally
        {
            l.unlock();
        }
    }

    /**
     * Copies the remaining bytes of {@code src} (from its position to its limit) to
     * {@code offset} and advances its position.
     *
     * @param offset the offset in the view where the bytes go
     * @param src the bytes to copy
     * @throws IndexOutOfBoundsException when they do not fit at {@code offset}
     * @throws IllegalArgumentException when {@code src} is null
     * @throws ClosedException when the buffer is closed
     * @since 0.1
     */
    public void put(final int offset, final ByteBuffer src)
    {
        Errors.checkArgument(src != null, "src is null");
        Errors.checkRange("HostMemoryView.put", offset, src.remaining(), length);
        final Lock l = buffer.enter();
        try
        {
            final ByteBuffer to = memory.duplicate();
            to.limit(offset + src.remaining()).position(offset);
            to.put(src);
        }
        finally
        {
            l.unlock();
        }
    }

    /** A JavaCPP pointer at memory it does not own: no deallocator, so nothing is freed with it. */
    private static final class AddressPointer extends BytePointer
    {
        AddressPointer(final long address, final int bytes)
        {
            this.address = address;
            this.capacity = bytes;
            this.limit = bytes;
        }
    }

    @Override
    public String toString()
    {
        return "HostMemoryView[0x" + Long.toHexString(address) + " " + length + " B of " + buffer + "]";
    }
}
