package io.github.te4j;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

/**
 * The process-wide view of te4j's memory, the one registry every registration path checks
 * against: every live buffer of every engine, every window's mappings of its peers' buffers,
 * every opened segment's mappings, the te4j memory freed or unmapped lately, every
 * {@link TransferAgent} registration and every open {@link RdmaTransport}.
 *
 * <p>A registration of a raw range is tied to the te4j memory it lies in: a range inside a live
 * buffer lives as long as that buffer (its free first withdraws it from every agent and NIC,
 * and waits for the batches that use it), a range reaching outside a buffer or into memory te4j
 * freed lately is refused. Memory te4j never allocated is the caller's: te4j cannot tell when
 * another library frees it. A NIC may hold a registration of any
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
    /** Opened segments' mappings of other processes' buffers, [address, bytes] each, until unmapped. */
    private static final Map<SegmentHandle, List<long[]>> SEGMENT_MAPS = new HashMap<>();
    /** Every agent's registered memory, te4j buffers and raw ranges alike. */
    private static final List<RegisteredMemory> REGISTRATIONS = new ArrayList<>();

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
     * {@code b} is about to be freed: it is recorded as freed, every agent registration that lies
     * in it is withdrawn, then every open transport of the process stops accessing it (waiting
     * for remote accesses already past their key check). Recording first closes the race with a
     * registration of the same range running now: an agent registers under this class's lock,
     * and a transport under its own monitor, which {@link RdmaTransport#forget} also takes. The
     * batches that use the buffer were drained before ({@link InFlightWork#drainUsersOf}): a
     * registration inside it counts as a use of the buffer.
     */
    static void bufferFreeing(final DeviceBuffer b)
    {
        final List<RegisteredMemory> withdrawn = new ArrayList<>();
        synchronized (LOCK)
        {
            // Memory registered with te4j but allocated elsewhere stays its owner's after the close.
            if (LIVE.remove(b) && !b.isRegistered())
            {
                remember(b.address(), b.size());
            }
            for (final Iterator<RegisteredMemory> it = REGISTRATIONS.iterator(); it.hasNext();)
            {
                final RegisteredMemory m = it.next();
                if (m.liveBuffer() == b)
                {
                    withdrawn.add(m);
                    it.remove();
                }
            }
        }
        for (final RegisteredMemory m : withdrawn)
        {
            m.agent().withdraw(m);
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
                remember(m[0], m[1]);
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
     * Checks a raw NIC registration of [address, address + bytes): memory that shares a byte
     * with a live te4j buffer must lie inside it (its free then withdraws the registration), as
     * must memory that shares a byte with a window's peer mapping; memory of an opened segment's
     * mapping (unmapped when its last batch is done, which no NIC is told of) and memory of a te4j
     * buffer or mapping freed lately and not reused are refused.
     */
    static void checkRegistration(final long address, final long bytes)
    {
        synchronized (LOCK)
        {
            check(address, bytes, true);
        }
    }

    /** The checks {@link #registerLocal} makes of a raw range, without recording anything. */
    static void checkLocalRegistration(final long address, final long bytes)
    {
        synchronized (LOCK)
        {
            check(address, bytes, false);
        }
    }

    /**
     * Registers an agent's memory in this registry. A te4j buffer must still be live. A raw range
     * is checked as {@link #checkRegistration} does, except that no mapping of another process's
     * memory is local memory; {@code make} builds the registration, given the live buffer the range
     * lies in (or null: memory te4j does not know), under the same lock as a free's withdrawal,
     * so that no free slips between the check and the record.
     */
    static RegisteredMemory registerLocal(final DeviceBuffer buffer, final long address, final long bytes,
        final Function<DeviceBuffer, RegisteredMemory> make)
    {
        synchronized (LOCK)
        {
            final DeviceBuffer within;
            if (buffer != null)
            {
                if (!LIVE.contains(buffer))
                {
                    throw new ClosedException(buffer.toString());
                }
                within = buffer;
            }
            else
            {
                within = check(address, bytes, false);
                if (within != null && within.isClosed())
                {
                    throw new IllegalArgumentException("[0x" + Long.toHexString(address) + ", +" + bytes
                        + ") lies inside " + within + ", which is being closed (fix: register live memory)");
                }
            }
            final RegisteredMemory m = make.apply(within);
            REGISTRATIONS.add(m);
            return m;
        }
    }

    /** {@code m} is no longer registered with its agent. */
    static void unregisteredLocal(final RegisteredMemory m)
    {
        synchronized (LOCK)
        {
            REGISTRATIONS.remove(m);
        }
    }

    /** An opened segment maps other processes' buffers at {@code ranges} ([address, bytes] each) until unmapped. */
    static void segmentMapped(final SegmentHandle segment, final List<long[]> ranges)
    {
        if (ranges.isEmpty())
        {
            return;
        }
        synchronized (LOCK)
        {
            SEGMENT_MAPS.put(segment, ranges);
            for (final long[] m : ranges)
            {
                FREED.removeIf(r -> overlaps(r[0], r[1], m[0], m[1]));
            }
        }
    }

    /** An opened segment is about to unmap its buffers: a later registration of them is refused. */
    static void segmentUnmapping(final SegmentHandle segment)
    {
        synchronized (LOCK)
        {
            final List<long[]> ranges = SEGMENT_MAPS.remove(segment);
            if (ranges != null)
            {
                ranges.forEach(m -> remember(m[0], m[1]));
            }
        }
    }

    /**
     * The checks of a raw registration, under LOCK: the live buffer it lies in, or null for
     * memory te4j does not know; throws for a range that reaches outside te4j memory it shares a
     * byte with, for a mapping of another process's memory unless {@code windowMappings} allows
     * a window's, and for memory te4j freed lately.
     */
    private static DeviceBuffer check(final long address, final long bytes, final boolean windowMappings)
    {
        final String range = "[0x" + Long.toHexString(address) + ", +" + bytes + ")";
        for (final DeviceBuffer b : LIVE)
        {
            if (overlaps(address, bytes, b.address(), b.size()))
            {
                Errors.checkArgument(Long.compareUnsigned(address, b.address()) >= 0
                    && Long.compareUnsigned(address + bytes, b.address() + b.size()) <= 0,
                    range + " reaches outside " + b + " (fix: register a range inside one te4j buffer)");
                return b;
            }
        }
        for (final Map.Entry<CommContext, List<long[]>> e : MAPPINGS.entrySet())
        {
            for (final long[] m : e.getValue())
            {
                if (overlaps(address, bytes, m[0], m[1]))
                {
                    Errors.checkArgument(windowMappings, range + " lies in " + e.getKey() + "'s mapping of a peer's"
                        + " buffer, which is not local memory (fix: reach the peer through its segment)");
                    Errors.checkArgument(Long.compareUnsigned(address, m[0]) >= 0
                        && Long.compareUnsigned(address + bytes, m[0] + m[1]) <= 0,
                        range + " reaches outside the peer mapping [0x"
                            + Long.toHexString(m[0]) + ", +" + m[1] + ") of " + e.getKey());
                    return null;
                }
            }
        }
        for (final Map.Entry<SegmentHandle, List<long[]>> e : SEGMENT_MAPS.entrySet())
        {
            for (final long[] m : e.getValue())
            {
                Errors.checkArgument(!overlaps(address, bytes, m[0], m[1]), range + " lies in the mapping of "
                    + e.getKey().name() + ", another process's memory that is unmapped when the segment is"
                    + " closed (fix: address it through the SegmentHandle, or register it in its owner's process)");
            }
        }
        Boolean reallocated = null;
        for (final Iterator<long[]> it = FREED.descendingIterator(); it.hasNext();)
        {
            final long[] r = it.next();
            if (overlaps(address, bytes, r[0], r[1]))
            {
                if (reallocated == null)
                {
                    reallocated = allocatedByCudaNow(address, bytes);
                }
                if (reallocated)
                {
                    // Another allocator (cudaMalloc, cudaMallocHost, managed memory: a framework's
                    // pool) now owns these addresses, as CUDA hands freed virtual addresses out
                    // again at once: the memory is live, te4j's free is history.
                    it.remove();
                    continue;
                }
                throw new IllegalArgumentException(range + " is memory of a te4j buffer or mapping already freed"
                    + " ([0x" + Long.toHexString(r[0]) + ", +" + r[1] + ")): a transfer would write into freed"
                    + " memory (fix: register live memory)");
            }
        }
        return null;
    }

    /**
     * Whether the CUDA driver says a live allocation holds [address, address + bytes) now. A
     * stale address of freed te4j memory is unknown to it (pageable to the query) until another
     * allocation reuses it; a query that fails keeps the range refused.
     */
    private static boolean allocatedByCudaNow(final long address, final long bytes)
    {
        try
        {
            return MemoryKind.of(address, bytes) != MemoryKind.PAGEABLE_HOST;
        }
        catch (final RuntimeException e)
        {
            return false;
        }
    }

    /** Records a freed range, forgetting the oldest beyond {@link #FREED_REMEMBERED}. Under LOCK. */
    private static void remember(final long address, final long bytes)
    {
        if (FREED.size() >= FREED_REMEMBERED)
        {
            FREED.removeFirst();
        }
        FREED.addLast(new long[] {address, bytes});
    }

    private static boolean overlaps(final long a, final long an, final long b, final long bn)
    {
        return Long.compareUnsigned(a, b + bn) < 0 && Long.compareUnsigned(b, a + an) < 0;
    }
}
