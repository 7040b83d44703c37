package io.github.te4j;

import java.nio.ByteBuffer;
import org.bytedeco.javacpp.BytePointer;

/**
 * A direct {@link ByteBuffer} over host memory this process maps (a host-platform buffer, or a
 * peer's mapping): what lets Java code read and write such memory with the atomic and ordered
 * accesses of a {@code VarHandle}. The caller keeps the mapping alive while the view is used.
 */
final class MappedMemory
{
    private MappedMemory()
    {
    }

    /** A view of [address, address + bytes); bytes at most 2 GiB - 1. */
    static ByteBuffer view(final long address, final long bytes)
    {
        Errors.checkArgument(address != 0, "address is null");
        Errors.checkArgument(bytes > 0 && bytes <= Integer.MAX_VALUE, "bytes=" + bytes + " must be in [1, 2^31)");
        final BytePointer p = new At(address);
        p.capacity(bytes).limit(bytes);
        return p.asByteBuffer();
    }

    /** A pointer at an address (JavaCPP sets addresses through subclasses only); owns nothing. */
    private static final class At extends BytePointer
    {
        At(final long at)
        {
            address = at;
        }
    }
}
