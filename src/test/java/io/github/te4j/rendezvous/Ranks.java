package io.github.te4j.rendezvous;

import io.github.te4j.exchange.HandleExchange;
import static org.testng.Assert.assertEquals;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntFunction;

/** Runs the ranks of one exchange as threads of this JVM. */
final class Ranks
{

    static final Duration LONG = Duration.ofSeconds(30);

    /** What one rank does with its exchange. */
    interface Body
    {
        void run(HandleExchange x) throws Exception;
    }

    private Ranks()
    {
    }

    /**
     * Opens rank r with {@code open.apply(r)} in its own thread, runs {@code body}, closes it.
     *
     * @return per rank: null when it succeeded, else what it threw
     */
    static List<Throwable> runCollect(final int n, final IntFunction<? extends HandleExchange> open, final Body body)
            throws InterruptedException
    {
        AtomicInteger ids = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(n, r ->
        {
            Thread t = new Thread(r, "test-rank-" + ids.getAndIncrement());
            t.setDaemon(true);
            return t;
        });
        try
        {
            List<Future<?>> futures = new ArrayList<>();
            for (int r = 0; r < n; r++)
            {
                int rank = r;
                futures.add(pool.submit(() ->
                {
                    try (HandleExchange x = open.apply(rank))
                    {
                        body.run(x);
                    }
                    return null;
                }));
            }
            Throwable[] out = new Throwable[n];
            for (int r = 0; r < n; r++)
            {
                try
                {
                    futures.get(r).get(120, TimeUnit.SECONDS);
                }
                catch (ExecutionException e)
                {
                    out[r] = e.getCause();
                }
                catch (java.util.concurrent.TimeoutException e)
                {
                    out[r] = e;
                }
            }
            return Arrays.asList(out);
        }
        finally
        {
            pool.shutdownNow();
            pool.awaitTermination(30, TimeUnit.SECONDS);
        }
    }

    /** {@link #runCollect} that fails with the first rank's failure. */
    static void runAll(final int n, final IntFunction<? extends HandleExchange> open, final Body body) throws Exception
    {
        List<Throwable> failures = runCollect(n, open, body);
        for (int r = 0; r < n; r++)
        {
            Throwable t = failures.get(r);
            if (t != null)
            {
                AssertionError e = new AssertionError("rank " + r + " failed: " + t, t);
                for (int q = r + 1; q < n; q++)
                {
                    if (failures.get(q) != null)
                    {
                        e.addSuppressed(failures.get(q));
                    }
                }
                throw e;
            }
        }
    }

    /** Distinct blob per rank and round; rank 0 round 0 is empty, so empty blobs are covered. */
    static byte[] blob(final int rank, final int round)
    {
        byte[] b = new byte[rank * 7 + round * 3];
        for (int i = 0; i < b.length; i++)
        {
            b[i] = (byte) (rank * 31 + round * 17 + i);
        }
        return b;
    }

    /** Three rounds of allGather + barrier, then a broadcast from the last rank. */
    static void exercise(final HandleExchange x)
    {
        int n = x.worldSize();
        for (int round = 0; round < 3; round++)
        {
            List<byte[]> all = x.allGather(blob(x.rank(), round), LONG);
            assertEquals(all.size(), n);
            for (int r = 0; r < n; r++)
            {
                assertEquals(all.get(r), blob(r, round), "blob of rank " + r + " in round " + round);
            }
            x.barrier(LONG);
        }
        byte[] msg = ("from rank " + (n - 1)).getBytes(StandardCharsets.UTF_8);
        assertEquals(x.broadcast(n - 1, x.rank() == n - 1 ? msg : null, LONG), msg);
    }
}
