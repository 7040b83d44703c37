package io.github.te4j;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Which open streams may still run operations that touch a buffer or window. Operations are
 * asynchronous: an enqueued put or wait holds raw addresses of the window, its peer mappings
 * and the source buffer. Before any of those is freed, every stream that used it is drained, so
 * freeing can never pull memory from under a running operation (a crash on the host platform,
 * a fault on CUDA). When a stream cannot be drained in time, the caller keeps the native memory
 * (a bounded leak, logged) rather than free it under the stream.
 */
final class InFlightWork
{
    /** How long a free waits for streams still using the memory (as long as a stream's close). */
    static final long DRAIN_NANOS = 10_000_000_000L;

    private static final Logger LOG = LoggerFactory.getLogger(InFlightWork.class);
    private static final Set<OpStream> OPEN = ConcurrentHashMap.newKeySet();
    private static final Set<TransferBatch> BATCHES = ConcurrentHashMap.newKeySet();
    private static final Set<TransferList> LISTS = ConcurrentHashMap.newKeySet();

    private InFlightWork()
    {
    }

    static void opened(final OpStream s)
    {
        OPEN.add(s);
    }

    static void closed(final OpStream s)
    {
        OPEN.remove(s);
    }

    static void batchStarted(final TransferBatch b)
    {
        BATCHES.add(b);
    }

    static void batchFinished(final TransferBatch b)
    {
        BATCHES.remove(b);
    }

    static void listPosted(final TransferList l)
    {
        LISTS.add(l);
    }

    static void listEnded(final TransferList l)
    {
        LISTS.remove(l);
    }

    /**
     * Cancels and waits (bounded) for the batches and list posts whose running requests use
     * {@code m}; true when none runs.
     */
    static boolean drainBatchesUsing(final Object m)
    {
        final long deadline = System.nanoTime() + NativeResource.closeBudget(DRAIN_NANOS);
        boolean idle = true;
        for (final TransferBatch b : BATCHES)
        {
            if (b.touches(m))
            {
                idle &= b.drainFor(deadline - System.nanoTime());
            }
        }
        for (final TransferList l : LISTS)
        {
            if (l.touches(m))
            {
                idle &= l.drainFor(deadline - System.nanoTime());
            }
        }
        if (!idle)
        {
            LOG.warn("{} is still used by a transfer batch that did not finish in time", m);
        }
        return idle;
    }

    /** Drains every open stream that used {@code r}, which is freed next; true when none of them still runs work. */
    static boolean drainUsersOf(final NativeResource r)
    {
        return drain(r, true);
    }

    /**
     * Like {@link #drainUsersOf} for a resource that stays alive (its RDMA tables are recreated
     * or detached): the streams keep tracking it, so their waits still check its peers.
     */
    static boolean awaitUsersOf(final NativeResource r)
    {
        return drain(r, false);
    }

    private static boolean drain(final NativeResource r, final boolean forget)
    {
        // One deadline for all the streams: they run independently, so waiting for each in turn
        // with what is left of it is as long as waiting for all of them at once.
        final long deadline = System.nanoTime() + NativeResource.closeBudget(DRAIN_NANOS);
        boolean idle = true;
        for (final OpStream s : OPEN)
        {
            if (s.touches(r))
            {
                idle &= s.drainFor(r, deadline - System.nanoTime());
                if (forget)
                {
                    s.forget(r);
                }
            }
        }
        if (forget)
        {
            idle &= drainBatchesUsing(r);
        }
        if (!idle && forget)
        {
            LOG.warn("{} is still used by a stream that did not drain in time: its native memory is kept, not freed",
                r.name());
        }
        return idle;
    }
}
