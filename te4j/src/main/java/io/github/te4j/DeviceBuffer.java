package io.github.te4j;

import io.github.te4j.internal.NativeApi;
import java.util.concurrent.locks.Lock;
import org.bytedeco.javacpp.BytePointer;

/**
 * A buffer of platform memory: GPU memory on {@link Platform#CUDA}, a shared-memory segment on
 * {@link Platform#HOST}. Made by {@link P2pTransport#allocateBuffer(long)} or registered with
 * {@link P2pTransport#registerBuffer(long, long)}. Reads and writes from Java are blocking copies.
 */
public final class DeviceBuffer extends NativeResource
{
    private final P2pTransport owner;
    private final long address;
    private final long size;
    private final boolean registered;

    DeviceBuffer(final P2pTransport owner, final long address, final long size, final boolean registered)
    {
        super("DeviceBuffer@0x" + Long.toHexString(address));
        this.owner = owner;
        this.address = address;
        this.size = size;
        this.registered = registered;
    }

    /** Platform address of the first byte (a GPU virtual address on CUDA). */
    public long address()
    {
        return address;
    }

    /** Size in bytes. */
    public long size()
    {
        return size;
    }

    public Platform platform()
    {
        return owner.platform();
    }

    /** CUDA device ordinal (0 on the host platform). */
    public int device()
    {
        return owner.device();
    }

    /** Whether this buffer was allocated elsewhere and only registered with te4j. */
    public boolean isRegistered()
    {
        return registered;
    }

    P2pTransport owner()
    {
        return owner;
    }

    /** Copies {@code length} bytes of {@code src} from {@code srcOffset} into this buffer at {@code offset}. */
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

    /** Copies all of {@code src} into this buffer at {@code offset}. */
    public void write(final long offset, final byte[] src)
    {
        write(offset, src, 0, src == null ? 0 : src.length);
    }

    /** Copies {@code length} bytes at {@code offset} of this buffer into {@code dst} from {@code dstOffset}. */
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

    /** Returns {@code length} bytes at {@code offset}. */
    public byte[] read(final long offset, final int length)
    {
        Errors.checkArgument(length >= 0, "length=" + length + " is negative");
        // Before allocating: a length past the buffer must not cost a huge array (or an OutOfMemoryError).
        Errors.checkRange("DeviceBuffer.read", offset, length, size);
        final byte[] out = new byte[length];
        read(offset, out, 0, length);
        return out;
    }

    /** Sets {@code length} bytes at {@code offset} to {@code value}. */
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
        owner.freeBufferInternal(this);
    }

    @Override
    public String toString()
    {
        return "DeviceBuffer[" + platform() + ":" + device() + " 0x" + Long.toHexString(address) + " " + size + " B]";
    }
}
