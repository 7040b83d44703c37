package io.github.te4j.bench;

import io.github.te4j.DeviceBuffer;
import io.github.te4j.Notification;
import io.github.te4j.Notifications;
import io.github.te4j.OpStream;
import io.github.te4j.P2pTransport;
import io.github.te4j.Platform;
import io.github.te4j.RegisteredMemory;
import io.github.te4j.SegmentHandle;
import io.github.te4j.TransferAgent;
import io.github.te4j.TransferDescriptors;
import io.github.te4j.TransferEngine;
import io.github.te4j.TransferList;
import io.github.te4j.TransferPost;
import io.github.te4j.TransferState;
import io.github.te4j.TransferStatus;
import io.github.te4j.bench.internal.NativeBench;
import io.github.te4j.check.Patterns;
import io.github.te4j.exchange.InMemorySegmentDirectory;
import io.github.te4j.workload.KvCacheLayout;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * {@code --mode kvcache}: disaggregated serving's KV-cache handoff, the shape of the
 * KvCacheHandoff example. A prefill engine holds L layers x B blocks scattered over its pool
 * ({@link KvCacheLayout}) and hands them, one layer at a time, to a decode engine's own
 * scattered slots: each layer a {@link TransferList} prepared before the timing and posted, and
 * once the post is done a notification naming the layer. A thread of the decode side takes the
 * notifications. Both engines live in this process (on CUDA on device 0), the decode segment
 * opened the way a peer's is.
 *
 * <p>Reported: time-to-notify per layer (from the prefill's post of the layer to the decode
 * side taking its notification; median and p99 over every layer of every run) and the whole handoff
 * (the first send to the last layer seen), beside baselines over the same blocks, timed by the
 * host clock from the call to the copies being complete: on CUDA one cudaMemcpyAsync per block,
 * one cudaMemcpyBatchAsync, and one contiguous copy of the same bytes, each layer by layer; on
 * the host platform a memcpy loop. The last te4j run lands in a poisoned pool and every block is
 * checked byte for byte: a mismatch is a FAILED row and exit code 1.
 */
final class KvCacheBench
{
    /** Requests sent untimed before timing, so that C2 has compiled the submit path (see BatchBench). */
    private static final int WARM_UP_REQUESTS = 100_000;
    private static final String TE4J_LAYER = "te4j layer (send..landed)";
    private static final String TE4J_HANDOFF = "te4j handoff (all layers)";
    private static final String TE4J_DATA = "te4j layer data (send..done)";

    private final BenchConfig config;
    private final KvCacheLayout layout;
    private final Platform platform;
    private final Duration timeout;
    private final List<Row> rows = new ArrayList<>();

    private KvCacheBench(final BenchConfig config, final KvCacheLayout layout)
    {
        this.config = config;
        this.layout = layout;
        this.platform = config.resolvePlatform();
        this.timeout = config.timeout;
    }

    /** Runs the mode; the results go to {@code out} in the configured format, progress to {@code notes}. */
    static int run(final BenchConfig config, final KvCacheLayout layout, final PrintStream out, final PrintStream notes)
        throws IOException
    {
        return new KvCacheBench(config, layout).run(out, notes);
    }

    private int run(final PrintStream out, final PrintStream notes) throws IOException
    {
        final int iterations = Math.max(3, config.iterations);
        final int warmUps = Math.max(config.warmup,
            (int) ((WARM_UP_REQUESTS + (long) layout.layers() * layout.blocksPerLayer() - 1)
                / ((long) layout.layers() * layout.blocksPerLayer())));
        final String space = "te4j-bench-kvcache-" + ProcessHandle.current().pid();
        final List<String> infos = new ArrayList<>();
        try (TransferEngine prefillEngine = TransferEngine.builder().platform(platform).device(0).build();
            TransferEngine decodeEngine = TransferEngine.builder().platform(platform).device(0).build();
            InMemorySegmentDirectory prefillDir = InMemorySegmentDirectory.open(space);
            InMemorySegmentDirectory decodeDir = InMemorySegmentDirectory.open(space))
        {
            final P2pTransport p0 = prefillEngine.getOrCreateP2pTransport(2);
            final P2pTransport p1 = decodeEngine.getOrCreateP2pTransport(2);
            final DeviceBuffer prefillPool = p0.allocateBuffer(layout.poolBytes());
            final DeviceBuffer decodePool = p1.allocateBuffer(layout.poolBytes());
            final TransferAgent prefill = prefillEngine.createTransferAgent(p0, "kv-prefill");
            final TransferAgent decode = decodeEngine.createTransferAgent(p1, "kv-decode");
            final RegisteredMemory local = prefill.registerLocalMemory(prefillPool);
            decode.registerLocalMemory(decodePool);
            // Before the decode side publishes: its descriptor then says where notifications go.
            final Notifications inbox = decode.notifications();
            decode.publishSegment(decodeDir);
            // The decode side delivers only notifications of senders it can find by name.
            prefill.publishSegment(prefillDir);
            final SegmentHandle target = prefill.openSegment("kv-decode", prefillDir, timeout);
            notes.println("kvcache: filling the prefill pool (" + layout + ")");
            for (int l = 0; l < layout.layers(); l++)
            {
                for (int b = 0; b < layout.blocksPerLayer(); b++)
                {
                    Patterns.write(prefillPool, layout.prefillOffset(l, b), layout.blockBytes(), layout.blockSeed(l, b));
                }
            }
            infos.add(String.format(Locale.ROOT, "kvcache: %s, %d layers x %d blocks x %s scattered over pools of %d"
                + " slots (%s each); %d runs timed after %d untimed", BenchMain.platformName(platform), layout.layers(),
                layout.blocksPerLayer(), Sizes.format(layout.blockBytes()), layout.poolBlocks(),
                Sizes.format(layout.poolBytes()), iterations, warmUps));
            infos.add("layer rows: per layer, from its post to the decode side taking its notification (te4j), or from"
                + " the copy call to its completion (baselines); handoff rows: all layers, one after the other");
            final OpStream baselineStream = prefillEngine.createStream();
            final NativeBench.CopyBaseline baseline = NativeBench.CopyBaseline.create(platform.nativeId(), 0,
                baselineStream.nativeHandle());
            if (baseline == null || baseline.status() != 0)
            {
                notes.println("te4j-bench: kvcache baselines unavailable: "
                    + (baseline == null ? "null" : baseline.lastError()));
                return BenchMain.EXIT_FAILED;
            }
            notes.println("kvcache: baselines");
            baselines(baseline, prefillPool, decodePool, iterations);
            notes.println("kvcache: te4j, " + warmUps + " untimed and " + iterations + " timed handoffs");
            final ExecutorService watcher = Executors.newSingleThreadExecutor(r ->
            {
                final Thread t = new Thread(r, "te4j-bench-kvcache-decode");
                t.setDaemon(true);
                return t;
            });
            try
            {
                te4j(prefill, local, target, decodePool, inbox, watcher, warmUps, iterations);
            }
            catch (final RuntimeException e)
            {
                final String why = e.getClass().getSimpleName() + ": " + e.getMessage();
                add(Role.TE4J, TE4J_LAYER, false, new double[] {Double.NaN}, why, "");
                add(Role.TE4J, TE4J_HANDOFF, true, new double[] {Double.NaN}, why, "");
                add(Role.TE4J, TE4J_DATA, false, new double[] {Double.NaN}, why, "");
            }
            finally
            {
                // The watcher stops at its next look once interrupted; nothing waits on it after this.
                watcher.shutdownNow();
            }
        }
        final Report report = new Report(config, platform, infos, rows);
        if (config.saveRows != null)
        {
            SavedRows.save(config.saveRows, infos, rows);
        }
        report.print(out, notes);
        return rows.stream().allMatch(Row::ok) ? 0 : BenchMain.EXIT_FAILED;
    }

    /** The te4j rows: warm-up handoffs, then timed ones, the last into a poisoned pool and verified. */
    private void te4j(final TransferAgent prefill, final RegisteredMemory local, final SegmentHandle target,
        final DeviceBuffer decodePool, final Notifications inbox, final ExecutorService watcher, final int warmUps,
        final int iterations)
    {
        final int layers = layout.layers();
        final double[] perLayer = new double[layers * iterations];
        final double[] dataOnly = new double[layers * iterations];
        final double[] whole = new double[iterations];
        final long[] sentAt = new long[layers];
        final long[] dataDoneAt = new long[layers];
        try (Sender sender = new Sender(prefill, local, target))
        {
            for (int it = -warmUps; it < iterations; it++)
            {
                if (it == iterations - 1)
                {
                    decodePool.fill(0, layout.poolBytes(), Patterns.POISON);
                }
                final Future<long[]> seen = watcher.submit(() -> watch(inbox, prefill.segmentName()));
                for (int l = 0; l < layers; l++)
                {
                    sentAt[l] = System.nanoTime();
                    dataDoneAt[l] = sender.send(l);
                }
                final long[] landedAt = landed(seen);
                if (it >= 0)
                {
                    for (int l = 0; l < layers; l++)
                    {
                        perLayer[it * layers + l] = landedAt[l] - sentAt[l];
                        dataOnly[it * layers + l] = dataDoneAt[l] - sentAt[l];
                    }
                    whole[it] = landedAt[layers - 1] - sentAt[0];
                }
            }
        }
        if (config.corruptForTest)
        {
            final long at = layout.decodeOffset(0, 0);
            decodePool.fill(at, 1, (byte) ~decodePool.read(at, 1)[0]);
        }
        final String bad = verify(decodePool);
        add(Role.TE4J, TE4J_DATA, false, dataOnly, bad, "the layer's list post alone, as the prefill side sees it end");
        add(Role.TE4J, TE4J_LAYER, false, perLayer, bad,
            "a prepared list of the layer's WRITEs posted, then a notification naming the layer");
        add(Role.TE4J, TE4J_HANDOFF, true, whole, bad, "");
    }

    private long[] landed(final Future<long[]> seen)
    {
        try
        {
            return seen.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
        }
        catch (final ExecutionException e)
        {
            throw new IllegalStateException("the decode side: " + e.getCause().getMessage(), e.getCause());
        }
        catch (final TimeoutException e)
        {
            throw new IllegalStateException("the decode side saw no handoff end within " + timeout.toMillis() + " ms", e);
        }
        catch (final InterruptedException e)
        {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    /** The decode side: takes one notification per layer, in order; returns when it took each. */
    private long[] watch(final Notifications inbox, final String prefill)
    {
        final long[] at = new long[layout.layers()];
        final long end = System.nanoTime() + timeout.toNanos();
        for (int l = 0; l < at.length; l++)
        {
            final Notification n = inbox.take(Duration.ofNanos(Math.max(0, end - System.nanoTime())));
            at[l] = System.nanoTime();
            if (!n.sender().equals(prefill) || !Arrays.equals(n.message(), message(l)))
            {
                throw new IllegalStateException("waiting for layer " + l + ", got '"
                    + new String(n.message(), StandardCharsets.UTF_8) + "' from '" + n.sender() + "'");
            }
        }
        return at;
    }

    /** The notification that says layer {@code layer} has landed. */
    private static byte[] message(final int layer)
    {
        return ("kv layer " + layer).getBytes(StandardCharsets.UTF_8);
    }

    /** The prefill side: each layer's requests prepared once as a list, posted, then its notification. */
    private final class Sender implements AutoCloseable
    {
        private final TransferAgent agent;
        private final String target;
        private final TransferList[] lists;

        Sender(final TransferAgent agent, final RegisteredMemory local, final SegmentHandle target)
        {
            this.agent = agent;
            this.target = target.segmentName();
            this.lists = new TransferList[layout.layers()];
            final TransferDescriptors d = new TransferDescriptors(layout.blocksPerLayer());
            for (int l = 0; l < lists.length; l++)
            {
                d.clear();
                for (int b = 0; b < layout.blocksPerLayer(); b++)
                {
                    d.write(local, layout.prefillOffset(l, b), target, layout.decodeOffset(l, b), layout.blockBytes());
                }
                lists[l] = agent.prepareList(d);
            }
        }

        /** Sends layer {@code layer} and its notification; returns when (System.nanoTime) the layer's post was done. */
        long send(final int layer)
        {
            final TransferPost post = lists[layer].post(timeout);
            if (!post.awaitDone(timeout))
            {
                throw new IllegalStateException("layer " + layer + ": not done within " + timeout.toMillis() + " ms");
            }
            final long dataDone = System.nanoTime();
            for (int i = 0; i < post.size(); i++)
            {
                final TransferStatus s = post.status(i);
                if (s.state() != TransferState.COMPLETED)
                {
                    throw new IllegalStateException("layer " + layer + ", request " + i + ": " + s);
                }
            }
            agent.sendNotification(target, message(layer), timeout);
            return dataDone;
        }

        @Override
        public void close()
        {
            for (final TransferList list : lists)
            {
                if (list != null)
                {
                    list.close();
                }
            }
        }
    }

    /** Null when every block of every layer holds its bytes in the decode pool, else the first that does not. */
    private String verify(final DeviceBuffer decodePool)
    {
        for (int l = 0; l < layout.layers(); l++)
        {
            for (int b = 0; b < layout.blocksPerLayer(); b++)
            {
                final String why = Patterns.verify(decodePool, layout.decodeOffset(l, b), layout.blockBytes(),
                    layout.blockSeed(l, b));
                if (why != null)
                {
                    return "layer " + l + " block " + b + ": " + why;
                }
            }
        }
        return null;
    }

    /** The baseline rows: each way of copying, layer by layer, timed per layer and for the whole. */
    private void baselines(final NativeBench.CopyBaseline baseline, final DeviceBuffer prefillPool,
        final DeviceBuffer decodePool, final int iterations)
    {
        final int layers = layout.layers();
        final int n = layout.blocksPerLayer();
        final long[][] dst = new long[layers][n];
        final long[][] src = new long[layers][n];
        final long[] len = new long[n];
        Arrays.fill(len, layout.blockBytes());
        for (int l = 0; l < layers; l++)
        {
            for (int b = 0; b < n; b++)
            {
                dst[l][b] = decodePool.address() + layout.decodeOffset(l, b);
                src[l][b] = prefillPool.address() + layout.prefillOffset(l, b);
            }
        }
        final boolean cuda = platform == Platform.CUDA;
        baselineRows(baseline, NativeBench.CopyBaselineModes.LOOP, cuda ? "cudaMemcpyAsync per block" : "memcpy loop",
            dst, src, len, iterations);
        if (cuda)
        {
            baselineRows(baseline, NativeBench.CopyBaselineModes.BATCH_ASYNC, "cudaMemcpyBatchAsync", dst, src, len,
                iterations);
            // The same bytes as one copy per layer: each layer's share of the pools from their starts.
            final long[][] oneDst = new long[layers][1];
            final long[][] oneSrc = new long[layers][1];
            for (int l = 0; l < layers; l++)
            {
                oneDst[l][0] = decodePool.address() + l * layout.layerBytes();
                oneSrc[l][0] = prefillPool.address() + l * layout.layerBytes();
            }
            baselineRows(baseline, NativeBench.CopyBaselineModes.CONTIGUOUS, "one contiguous copy", oneDst, oneSrc,
                new long[] {layout.layerBytes()}, iterations);
        }
    }

    private void baselineRows(final NativeBench.CopyBaseline baseline, final int how, final String name,
        final long[][] dst, final long[][] src, final long[] len, final int iterations)
    {
        final int layers = layout.layers();
        final double[] perLayer = new double[layers * iterations];
        final double[] whole = new double[iterations];
        final long[] ns = new long[1];
        for (int it = -1; it < iterations; it++)
        {
            final long start = System.nanoTime();
            for (int l = 0; l < layers; l++)
            {
                final long t0 = System.nanoTime();
                final int st = baseline.copyBlocks(how, dst[l], src[l], len, len.length, timeout.toNanos(), ns);
                final long t1 = System.nanoTime();
                if (st != 0)
                {
                    throw new IllegalStateException("baseline " + name + ": " + baseline.lastError());
                }
                if (it >= 0)
                {
                    perLayer[it * layers + l] = t1 - t0;
                }
            }
            if (it >= 0)
            {
                whole[it] = System.nanoTime() - start;
            }
        }
        add(Role.BASELINE, name + ": layer", false, perLayer, null, "");
        add(Role.BASELINE, name + ": handoff", true, whole, null, "");
    }

    private void add(final Role role, final String series, final boolean whole, final double[] samples,
        final String failure, final String note)
    {
        final Stats s = failure == null ? Stats.of(samples) : null;
        final long bytes = whole ? layout.layers() * layout.layerBytes() : layout.layerBytes();
        final int requests = whole ? layout.layers() * layout.blocksPerLayer() : layout.blocksPerLayer();
        rows.add(new Row(Mode.KVCACHE, series, role, BenchMain.platformName(platform), bytes, -1, 0, requests,
            s == null ? 0 : s.count(), s == null ? Double.NaN : s.median(), s == null ? Double.NaN : s.p99(), failure,
            note));
    }
}
