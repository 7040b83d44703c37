package io.github.te4j.bench;

import io.github.te4j.TransferAgent;
import io.github.te4j.TransferDescriptors;
import io.github.te4j.TransferList;
import io.github.te4j.TransferPost;
import io.github.te4j.TransferRequest;
import io.github.te4j.TransferState;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * The transfer-list rows of {@code --mode batch} ({@link BatchBench}) and the list mode of
 * {@link BatchSubmitCost}: the same blocks as the batch rows, prepared once as a
 * {@link TransferList}. "first post" times what a caller pays the first time (fill
 * {@link TransferDescriptors}, prepare, post, await: a new list each run); "repost" times a post
 * of a list prepared before the timing until it is seen done, the serving-loop case. Both after
 * a warm-up (first posts: the batch rows' count, BatchBench.warmUpRuns; reposts: up to 20,000
 * posts or 2 s), every post checked COMPLETED.
 */
final class ListBench
{
    private static final Duration TIMEOUT = Duration.ofSeconds(60);
    /** Reposts before the timed ones, at most: past C2's compile thresholds for the post path. */
    private static final int WARM_UP_POSTS = 20_000;
    /** The reposts' warm-up ends earlier once it has run this long and at least the batch rows' count. */
    private static final long WARM_UP_NANOS = 2_000_000_000L;

    private ListBench()
    {
    }

    private static TransferDescriptors descriptors(final List<TransferRequest> rs)
    {
        final TransferDescriptors d = new TransferDescriptors(rs.size());
        for (final TransferRequest r : rs)
        {
            d.add(r.opcode(), r.local(), r.localOffset(), r.segment(), r.remoteOffset(), r.length());
        }
        return d;
    }

    private static void checkCompleted(final TransferPost p, final boolean done, final TransferState[] states)
    {
        p.states(states);
        for (int i = 0; i < p.size(); i++)
        {
            if (!done || states[i] != TransferState.COMPLETED)
            {
                throw new IllegalStateException("list request " + i + ": " + p.status(i));
            }
        }
    }

    /** Median ns of {first post, repost} of the requests {@code rs}. */
    static double[] medians(final TransferAgent agent, final List<TransferRequest> rs, final int iterations)
    {
        final int n = rs.size();
        final TransferDescriptors d = new TransferDescriptors(n);
        final TransferState[] states = new TransferState[n];
        final double[] first = new double[iterations];
        for (int it = -BatchBench.warmUpRuns(n); it < iterations; it++)
        {
            final long t0 = System.nanoTime();
            d.clear();
            for (int i = 0; i < n; i++)
            {
                final TransferRequest r = rs.get(i);
                d.add(r.opcode(), r.local(), r.localOffset(), r.segment(), r.remoteOffset(), r.length());
            }
            try (TransferList list = agent.prepareList(d))
            {
                final TransferPost p = list.post(TIMEOUT);
                final boolean done = p.awaitDone(TIMEOUT);
                final long t1 = System.nanoTime();
                checkCompleted(p, done, states);
                if (it >= 0)
                {
                    first[it] = t1 - t0;
                }
            }
        }
        final double[] again = new double[iterations];
        try (TransferList list = agent.prepareList(descriptors(rs)))
        {
            // A post costs the same for every request count, so the warm-up counts posts: enough for
            // C2 to compile the post and wait path (thousands of calls), bounded in time where posts
            // are long (the host platform's memcpy of large shapes).
            final long warmEnd = System.nanoTime() + WARM_UP_NANOS;
            for (int w = 0; w < WARM_UP_POSTS && (w < BatchBench.warmUpRuns(n) || System.nanoTime() < warmEnd); w++)
            {
                final TransferPost p = list.post(TIMEOUT);
                checkCompleted(p, p.awaitDone(TIMEOUT), states);
            }
            for (int it = 0; it < iterations; it++)
            {
                final long t0 = System.nanoTime();
                final TransferPost p = list.post(TIMEOUT);
                final boolean done = p.awaitDone(TIMEOUT);
                final long t1 = System.nanoTime();
                checkCompleted(p, done, states);
                again[it] = t1 - t0;
            }
        }
        Arrays.sort(first);
        Arrays.sort(again);
        return new double[] {first[iterations / 2], again[iterations / 2]};
    }

    /**
     * BatchSubmitCost's list mode: the host side of a list, split where the time goes: prepare
     * (wall and the calling thread's CPU, per request), the first post call, its wait, and a
     * repost's post call and wait. Medians of {@code iterations} after the warm-up.
     */
    static String submitCost(final TransferAgent agent, final List<TransferRequest> rs, final int iterations)
    {
        final ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        final int n = rs.size();
        final TransferDescriptors d = descriptors(rs);
        final TransferState[] states = new TransferState[n];
        final long[] prepWall = new long[iterations];
        final long[] prepCpu = new long[iterations];
        final long[] postCpu = new long[iterations];
        final long[] firstWait = new long[iterations];
        final long[] repost = new long[iterations];
        final long[] repostWait = new long[iterations];
        for (int it = -BatchBench.warmUpRuns(n); it < iterations; it++)
        {
            final long c0 = mx.getCurrentThreadCpuTime();
            final long t0 = System.nanoTime();
            try (TransferList list = agent.prepareList(d))
            {
                final long t1 = System.nanoTime();
                final long c1 = mx.getCurrentThreadCpuTime();
                TransferPost p = list.post(TIMEOUT);
                final long c2 = mx.getCurrentThreadCpuTime();
                final long t2 = System.nanoTime();
                boolean done = p.awaitDone(TIMEOUT);
                final long t3 = System.nanoTime();
                checkCompleted(p, done, states);
                final long t4 = System.nanoTime();
                p = list.post(TIMEOUT);
                final long t5 = System.nanoTime();
                done = p.awaitDone(TIMEOUT);
                final long t6 = System.nanoTime();
                checkCompleted(p, done, states);
                if (it >= 0)
                {
                    prepWall[it] = t1 - t0;
                    prepCpu[it] = c1 - c0;
                    postCpu[it] = c2 - c1;
                    firstWait[it] = t3 - t2;
                    repost[it] = t5 - t4;
                    repostWait[it] = t6 - t5;
                }
            }
        }
        return String.format(Locale.ROOT, "list: prepare %.1f us (CPU %.1f us, %.1f ns per request), first post call"
            + " CPU %.1f us, its wait %.1f us, first submit CPU %.1f ns per request; repost call %.1f us, its wait"
            + " %.1f us (medians of %d)", median(prepWall) / 1e3, median(prepCpu) / 1e3, median(prepCpu) / n,
            median(postCpu) / 1e3, median(firstWait) / 1e3, (median(prepCpu) + median(postCpu)) / n,
            median(repost) / 1e3, median(repostWait) / 1e3, iterations);
    }

    private static double median(final long[] v)
    {
        final long[] s = v.clone();
        Arrays.sort(s);
        return s[s.length / 2];
    }
}
