package io.github.te4j;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * {@link DeviceBuffer#asMemorySegment()} on Java 22 or later (the multi-release jar's
 * {@code META-INF/versions/22}): a segment over the buffer's memory in a shared arena of its
 * own, which the buffer's close closes before the memory is freed. Closing a shared arena
 * invalidates its segments for every thread at once, so any access after the close throws
 * {@link IllegalStateException} instead of touching freed memory.
 *
 * <p>{@code MemorySegment.reinterpret} is a restricted method: the JVM warns once unless native
 * access is enabled for te4j ({@code --enable-native-access=io.github.te4j} on the module path,
 * {@code ALL-UNNAMED} on the class path).
 */
final class MemorySegmentView
{
    /** How long a close retries an arena that a concurrent native call still holds. */
    private static final long CLOSE_NANOS = TimeUnit.SECONDS.toNanos(1);

    private MemorySegmentView()
    {
    }

    /** A segment over [address, address + bytes) of {@code buffer}; the caller has entered the buffer. */
    static Object of(final DeviceBuffer buffer, final long address, final long bytes)
    {
        final Arena arena = Arena.ofShared();
        final MemorySegment segment = MemorySegment.ofAddress(address).reinterpret(bytes, arena, null);
        buffer.onRelease(() -> close(arena));
        return segment;
    }

    /**
     * Closes {@code arena}; false when it stayed in use (a downcall holding one of its segments)
     * for {@link #CLOSE_NANOS}: the buffer's memory must then be kept, not freed.
     */
    private static boolean close(final Arena arena)
    {
        final long end = System.nanoTime() + CLOSE_NANOS;
        while (true)
        {
            try
            {
                arena.close();
                return true;
            }
            catch (final IllegalStateException e)
            {
                if (!arena.scope().isAlive())
                {
                    return true;
                }
                if (System.nanoTime() - end > 0)
                {
                    return false;
                }
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
            }
        }
    }
}
