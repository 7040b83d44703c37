package io.github.te4j.bench;

import io.github.te4j.CapturedGraph;
import io.github.te4j.CommContext;
import io.github.te4j.DeviceBuffer;
import io.github.te4j.OpStream;
import io.github.te4j.Platform;
import io.github.te4j.check.Patterns;
import io.github.te4j.exchange.HandleExchange;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * Runs one case on one rank, in lock step with the others. Every rank, measured or not, takes
 * part in the same collectives:
 * <pre>
 *   poison the destination (receivers) .. barrier
 *   [ping-pongs: warm up both sides .. agree on the sample count]
 *   timed samples (rank 0; both sides for ping-pongs) .. all-gather run reports (ops sent, error)
 *   verify data, guard and signal counts (receivers) .. all-gather verdicts
 * </pre>
 * Rank 0 then turns its samples and everyone's verdicts into a {@link Row}. A failure anywhere
 * becomes that row's failure text; the run goes on with the next case. All-to-all cases, in
 * which every rank sends and receives, run in {@link AllToAllCase}.
 */
final class CaseRunner
{
    private static final int MAX_SAMPLES = 100000;
    /** Java-launched ops the JIT sees before a small op is timed (see warmupSamples). */
    private static final long JIT_WARM_OPS = 50_000;
    /** Larger ops are slow enough that the interpreter does not show in their time. */
    private static final long JIT_WARM_MAX_BYTES = 1 << 20;

    private final BenchConfig config;
    private final Platform platform;
    private final HandleExchange exchange;
    private final CommContext ctx;
    private final DeviceBuffer window;
    private final OpStream stream;
    private final BenchNatives natives;
    private final WindowLayout layout;
    private final int rank;
    private final int partner;
    private final long session;
    private final Duration timeout;
    /** Ops to the partner go over RDMA (--transport rdma-soft): the ping-pong runs as stream ops. */
    private final boolean rdma;
    /** The own ping-pong signal word's value when the running RDMA ping-pong case started. */
    private int pingPongBase;
    /** Round trips of the running RDMA ping-pong case so far (the word's advance). */
    private int pingPongRounds;
    private boolean corrupted;
    /** The TCP baseline's connection: 0 not yet opened, 1 open, -1 failed to open. */
    private int tcpState;

    /** The captured graph of the TE4J_RATE_GRAPH case running now. */
    private CapturedGraph graph;
    /** Runs the all-to-all cases, in which every rank takes part. */
    private final AllToAllCase allToAll;

    CaseRunner(final BenchConfig config, final Platform platform, final HandleExchange exchange, final CommContext ctx,
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
        this.rank = ctx.rank();
        this.partner = rank == 0 ? 1 : rank == 1 ? 0 : -1;
        this.session = session;
        this.timeout = config.timeout;
        this.rdma = config.transport != TransportKind.P2P;
        this.allToAll = new AllToAllCase(config, platform, exchange, ctx, stream, natives, layout, session);
    }

    /** Ranks 0 and 1 write their pattern into the source region once: every message is a prefix of it. */
    void writeSource()
    {
        if (partner >= 0)
        {
            Patterns.write(window, layout.src(), layout.maxBytes(), Patterns.seed(session, rank, partner, 0));
        }
    }

    /** Runs {@code k}; returns its row on rank 0, null elsewhere. */
    Row run(final BenchCase k)
    {
        if (k.series().mode() == Mode.ALLTOALL)
        {
            return allToAll.run(k);
        }
        final boolean receives = partner >= 0 && (rank == 1 || k.series().twoSided());
        String error = null;
        int signalBefore = 0;
        try
        {
            // Every rank runs the case under its knobs (te4j/tuning.h): the variant's and the series'.
            natives.applyTuning(k.tuning());
            if (receives && !movesNoWindowData(k.series()))
            {
                window.fill(layout.dst(), k.bytes() + WindowLayout.GUARD, Patterns.POISON);
            }
            if (rank == 1 && usesRateSignal(k.series()))
            {
                signalBefore = readWord(window, WindowLayout.RATE_SIGNAL);
            }
            if (streamPingPong(k.series()) && partner >= 0)
            {
                pingPongBase = readWord(window, pingPongWord(k.series()));  // the peer sends after the barrier
                pingPongRounds = 0;
            }
        }
        catch (final RuntimeException e)
        {
            error = "rank " + rank + " could not prepare: " + e.getMessage();
        }
        if (k.series().isTcp())
        {
            error = connectTcp(error);
        }
        exchange.barrier(timeout);

        final List<Double> samples = new ArrayList<>();
        final int batch = config.batchFor(k.series().mode(), k.bytes());
        final long[] ops = new long[1];
        if (k.series().twoSided())
        {
            error = runTwoSided(k, batch, samples, error);
        }
        else if (rank == 0 && error == null)
        {
            try
            {
                runOneSided(k, batch, samples, ops);
            }
            catch (final RuntimeException e)
            {
                error = "rank 0: " + e.getMessage();
            }
        }

        closeGraph();
        final List<byte[]> reports = exchange.allGather(report(ops[0], error), timeout);
        final String runError = firstText(reports, 8);
        final long opsSent = ByteBuffer.wrap(reports.get(0)).getLong();

        String verdict = null;
        if (receives && runError == null)
        {
            try
            {
                verdict = verify(k, opsSent, signalBefore);
            }
            catch (final RuntimeException e)
            {
                verdict = "rank " + rank + " could not verify: " + e.getMessage();
            }
        }
        final List<byte[]> verdicts = exchange.allGather(text(verdict), timeout);
        if (rank != 0)
        {
            return null;
        }
        final String failure = runError != null ? runError : firstText(verdicts, 0);
        final double[] v = samples.stream().mapToDouble(Double::doubleValue).toArray();
        final Stats s = v.length == 0 ? null : Stats.of(v);
        return new Row(k.series().mode(), k.seriesLabel(), k.series().role(), config.rowPlatform(platform),
            k.bytes(), k.blocks(), k.threads(), batch, v.length, s == null ? Double.NaN : s.median(),
            s == null ? Double.NaN : s.p99(), failure == null && s == null ? "no samples" : failure, note(k, batch));
    }

    private String note(final BenchCase k, final int batch)
    {
        final String how = timing(k, batch);
        // Only the ping-pongs run kernels on both ranks at once: the other series run on rank 0 alone.
        final boolean bothOnGpu = k.series().mode() == Mode.LATENCY && !k.series().isTcp();
        return bothOnGpu && config.pairTimeSlicesGpu(platform) ? how + "; " + Row.TIME_SLICED : how;
    }

    private String timing(final BenchCase k, final int batch)
    {
        final String clock = platform == Platform.CUDA ? "CUDA events" : "monotonic clock";
        switch (k.series())
        {
            case TE4J_PING_PONG:
            case TE4J_LL_PING_PONG:
            case RAW_FLAG:
            case RAW_FLAG_DATA:
                return platform == Platform.CUDA
                    ? "GPU global timer inside one kernel, around " + batch + " round trips after its handshake"
                    : clock + " around a loop of " + batch + " round trips";
            case TE4J_PUT:
            case TE4J_RATE_JAVA:
                return clock + ", " + batch + " Java-launched ops per sample";
            case TE4J_RATE_CPP:
                return clock + ", " + batch + " C++-launched ops per sample";
            case TE4J_RATE_GRAPH:
                return clock + ", one CUDA graph of " + batch + " ops captured from Java per sample";
            default:
                return clock + ", " + batch + " ops per sample";
        }
    }

    // ---- measuring

    private void runOneSided(final BenchCase k, final int batch, final List<Double> samples, final long[] ops)
    {
        prepareShape(k);
        final boolean signals = usesRateSignal(k.series());
        final int warmups = warmupSamples(k, batch);
        for (int w = 0; w < warmups; w++)
        {
            sample(k, batch);
            ops[0] += signals ? batch : 0;
        }
        final long end = config.duration == null ? 0 : System.nanoTime() + config.duration.toNanos();
        for (int i = 0; i < MAX_SAMPLES; i++)
        {
            if (config.duration == null ? i >= config.iterations : i >= 3 && System.nanoTime() >= end)
            {
                break;
            }
            samples.add((double)sample(k, batch) / batch);
            ops[0] += signals ? batch : 0;
        }
    }

    /**
     * Warm-up samples of a one-sided case. Small ops launched from Java warm up for at least
     * {@link #JIT_WARM_OPS} calls: the JIT compiles OpStream's enqueue path only after some ten
     * thousand calls, and two warm-up samples of 1000 ops timed the interpreter (host 64 B put:
     * 1.2 us per op with 2 samples, 0.4 with 50, same run). {@code --warmup 0} still means none.
     */
    private int warmupSamples(final BenchCase k, final int batch)
    {
        final boolean javaLoop = k.series() == Series.TE4J_PUT || k.series() == Series.TE4J_RATE_JAVA;
        if (config.warmup == 0 || !javaLoop || k.bytes() > JIT_WARM_MAX_BYTES)
        {
            return config.warmup;
        }
        return Math.max(config.warmup, (int)((JIT_WARM_OPS + batch - 1) / batch));
    }

    private String runTwoSided(final BenchCase k, final int batch, final List<Double> samples, final String prepared)
    {
        String error = prepared;
        final boolean active = partner >= 0;
        // With --duration the sample count comes from a timed warm-up, so there is at least one.
        final int warmups = config.duration != null ? Math.max(1, config.warmup) : config.warmup;
        long probe = 1;
        if (active && error == null)
        {
            try
            {
                for (int w = 0; w < warmups; w++)
                {
                    probe = Math.max(1, sample(k, batch));
                }
            }
            catch (final RuntimeException e)
            {
                error = "rank " + rank + ": " + e.getMessage();
            }
        }
        // Rank 0 proposes the count; a rank that already failed vetoes (-1), so nobody waits for it.
        int proposal = config.iterations;
        if (config.duration != null)
        {
            proposal = (int)Math.max(3, Math.min(MAX_SAMPLES, config.duration.toNanos() / probe));
        }
        final List<byte[]> all = exchange.allGather(intBytes(error != null ? -1 : proposal), timeout);
        int count = ByteBuffer.wrap(all.get(0)).getInt();
        for (final byte[] b : all)
        {
            if (ByteBuffer.wrap(b).getInt() < 0)
            {
                count = 0;
            }
        }
        if (active && error == null)
        {
            try
            {
                for (int i = 0; i < count; i++)
                {
                    samples.add((double)sample(k, batch) / batch);
                }
            }
            catch (final RuntimeException e)
            {
                error = "rank " + rank + ": " + e.getMessage();
            }
        }
        if (active && error == null && count == 0)
        {
            error = "the peer failed during warm-up (see its row)";
        }
        return error;
    }

    /** Launch shape of te4j's puts: 0 blocks = te4j's choice of everything; the host ignores it. */
    private void prepareShape(final BenchCase k)
    {
        if (platform == Platform.CUDA && k.blocks() >= 0)
        {
            stream.launchShape(k.blocks(), k.blocks() == 0 ? 0 : k.threads());
        }
        else
        {
            stream.launchShape(0, 0);
        }
    }

    /** One timed sample of {@code batch} operations: nanoseconds for the whole batch. */
    private long sample(final BenchCase k, final int batch)
    {
        final long base = window.address();
        final long src = base + layout.src();
        final long dst = base + layout.dst();
        final long peerDst = natives.peerBase() + layout.dst();
        final boolean cuda = platform == Platform.CUDA;
        switch (k.series())
        {
            case TE4J_PUT:
                return javaLoop(batch, () -> stream.put(ctx, partner, layout.dst(), window, layout.src(), k.bytes()));
            case TE4J_RATE_JAVA:
                return javaLoop(batch, () -> stream.putWithSignal(ctx, partner, layout.dst(), window, layout.src(),
                    k.bytes(), WindowLayout.RATE_SIGNAL, 1));
            case TE4J_RATE_GRAPH:
                return javaGraph(k, batch);
            case TE4J_RATE_CPP:
                return natives.cppPutWithSignalLoop(partner, dst, src, k.bytes(), base + WindowLayout.RATE_SIGNAL,
                    cuda ? Math.max(0, k.blocks()) : 0, cuda && k.blocks() > 0 ? k.threads() : 0, batch);
            case COPY_ENGINE:
            case COPY_ENGINE_RATE:
            case MEMCPY:
            case MEMCPY_RATE:
                return natives.copyEngine(peerDst, src, k.bytes(), batch);
            case SM_COPY:
                return natives.smCopy(peerDst, src, k.bytes(), k.blocks(), k.threads(), batch);
            case TE4J_PING_PONG:
                return rdma ? streamPingPong(k, batch) : natives.te4jPingPong(rank == 0, dst, src, k.bytes(), batch);
            case TE4J_STREAM_PING_PONG:
                return streamPingPong(k, batch);
            case TE4J_LL_PING_PONG:
                return natives.llPingPong(rank == 0, base + layout.llSlot(), dst, src, k.bytes(), batch);
            case RAW_FLAG:
            case RAW_FLAG_DATA:
                return natives.rawFlagPingPong(rank == 0, batch);
            case TCP_PING_PONG:
                return natives.tcpPingPong(rank == 0, k.bytes(), batch);
            case TCP_STREAM:
            case TCP_RATE:
                return natives.tcpOneWay(rank == 0, k.bytes(), batch);
            default:
                throw new IllegalStateException("no sampler for " + k.series());
        }
    }

    /** Times {@code batch} operations enqueued from Java on the te4j stream. */
    private long javaLoop(final int batch, final Runnable op)
    {
        return natives.timeStreamOps(stream, timeout, () ->
        {
            for (int i = 0; i < batch; i++)
            {
                op.run();
            }
        });
    }

    /**
     * The ping-pong as stream ops (RDMA: the device/host loops of the P2P case cannot reach the
     * partner): per round putWithSignal to the partner's ping-pong word and waitSignal on the own,
     * the initiator sending first; all 2 x batch ops enqueued, timed to the end of synchronize.
     */
    private long streamPingPong(final BenchCase k, final int batch)
    {
        final boolean initiator = rank == 0;
        final long word = pingPongWord(k.series());
        natives.timerStart();
        for (int i = 0; i < batch; i++)
        {
            final int expected = pingPongBase + pingPongRounds + i + 1;
            if (!initiator)
            {
                stream.waitSignal(ctx, word, expected, timeout);
            }
            stream.putWithSignal(ctx, partner, layout.dst(), window, layout.src(), k.bytes(), word, 1);
            if (initiator)
            {
                stream.waitSignal(ctx, word, expected, timeout);
            }
        }
        stream.synchronize(timeout);
        natives.timerStop();
        pingPongRounds += batch;
        return natives.timerElapsedNs();
    }

    /**
     * Times one replay of a CUDA graph holding {@code batch} putWithSignal ops, captured from Java
     * on the te4j stream at the case's first sample (kept until the case ends).
     */
    private long javaGraph(final BenchCase k, final int batch)
    {
        if (graph == null)
        {
            stream.beginCapture();
            try
            {
                for (int i = 0; i < batch; i++)
                {
                    stream.putWithSignal(ctx, partner, layout.dst(), window, layout.src(), k.bytes(),
                        WindowLayout.RATE_SIGNAL, 1);
                }
            }
            finally
            {
                graph = stream.endCapture();
            }
        }
        natives.timerStart();
        graph.launch();
        if (rdma)
        {
            // The graph's kernels only post RDMA requests; the quiet at synchronize delivers them.
            stream.synchronize(timeout);
        }
        natives.timerStop();
        stream.synchronize(timeout);
        return natives.timerElapsedNs();
    }

    private void closeGraph()
    {
        if (graph != null)
        {
            try
            {
                graph.close();
            }
            finally
            {
                graph = null;
            }
        }
    }

    /** Whether this case's ping-pong runs as stream ops (RDMA's te4j ping-pong, the host's stream series). */
    private boolean streamPingPong(final Series s)
    {
        return s == Series.TE4J_STREAM_PING_PONG || (rdma && s == Series.TE4J_PING_PONG);
    }

    private static long pingPongWord(final Series s)
    {
        return s == Series.TE4J_STREAM_PING_PONG ? WindowLayout.STREAM_PING_PONG_SIGNAL : WindowLayout.PING_PONG_SIGNAL;
    }

    private static boolean isRawFlag(final Series s)
    {
        return s == Series.RAW_FLAG || s == Series.RAW_FLAG_DATA;
    }

    /** Series whose bytes never land in the window (flags, the TCP baselines' own buffers). */
    private static boolean movesNoWindowData(final Series s)
    {
        return isRawFlag(s) || s.isTcp();
    }

    /**
     * Opens the TCP baseline's connection once, at its first case, with every rank taking part in
     * the one all-gather: rank 1 listens where its software NIC listens (--soft-nic; loopback by
     * default) and sends that address and the port, rank 0 connects. A rank that fails sends
     * port -1, and every TCP case then reports the failure.
     */
    private String connectTcp(final String prepared)
    {
        if (tcpState != 0)
        {
            return prepared != null ? prepared : tcpState < 0 ? "the TCP baseline could not connect (see its first row)"
                : null;
        }
        String error = prepared;
        int port = 0;
        if (rank == 1 && error == null)
        {
            try
            {
                port = natives.tcpListen(config.softNicAddress());
            }
            catch (final RuntimeException e)
            {
                error = "rank 1: " + e.getMessage();
            }
        }
        final byte[] address = config.softNicAddress().getBytes(StandardCharsets.US_ASCII);
        final List<byte[]> all = exchange.allGather(ByteBuffer.allocate(4 + address.length)
            .putInt(error != null ? -1 : port).put(address).array(), timeout);
        final int peerPort = ByteBuffer.wrap(all.get(1)).getInt();
        final String peerAddress = new String(all.get(1), 4, all.get(1).length - 4, StandardCharsets.US_ASCII);
        boolean failed = error != null;
        for (final byte[] b : all)
        {
            failed |= ByteBuffer.wrap(b).getInt() < 0;
        }
        if (!failed && partner >= 0)
        {
            try
            {
                if (rank == 0)
                {
                    natives.tcpConnect(peerAddress, peerPort);
                }
                else
                {
                    natives.tcpAccept();
                }
            }
            catch (final RuntimeException e)
            {
                error = "rank " + rank + ": " + e.getMessage();
                failed = true;
            }
        }
        tcpState = failed ? -1 : 1;
        return failed && error == null ? "the peer could not set up the TCP baseline (see its row)" : error;
    }

    // ---- checking

    private String verify(final BenchCase k, final long opsSent, final int signalBefore)
    {
        if (movesNoWindowData(k.series()))
        {
            return null;  // no window data; flag loops checked their counts, TCP its byte counts
        }
        if (config.corruptForTest && !corrupted)
        {
            corrupted = true;
            final long at = layout.dst() + k.bytes() / 2;
            window.write(at, new byte[] {(byte)~window.read(at, 1)[0]});
        }
        final String data = Patterns.verify(window, layout.dst(), k.bytes(), Patterns.seed(session, partner, rank, 0));
        if (data != null)
        {
            return "data check failed on rank " + rank + ": " + data;
        }
        final String guard = Patterns.verifyPoison(window, layout.dst() + k.bytes(), WindowLayout.GUARD);
        if (guard != null)
        {
            return "overrun on rank " + rank + ": " + guard;
        }
        if (usesRateSignal(k.series()))
        {
            final int got = readWord(window, WindowLayout.RATE_SIGNAL) - signalBefore;
            if (got != (int)opsSent)
            {
                return "signal check failed on rank " + rank + ": the signal word advanced by "
                    + Integer.toUnsignedString(got) + ", rank 0 sent " + opsSent + " signals";
            }
        }
        return null;
    }

    private static boolean usesRateSignal(final Series s)
    {
        return s == Series.TE4J_RATE_JAVA || s == Series.TE4J_RATE_CPP || s == Series.TE4J_RATE_GRAPH;
    }

    /** The 32-bit little-endian word at {@code offset} of {@code buf}. */
    static int readWord(final DeviceBuffer buf, final long offset)
    {
        return ByteBuffer.wrap(buf.read(offset, 4)).order(ByteOrder.LITTLE_ENDIAN).getInt();
    }

    // ---- collective payloads

    private static byte[] report(final long ops, final String error)
    {
        final byte[] t = error == null ? new byte[0] : error.getBytes(StandardCharsets.UTF_8);
        return ByteBuffer.allocate(8 + t.length).putLong(ops).put(t).array();
    }

    static byte[] text(final String s)
    {
        return s == null ? new byte[0] : s.getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] intBytes(final int v)
    {
        return ByteBuffer.allocate(4).putInt(v).array();
    }

    /** The first non-empty text among the blobs (after {@code skip} header bytes), or null. */
    static String firstText(final List<byte[]> blobs, final int skip)
    {
        for (final byte[] b : blobs)
        {
            if (b.length > skip)
            {
                return new String(b, skip, b.length - skip, StandardCharsets.UTF_8);
            }
        }
        return null;
    }
}
