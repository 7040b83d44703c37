package io.github.te4j.bench;

import io.github.te4j.CommContext;
import io.github.te4j.DeviceBuffer;
import io.github.te4j.OpStream;
import io.github.te4j.Platform;
import io.github.te4j.check.Patterns;
import io.github.te4j.exchange.HandleExchange;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * Runs one all-to-all case on one rank; every rank of the run takes part, in lock step:
 * <pre>
 *   write this case's N-1 source blocks, poison the N slots, note the signal word
 *   per sample: all-gather (go, or stop with a rank's error), then --batch all-to-alls (default 1):
 *     te4j:   (untimed) a start line of signals among the ranks, then, timed: putWithSignal to
 *             every other rank (rotated order), waitSignal for the N-1 arriving
 *     memcpy: one single-thread memcpy of each block into the other ranks' mappings
 *   all-gather run errors .. verify every slot, its guard, the own slot, the signal count .. all-gather verdicts
 * </pre>
 * Rank 0 decides how many samples there are (warm-up, then --iterations or --duration), so every
 * rank runs the same count and no collective waits for a rank that stopped. A failure becomes the
 * row's failure text and the run goes on with the next case.
 */
final class AllToAllCase
{
    private static final int MAX_SAMPLES = 100000;
    /** Slots checked for the poison in chunks of this (the own slot, never written). */
    private static final int POISON_CHUNK = 1 << 20;

    private final BenchConfig config;
    private final Platform platform;
    private final HandleExchange exchange;
    private final CommContext ctx;
    private final DeviceBuffer window;
    private final OpStream stream;
    private final BenchNatives natives;
    private final WindowLayout layout;
    private final long session;
    private final int rank;
    private final int ranks;
    private final Duration timeout;
    /**
     * Bound of one sample's wait for the arrivals: half of --timeout, so that the rank whose
     * wait failed reaches the next all-gather before the others give up waiting there.
     */
    private final Duration arrivalTimeout;
    /** All-to-all cases run so far: part of every block's seed, so no case can pass with an older one's data. */
    private long round;
    /** The other ranks' window bases as mapped here (memcpy baseline), read on first use. */
    private long[] peerBases;
    private boolean corrupted;
    /** The start-line word's value when this case began, and the start lines run since. */
    private int startBase;
    private int starts;

    AllToAllCase(final BenchConfig config, final Platform platform, final HandleExchange exchange, final CommContext ctx,
        final OpStream stream, final BenchNatives natives, final WindowLayout layout, final long session)
    {
        this.config = config;
        this.platform = platform;
        this.exchange = exchange;
        this.ctx = ctx;
        this.window = ctx.localBuffer();
        this.stream = stream;
        this.natives = natives;
        this.layout = layout;
        this.session = session;
        this.rank = ctx.rank();
        this.ranks = config.ranks;
        this.timeout = config.timeout;
        this.arrivalTimeout = config.timeout.dividedBy(2);
    }

    /** Runs {@code k}; returns its row on rank 0, null elsewhere. */
    Row run(final BenchCase k)
    {
        round++;
        final boolean te4j = k.series() == Series.TE4J_ALLTOALL;
        String error = null;
        int signalBefore = 0;
        try
        {
            natives.applyTuning(k.tuning());
            prepare(k);
            signalBefore = CaseRunner.readWord(window, WindowLayout.ALLTOALL_SIGNAL);
            startBase = CaseRunner.readWord(window, WindowLayout.ALLTOALL_START);
            starts = 0;
            // Launch shape of te4j's puts: 0 blocks = te4j's choice; the host has none.
            final boolean grid = platform == Platform.CUDA && k.blocks() >= 0;
            stream.launchShape(grid ? k.blocks() : 0, grid && k.blocks() > 0 ? k.threads() : 0);
        }
        catch (final RuntimeException e)
        {
            error = "rank " + rank + " could not prepare: " + e.getMessage();
        }

        final List<Double> samples = new ArrayList<>();
        final int batch = config.allToAllBatch();
        int done = 0;  // all-to-alls run, warm-up included
        long end = 0;
        for (int i = 0; ; i++)
        {
            final int timed = i - config.warmup;
            if (timed == 0 && config.duration != null)
            {
                end = System.nanoTime() + config.duration.toNanos();
            }
            final boolean more = timed < 0 || (config.duration == null ? timed < config.iterations
                : timed < MAX_SAMPLES && (timed < 3 || System.nanoTime() < end));
            // Rank 0's first byte says go or stop; any rank's text stops everyone (it is in the report below).
            final List<byte[]> go = exchange.allGather(goBytes(rank != 0 || more, error), timeout);
            if (go.get(0)[0] == 0 || CaseRunner.firstText(go, 1) != null)
            {
                break;
            }
            try
            {
                final long ns = te4j ? te4jSample(k, batch, signalBefore + done * (ranks - 1)) : memcpySample(k, batch);
                done += batch;
                if (timed >= 0)
                {
                    samples.add((double)ns / batch);
                }
            }
            catch (final RuntimeException e)
            {
                error = "rank " + rank + ": " + e.getMessage();
            }
        }

        final List<byte[]> reports = exchange.allGather(CaseRunner.text(error), timeout);
        final String runError = CaseRunner.firstText(reports, 0);
        String verdict = null;
        if (runError == null)
        {
            try
            {
                verdict = verify(k, te4j ? done : -1, signalBefore);
            }
            catch (final RuntimeException e)
            {
                verdict = "rank " + rank + " could not verify: " + e.getMessage();
            }
        }
        final List<byte[]> verdicts = exchange.allGather(CaseRunner.text(verdict), timeout);
        if (rank != 0)
        {
            return null;
        }
        final String failure = runError != null ? runError : CaseRunner.firstText(verdicts, 0);
        final double[] v = samples.stream().mapToDouble(Double::doubleValue).toArray();
        final Stats s = v.length == 0 ? null : Stats.of(v);
        // The row's time per op is the time of one all-to-all.
        return new Row(Mode.ALLTOALL, k.seriesLabel(), k.series().role(), config.rowPlatform(platform), k.bytes(),
            k.blocks(), k.threads(), batch, v.length, s == null ? Double.NaN : s.median(), s == null ? Double.NaN : s.p99(),
            failure == null && s == null ? "no samples" : failure, note(te4j, batch), ranks);
    }

    private String note(final boolean te4j, final int batch)
    {
        final String clock = platform == Platform.CUDA ? "CUDA events" : "monotonic clock";
        final String each = te4j
            ? (ranks - 1) + " putWithSignal (rotated order) + waitSignal for " + (ranks - 1) + " arrivals"
            : (ranks - 1) + " single-thread memcpy into the other ranks' mappings (no arrival wait)";
        return clock + " around " + (batch == 1 ? "one all-to-all" : batch + " back-to-back all-to-alls") + " of "
            + each + (te4j ? "; samples start after an all-gather and an untimed start line of signals"
                : "; samples start together after an all-gather");
    }

    /** This case's source blocks (a distinct stream per source, destination and case) and poisoned slots. */
    private void prepare(final BenchCase k)
    {
        for (int d = 0; d < ranks; d++)
        {
            if (d != rank)
            {
                Patterns.write(window, layout.allToAllBlock(d), k.bytes(), Patterns.seed(session, rank, d, round));
            }
            window.fill(layout.allToAllSlot(d), k.bytes() + WindowLayout.GUARD, Patterns.POISON);
        }
    }

    /** The rank this rank sends to at step {@code i} (1..N-1): rotated so that not everyone starts at rank 0. */
    private int target(final int i)
    {
        return (rank + i) % ranks;
    }

    /**
     * {@code batch} te4j all-to-alls, timed on the stream until the own word has every arrival;
     * {@code base} is the word's value when they started. Back to back, a fast sender's next
     * block may count toward a wait before a slow one's; the last wait needs all of them.
     */
    private long te4jSample(final BenchCase k, final int batch, final int base)
    {
        startLine();
        return natives.timeStreamOps(stream, timeout, () ->
        {
            for (int b = 1; b <= batch; b++)
            {
                for (int i = 1; i < ranks; i++)
                {
                    final int p = target(i);
                    stream.putWithSignal(ctx, p, layout.allToAllSlot(rank), window, layout.allToAllBlock(p),
                        k.bytes(), WindowLayout.ALLTOALL_SIGNAL, 1);
                }
                stream.waitSignal(ctx, WindowLayout.ALLTOALL_SIGNAL, base + b * (ranks - 1), arrivalTimeout);
            }
        });
    }

    /**
     * Untimed: every rank signals every other rank's start word and waits for the N-1 signals
     * of this sample, so the ranks start the timed all-to-all within a shared-memory wake-up of
     * each other. The all-gather before it releases them up to milliseconds apart (a TCP round
     * per rank), and that skew, which the memcpy baseline never waits for, was most of a small
     * all-to-all's time.
     */
    private void startLine()
    {
        starts++;
        for (int i = 1; i < ranks; i++)
        {
            stream.signal(ctx, target(i), WindowLayout.ALLTOALL_START, 1);
        }
        stream.waitSignal(ctx, WindowLayout.ALLTOALL_START, startBase + starts * (ranks - 1), arrivalTimeout);
        stream.synchronize(timeout);
    }

    /** The baseline: the same N-1 copies as plain memcpy on this thread, timed with the same clock. */
    private long memcpySample(final BenchCase k, final int batch)
    {
        if (peerBases == null)
        {
            final long[] b = new long[ranks];
            for (int r = 0; r < ranks; r++)
            {
                b[r] = r == rank ? window.address() : natives.peerBaseOf(r);
            }
            peerBases = b;
        }
        final long base = window.address();
        natives.timerStart();
        for (int b = 0; b < batch; b++)
        {
            for (int i = 1; i < ranks; i++)
            {
                final int p = target(i);
                natives.copyEngine(peerBases[p] + layout.allToAllSlot(rank), base + layout.allToAllBlock(p),
                    k.bytes(), 1);
            }
        }
        natives.timerStop();
        return natives.timerElapsedNs();
    }

    /**
     * Every slot holds its sender's block exactly, with the guard after it untouched; the own
     * slot was never written; te4j's signal word advanced by exactly (N-1) per all-to-all run
     * ({@code allToAlls} < 0: no signals to count).
     */
    private String verify(final BenchCase k, final int allToAlls, final int signalBefore)
    {
        if (config.corruptForTest && !corrupted && rank == 1)
        {
            corrupted = true;
            final long at = layout.allToAllSlot(0) + k.bytes() / 2;
            window.write(at, new byte[] {(byte)~window.read(at, 1)[0]});
        }
        for (int s = 0; s < ranks; s++)
        {
            final long slot = layout.allToAllSlot(s);
            if (s == rank)
            {
                final String own = verifyPoison(slot, k.bytes() + WindowLayout.GUARD);
                if (own != null)
                {
                    return "rank " + rank + "'s own slot was written: " + own;
                }
                continue;
            }
            final String data = Patterns.verify(window, slot, k.bytes(), Patterns.seed(session, s, rank, round));
            if (data != null)
            {
                return "data check failed on rank " + rank + ", block from rank " + s + ": " + data;
            }
            final String guard = Patterns.verifyPoison(window, slot + k.bytes(), WindowLayout.GUARD);
            if (guard != null)
            {
                return "overrun on rank " + rank + ", block from rank " + s + ": " + guard;
            }
        }
        if (allToAlls >= 0)
        {
            final int got = CaseRunner.readWord(window, WindowLayout.ALLTOALL_SIGNAL) - signalBefore;
            final long want = (long)allToAlls * (ranks - 1);
            if (got != (int)want)
            {
                return "signal check failed on rank " + rank + ": the signal word advanced by "
                    + Integer.toUnsignedString(got) + ", expected " + want + " (" + allToAlls + " all-to-alls x "
                    + (ranks - 1) + " senders)";
            }
        }
        return null;
    }

    /** {@link Patterns#verifyPoison} over any length, in chunks. */
    private String verifyPoison(final long offset, final long len)
    {
        for (long done = 0; done < len; done += POISON_CHUNK)
        {
            final String bad = Patterns.verifyPoison(window, offset + done, (int)Math.min(POISON_CHUNK, len - done));
            if (bad != null)
            {
                return bad;
            }
        }
        return null;
    }

    /** Go (1) or stop (0), then this rank's error text if it has one. */
    private static byte[] goBytes(final boolean go, final String error)
    {
        final byte[] t = CaseRunner.text(error);
        final byte[] b = new byte[1 + t.length];
        b[0] = (byte)(go ? 1 : 0);
        System.arraycopy(t, 0, b, 1, t.length);
        return b;
    }
}
