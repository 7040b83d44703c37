package io.github.te4j;

/**
 * {@link DeviceBuffer#asMemorySegment()} where the JDK lacks the foreign memory API (Java 17 to
 * 21), or the te4j jar was built by a JDK without it: a multi-release jar built by JDK 22 or
 * later carries the real class in {@code META-INF/versions/22}, and Java 22 or later loads that
 * one instead of this.
 */
final class MemorySegmentView
{
    private MemorySegmentView()
    {
    }

    /** Always throws: there is no MemorySegment here. */
    static Object of(final DeviceBuffer buffer, final long address, final long bytes)
    {
        throw new UnsupportedOperationException("DeviceBuffer.asMemorySegment needs Java 22 or later (this JVM is "
            + Runtime.version().feature() + ") and a te4j jar built by JDK 22 or later (fix: run on Java 22+ with"
            + " such a jar, or use hostView() / read(offset, ByteBuffer) / write(offset, ByteBuffer))");
    }
}
