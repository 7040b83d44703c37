package io.github.te4j;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Completes {@link TransferBatch#future()}s and {@link TransferPost#future()}s: one daemon thread, started on first use, looks at
 * the batches that have a future until each is done (or closed). It polls, because native
 * batches have no completion callback into Java: short pauses while batches are young, longer
 * ones while they run long, and none at all while no batch is watched.
 */
final class BatchWatcher
{
    private static final Set<TransferBatch> WATCHED = ConcurrentHashMap.newKeySet();
    private static final Set<TransferPost> POSTS = ConcurrentHashMap.newKeySet();
    private static final long MIN_PAUSE_NANOS = 20_000;
    private static final long MAX_PAUSE_NANOS = 1_000_000;
    private static Thread thread;

    private BatchWatcher()
    {
    }

    static synchronized void watch(final TransferBatch b)
    {
        WATCHED.add(b);
        start();
    }

    /** Completes {@link TransferPost#future()}s likewise. */
    static synchronized void watch(final TransferPost p)
    {
        POSTS.add(p);
        start();
    }

    private static void start()
    {
        if (thread == null)
        {
            thread = new Thread(BatchWatcher::run, "te4j-batch-watcher");
            thread.setDaemon(true);
            thread.start();
        }
        BatchWatcher.class.notifyAll();
    }

    /** Whether {@code b} is polled now (tests: a batch with nothing to wait for is not). */
    static boolean isWatched(final TransferBatch b)
    {
        return WATCHED.contains(b);
    }

    private static void run()
    {
        long pause = MIN_PAUSE_NANOS;
        for (;;)
        {
            synchronized (BatchWatcher.class)
            {
                while (WATCHED.isEmpty() && POSTS.isEmpty())
                {
                    try
                    {
                        BatchWatcher.class.wait();
                    }
                    catch (final InterruptedException e)
                    {
                        Thread.currentThread().interrupt();
                        return;
                    }
                    pause = MIN_PAUSE_NANOS;
                }
            }
            for (final TransferBatch b : WATCHED)
            {
                try
                {
                    if (!b.refresh() || b.isFutureDone())
                    {
                        WATCHED.remove(b);
                    }
                }
                catch (final RuntimeException e)
                {
                    b.failFuture(e);
                    WATCHED.remove(b);
                }
            }
            for (final TransferPost p : POSTS)
            {
                try
                {
                    if (!p.watch())
                    {
                        POSTS.remove(p);
                    }
                }
                catch (final RuntimeException e)
                {
                    p.failFuture(e);
                    POSTS.remove(p);
                }
            }
            TransferBatch.pause(pause);
            pause = Math.min(MAX_PAUSE_NANOS, pause * 2);
        }
    }
}
