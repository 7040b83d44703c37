package io.github.te4j;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One fuzz batch, run in its own JVM by {@link ApiFuzzTest}: calls {@code [from, to)} of seed
 * {@code seed}. Call i is fully determined by (seed, i) and runs against a fixture that is rebuilt
 * whenever a call closed part of it, so a single call can be replayed alone in a fresh JVM.
 *
 * <p>Usage: {@code ApiFuzzer SEED FROM TO PROGRESS_FILE}. Before each call its index is written to
 * PROGRESS_FILE (which call was running if the JVM dies). Prints one summary line
 * {@code FUZZ calls=... refused=... violations=... rdma=...} (rdma: calls on the RDMA objects);
 * exits 0, or 3 when a call broke the contract. {@code -Dte4j.fuzz.slowMillis=N} prints calls
 * and fixture rebuilds that took N ms or more.
 */
public final class ApiFuzzer
{
    /** One call in this many is a storm of threads sharing the fixture, closes included. */
    static final int STORM_EVERY = 100;
    /** Calls slower than this are printed (FUZZ-SLOW), to keep the run's time in check; 0: off. */
    private static final long SLOW_MILLIS = Long.getLong("te4j.fuzz.slowMillis", 0);

    private final long seed;
    private final List<Object> graveyard = new ArrayList<>();
    private final List<NativeResource> rdmaGraveyard = new ArrayList<>();
    private final AtomicInteger calls = new AtomicInteger();
    private final AtomicInteger refused = new AtomicInteger();
    private final AtomicInteger rdmaCalls = new AtomicInteger();
    private final List<String> violations = new ArrayList<>();
    private final TreeMap<String, Integer> refusals = new TreeMap<>();
    private FuzzFixture fixture;
    private FuzzRdma rdma;

    ApiFuzzer(final long seed)
    {
        this.seed = seed;
    }

    public static void main(final String[] args) throws Exception
    {
        final long seed = Long.parseLong(args[0]);
        final int from = Integer.parseInt(args[1]);
        final int to = Integer.parseInt(args[2]);
        final Path progress = Path.of(args[3]);
        final ApiFuzzer fuzzer = new ApiFuzzer(seed);
        for (int i = from; i < to; i++)
        {
            Files.writeString(progress, i + "\n", StandardCharsets.US_ASCII, StandardOpenOption.CREATE,
                StandardOpenOption.TRUNCATE_EXISTING, StandardOpenOption.WRITE);
            fuzzer.call(i);
        }
        fuzzer.finish();
        System.out.println("FUZZ calls=" + fuzzer.calls.get() + " refused=" + fuzzer.refused.get() + " violations="
            + fuzzer.violations.size() + " rdma=" + fuzzer.rdmaCalls.get() + " refusedBy=" + fuzzer.refusals);
        fuzzer.violations.forEach(s -> System.out.println("FUZZ-VIOLATION " + s));
        System.out.flush();
        System.exit(fuzzer.violations.isEmpty() ? 0 : 3);
    }

    /** Runs call {@code i}: rebuilds a broken fixture first, then one call or one storm. */
    void call(final int i) throws InterruptedException
    {
        final long built = System.nanoTime();
        final long[] sizes = {64, 4096, 12345, 65536, 1 << 20};
        if (rdma == null || rdma.broken())
        {
            if (rdma != null)
            {
                rdma.close();
            }
            rdma = new FuzzRdma(sizes[new Random(~seed ^ i).nextInt(sizes.length)], rdmaGraveyard);
        }
        if (fixture == null || fixture.broken())
        {
            if (fixture != null)
            {
                fixture.close();
            }
            fixture = new FuzzFixture(sizes[new Random(seed ^ i).nextInt(sizes.length)], graveyard);
            final long ms = (System.nanoTime() - built) / 1_000_000;
            if (SLOW_MILLIS > 0 && ms >= SLOW_MILLIS)
            {
                System.out.println("FUZZ-SLOW call " + i + ": " + ms + " ms fixture rebuilt");
            }
        }
        fixture.rdma = rdma;
        final Random rnd = new Random(seed * 1_000_003L + i);
        final long start = System.nanoTime();
        final FuzzVerdict v = new FuzzVerdict();
        if (i % STORM_EVERY == STORM_EVERY - 1)
        {
            storm(i, rnd);
            v.what = "storm";
        }
        else
        {
            one(i, new FuzzCalls(fixture, rnd, false), false, v);
        }
        final long ms = (System.nanoTime() - start) / 1_000_000;
        if (SLOW_MILLIS > 0 && ms >= SLOW_MILLIS)
        {
            System.out.println("FUZZ-SLOW call " + i + ": " + ms + " ms " + v.what);
        }
    }

    private void one(final int i, final FuzzCalls c, final boolean racing, final FuzzVerdict v)
    {
        Throwable thrown = null;
        try
        {
            if (racing)
            {
                c.racy(v);
            }
            else
            {
                c.any(v);
            }
        }
        catch (final Throwable t)
        {
            thrown = t;
        }
        calls.incrementAndGet();
        if (v.rdma)
        {
            rdmaCalls.incrementAndGet();
        }
        final String bad = v.judge(thrown);
        synchronized (this)
        {
            if (bad != null)
            {
                violations.add("call " + i + (racing ? " (storm)" : "") + ": " + bad + stack(thrown));
            }
            else if (thrown != null)
            {
                refused.incrementAndGet();
                refusals.merge(thrown.getClass().getSimpleName(), 1, Integer::sum);
            }
        }
    }

    /** 2..8 threads making racing calls on the same objects, closes included. */
    private void storm(final int i, final Random rnd) throws InterruptedException
    {
        final int threads = 2 + rnd.nextInt(7);
        final int each = 10 + rnd.nextInt(30);
        final CountDownLatch go = new CountDownLatch(1);
        final List<Thread> ts = new ArrayList<>();
        for (int t = 0; t < threads; t++)
        {
            final FuzzCalls c = new FuzzCalls(fixture, new Random(rnd.nextLong()), true);
            final Thread th = new Thread(() ->
            {
                try
                {
                    go.await();
                }
                catch (final InterruptedException e)
                {
                    return;
                }
                for (int k = 0; k < each; k++)
                {
                    one(i, c, true, new FuzzVerdict());
                }
            }, "fuzz-storm-" + t);
            ts.add(th);
            th.start();
        }
        go.countDown();
        // One deadline for the whole storm: threads stuck together are reported (with their
        // stacks) well inside the fork's 10 minutes, not after 2 minutes each.
        final long end = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
        for (final Thread th : ts)
        {
            th.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(end - System.nanoTime())));
            if (th.isAlive())
            {
                synchronized (this)
                {
                    violations.add("call " + i + ": storm thread " + th.getName() + " hung:" + stackOf(th));
                }
            }
        }
        FuzzCalls.drain(fixture.streams[0]);
        FuzzCalls.drain(fixture.streams[1]);
        FuzzCalls.drain(rdma.streams[0]);
        FuzzCalls.drain(rdma.streams[1]);
    }

    private void finish()
    {
        if (fixture != null)
        {
            fixture.close();
        }
        if (rdma != null)
        {
            rdma.close();
        }
    }

    private static String stack(final Throwable t)
    {
        if (t == null)
        {
            return "";
        }
        final StringBuilder sb = new StringBuilder();
        for (final StackTraceElement e : t.getStackTrace())
        {
            sb.append("\n    at ").append(e);
            if (sb.length() > 1500)
            {
                break;
            }
        }
        return sb.toString();
    }

    private static String stackOf(final Thread th)
    {
        final StringBuilder sb = new StringBuilder();
        for (final StackTraceElement e : th.getStackTrace())
        {
            sb.append("\n    at ").append(e);
        }
        return sb.toString();
    }
}
