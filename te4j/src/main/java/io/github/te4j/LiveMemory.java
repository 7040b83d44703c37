package io.github.te4j;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The process-wide view of te4j's memory: every live buffer of every engine, every window's
 * mappings of its peers' buffers, the te4j memory freed or unmapped lately, and every open
 * {@link RdmaTransport}. A NIC may hold a registration of any
 * memory of the process, including another engine's buffer registered by raw address, so a
 * buffer about to be freed is withdrawn from every transport of the process, not only from its
 * own engine's: otherwise the NIC's next remote write or atomic lands in freed memory (a JVM
 * crash on the host platform) or, once the address is reused, in unrelated memory.
 */
final class LiveMemory
{
    /**
     * How many freed te4j ranges are remembered to refuse their registration: a bound, so that a
     * long run does not grow this list; older frees are forgotten (their pages are usually
     * reused by then, and a registration over a reused te4j buffer is checked as live memory).
     */
    static final int FREED_REMEMBERED = 4096;

    private static final Set<RdmaTransport> TRANSPORTS = ConcurrentHashMap.newKeySet();
    private static final Object LOCK = new Object();
    // Guarded by LOCK.
    private static final List<DeviceBuffer> LIVE = new ArrayList<>();
    /** Peer mappings of open windows, [address, bytes] each, by window: unmapped when it closes. */
    private static final Map<CommContext, List<long[]>> MAPPINGS = new HashMap<>();
    private static final ArrayDeque<long[]> FREED = new ArrayDeque<>();

    private LiveMemory()
    {
    }

    static void transportOpened(final RdmaTransport t)
    {
        TRANSPORTS.add(t);
    }

    static void transportClosed(final RdmaTransport t)
    {
        TRANSPORTS.remove(t);
    }

    /** A te4j buffer now exists at its address (allocated by te4j or registered with it). */
    static void bufferCreated(final DeviceBuffer b)
    {
        synchronized (LOCK)
        {
            LIVE.add(b);
            // Its range is live again: a registration of it is tied to this buffer from now on.
            FREED.removeIf(r -> overlaps(r[0], r[1], b.address(), b.size()));
        }
    }

    /**
     * {@code b} is about to be freed: it is recorded as freed, then every open transport of the
     * process stops accessing it (waiting for remote accesses already past their key check).
     * Recording first closes the race with a registration of the same range running now: a
     * transport registers under its own monitor, which {@link RdmaTransport#forget} also takes.
     */
    static void bufferFreeing(final DeviceBuffer b)
    {
        synchronized (LOCK)
        {
            // Memory registered with te4j but allocated elsewhere stays its owner's after the close.
            if (LIVE.remove(b) && !b.isRegistered())
            {
                if (FREED.size() >= FREED_REMEMBERED)
                {
                    FREED.removeFirst();
                }
                FREED.addLast(new long[] {b.address(), b.size()});
            }
        }
        for (final RdmaTransport t : TRANSPORTS)
        {
            t.forget(b.address(), b.size());
        }
    }

    /** Whether {@code address} lies inside a live te4j buffer of this process. */
    static boolean insideLiveBuffer(final long address)
    {
        synchronized (LOCK)
        {
            for (final DeviceBuffer b : LIVE)
            {
                if (overlaps(address, 1, b.address(), b.size()))
                {
                    return true;
                }
            }
        }
        return false;
    }

    /** {@code window} maps peers' buffers at these ranges ([address, bytes] each) until it closes. */
    static void mappingsCreated(final CommContext window, final List<long[]> ranges)
    {
        if (ranges.isEmpty())
        {
            return;
        }
        synchronized (LOCK)
        {
            MAPPINGS.put(window, ranges);
            for (final long[] m : ranges)
            {
                FREED.removeIf(r -> overlaps(r[0], r[1], m[0], m[1]));
            }
        }
    }

    /** {@code window} is about to unmap its peer mappings: as {@link #bufferFreeing} for each. */
    static void mappingsFreeing(final CommContext window)
    {
        final List<long[]> ranges;
        synchronized (LOCK)
        {
            ranges = MAPPINGS.remove(window);
            if (ranges == null)
            {
                return;
            }
            for (final long[] m : ranges)
            {
                if (FREED.size() >= FREED_REMEMBERED)
                {
                    FREED.removeFirst();
                }
                FREED.addLast(m.clone());
            }
        }
        for (final long[] m : ranges)
        {
            for (final RdmaTransport t : TRANSPORTS)
            {
                t.forget(m[0], m[1]);
            }
        }
    }

    /**
     * Checks a raw registration of [address, address + bytes): memory that shares a byte with a
     * live te4j buffer must lie inside it (its free then withdraws the registration); memory of a
     * te4j buffer freed lately and not reused by a live one is refused.
     */
    static void checkRegistration(final long address, final long bytes)
    {
        synchronized (LOCK)
        {
            for (final DeviceBuffer b : LIVE)
            {
                if (overlaps(address, bytes, b.address(), b.size()))
                {
                    Errors.checkArgument(Long.compareUnsigned(address, b.address()) >= 0
                        && Long.compareUnsigned(address + bytes, b.address() + b.size()) <= 0,
                        "[0x" + Long.toHexString(address) + ", +" + bytes + ") reaches outside " + b
                            + " (fix: register a range inside one te4j buffer)");
                    return;
                }
            }
            for (final Map.Entry<CommContext, List<long[]>> e : MAPPINGS.entrySet())
            {
                for (final long[] m : e.getValue())
                {
                    if (overlaps(address, bytes, m[0], m[1]))
                    {
                        Errors.checkArgument(Long.compareUnsigned(address, m[0]) >= 0
                            && Long.compareUnsigned(address + bytes, m[0] + m[1]) <= 0,
                            "[0x" + Long.toHexString(address) + ", +" + bytes + ") reaches outside the peer mapping [0x"
                                + Long.toHexString(m[0]) + ", +" + m[1] + ") of " + e.getKey());
                        return;
                    }
                }
            }
            for (final Iterator<long[]> it = FREED.descendingIterator(); it.hasNext();)
            {
                final long[] r = it.next();
                if (overlaps(address, bytes, r[0], r[1]))
                {
                    throw new IllegalArgumentException("[0x" + Long.toHexString(address) + ", +" + bytes
                        + ") is memory of a te4j buffer already freed ([0x" + Long.toHexString(r[0]) + ", +" + r[1]
                        + ")): the NIC would write into freed memory (fix: register a live buffer)");
                }
            }
        }
    }

    private static boolean overlaps(final long a, final long an, final long b, final long bn)
    {
        return Long.compareUnsigned(a, b + bn) < 0 && Long.compareUnsigned(b, a + an) < 0;
    }
}
