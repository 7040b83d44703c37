package io.github.te4j.bench;

import io.github.te4j.DeviceBuffer;
import io.github.te4j.OpStream;
import io.github.te4j.P2pTransport;
import io.github.te4j.Platform;
import io.github.te4j.RdmaTransport;
import io.github.te4j.RegisteredMemory;
import io.github.te4j.SegmentHandle;
import io.github.te4j.TransferAgent;
import io.github.te4j.TransferBatch;
import io.github.te4j.TransferDescriptors;
import io.github.te4j.TransferEngine;
import io.github.te4j.TransferRequest;
import io.github.te4j.TransferState;
import io.github.te4j.TransferStatus;
import io.github.te4j.bench.internal.NativeBench;
import io.github.te4j.exchange.HandleExchange;
import io.github.te4j.exchange.InMemorySegmentDirectory;
import io.github.te4j.rendezvous.FileExchange;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Random;

/**
 * {@code --mode batch}: KV-cache shapes (N blocks of S bytes at random offsets of a region of
 * another engine's segment, gathered into or scattered from one packed local buffer), WRITE and
 * READ, each timed as one te4j {@link TransferBatch} from submit to the last request's completion
 * as seen from Java, beside the baselines of the same run over the same blocks: a single-thread
 * memcpy loop on the host; on CUDA one cudaMemcpyAsync per block, one cudaMemcpyBatchAsync and
 * one contiguous copy of the same total bytes. Both engines live in this process (on CUDA on one
 * GPU); the segment is still opened the way a peer's is (its handle mapped again). With
 * {@code --transport rdma-soft} (host platform) a second te4j row reaches the same segment over
 * the software NIC instead (one WRITE or READ work request per block, both engines' NICs in this
 * process, joined over loopback TCP). Every te4j run is checked byte for byte afterwards; a
 * mismatch is a FAILED row and exit code 1. Two rows time the same blocks as a reusable
 * {@link io.github.te4j.TransferList} ({@link ListBench}): its first post (prepare included) and a
 * repost of a list prepared before the timing.
 */
final class BatchBench
{
    static final long[][] SHAPES = {{4096, 4 << 10}, {1024, 16 << 10}, {256, 64 << 10}, {64, 1 << 20}};
    private static final Duration TIMEOUT = Duration.ofSeconds(60);
    private static final int LOOP = NativeBench.CopyBaselineModes.LOOP;
    /**
     * Requests submitted untimed before each te4j series. The submit path is a loop over the
     * requests; until C2 has compiled it (tens of thousands of passes) a run measures the
     * interpreter, not te4j: on the build machine 256 x 4 KiB submits took 128 us of CPU after 30
     * warm-up runs and 18 us after 2,000 (BatchSubmitCost, host platform).
     */
    private static final int WARM_UP_REQUESTS = 100_000;

    /** Untimed runs before a series of batches of n requests: at least 20, and WARM_UP_REQUESTS requests. */
    static int warmUpRuns(final int n)
    {
        return Math.max(20, (WARM_UP_REQUESTS + n - 1) / n);
    }

    private BatchBench()
    {
    }

    static int run(final BenchConfig config, final long regionBytes, final PrintStream stdout, final PrintStream err)
    {
        final Platform platform = config.resolvePlatform();
        final int iterations = Math.max(3, config.iterations);
        final BatchOutput out = new BatchOutput(config, config.rowPlatform(platform), iterations, stdout, err);
        final String space = "te4j-bench-batch-" + ProcessHandle.current().pid();
        boolean failed = false;
        try (TransferEngine initiator = TransferEngine.builder().platform(platform).device(0).build();
            TransferEngine owner = TransferEngine.builder().platform(platform).device(0).build();
            InMemorySegmentDirectory dir0 = InMemorySegmentDirectory.open(space);
            InMemorySegmentDirectory dir1 = InMemorySegmentDirectory.open(space))
        {
            final P2pTransport p0 = initiator.getOrCreateP2pTransport(2);
            final P2pTransport p1 = owner.getOrCreateP2pTransport(2);
            long maxTotal = 0;
            for (final long[] s : SHAPES)
            {
                maxTotal = Math.max(maxTotal, s[0] * s[1]);
            }
            final DeviceBuffer packed = p0.allocateBuffer(maxTotal);
            final DeviceBuffer region = p1.allocateBuffer(regionBytes);
            final TransferAgent agent = initiator.createTransferAgent(p0, "bench-initiator");
            final TransferAgent ownerAgent = owner.createTransferAgent(p1, "bench-owner");
            final RegisteredMemory local = agent.registerLocalMemory(packed);
            ownerAgent.registerLocalMemory(region);
            ownerAgent.publishSegment(dir1);
            final SegmentHandle seg = agent.openSegment("bench-owner", dir0, TIMEOUT);
            final long regionBase = region.address();
            final SegmentHandle rdmaSeg = config.transport() == TransportKind.RDMA_SOFT && platform == Platform.HOST
                ? openOverSoftNic(initiator, owner, agent, ownerAgent, packed, region, dir0, dir1) : null;
            // The baselines run on a stream of their own (CUDA refuses the legacy default stream).
            final OpStream baselineStream = initiator.createStream();
            final NativeBench.CopyBaseline baseline = NativeBench.CopyBaseline.create(platform.nativeId(), 0,
                baselineStream.nativeHandle());
            if (baseline == null || baseline.status() != 0)
            {
                err.println("te4j-bench: batch baselines unavailable: " + (baseline == null ? "null" : baseline.lastError()));
                return BenchMain.EXIT_FAILED;
            }
            out.printf(Locale.ROOT, "batch: %s, %d iterations per row (median), region %d MiB, blocks at random offsets%n",
                platform, iterations, regionBytes >> 20);
            out.printf(Locale.ROOT, "%-14s %-5s %-28s %12s %9s %8s%n", "shape", "op", "series", "median us", "GB/s",
                "vs base");
            final Random rnd = new Random(42);
            for (final long[] shape : SHAPES)
            {
                final int n = (int) shape[0];
                final long size = shape[1];
                final long[] offsets = scatter(rnd, n, size, regionBytes);
                fill(packed, region, n, size, offsets, rnd.nextLong());
                for (final boolean write : new boolean[] {true, false})
                {
                    final String label = n + " x " + human(size);
                    final String op = write ? "WRITE" : "READ";
                    final long[] dst = new long[n];
                    final long[] src = new long[n];
                    final long[] len = new long[n];
                    for (int i = 0; i < n; i++)
                    {
                        final long l = packed.address() + i * size;
                        final long r = regionBase + offsets[i];
                        dst[i] = write ? r : l;
                        src[i] = write ? l : r;
                        len[i] = size;
                    }
                    final List<TransferRequest> rs = new ArrayList<>();
                    for (int i = 0; i < n; i++)
                    {
                        rs.add(write ? TransferRequest.write(local, i * size, seg, offsets[i], size)
                            : TransferRequest.read(local, i * size, seg, offsets[i], size));
                    }
                    // Baseline first on the host: the memcpy loop the host platform is measured against.
                    final double base = baselineMedian(baseline, LOOP, dst, src, len, iterations);
                    final double te4j = te4jMedian(agent, rs, iterations);
                    final String bad = verify(packed, region, n, size, offsets, write);
                    failed |= bad != null;
                    final long total = n * size;
                    row(out, label, op, "te4j batch (submit..done)", te4j, total, base, bad);
                    fill(packed, region, n, size, offsets, rnd.nextLong());
                    final double bulk = te4jDescriptorsMedian(agent, rs, iterations);
                    final String badBulk = verify(packed, region, n, size, offsets, write);
                    failed |= badBulk != null;
                    row(out, label, op, "te4j batch, descriptors", bulk, total, base, badBulk);
                    fill(packed, region, n, size, offsets, rnd.nextLong());
                    final double[] list = ListBench.medians(agent, rs, iterations);
                    final String badList = verify(packed, region, n, size, offsets, write);
                    failed |= badList != null;
                    row(out, label, op, "te4j list, first post", list[0], total, base, badList);
                    row(out, label, op, "te4j list, repost", list[1], total, base, badList);
                    if (rdmaSeg != null)
                    {
                        final List<TransferRequest> rr = new ArrayList<>();
                        for (int i = 0; i < n; i++)
                        {
                            rr.add(write ? TransferRequest.write(local, i * size, rdmaSeg, offsets[i], size)
                                : TransferRequest.read(local, i * size, rdmaSeg, offsets[i], size));
                        }
                        fill(packed, region, n, size, offsets, rnd.nextLong());
                        final double soft = te4jMedian(agent, rr, iterations);
                        final String badSoft = verify(packed, region, n, size, offsets, write);
                        failed |= badSoft != null;
                        row(out, label, op, "te4j batch, soft NIC", soft, total, base, badSoft);
                    }
                    row(out, label, op, platform == Platform.HOST ? "memcpy loop" : "cudaMemcpyAsync per block",
                        base, total, base, null);
                    if (platform == Platform.CUDA)
                    {
                        row(out, label, op, "cudaMemcpyBatchAsync",
                            baselineMedian(baseline, NativeBench.CopyBaselineModes.BATCH_ASYNC, dst, src, len, iterations),
                            total, base, null);
                        // From the start of each region: the blocks' own first offset plus the
                        // total may run past the end of the region.
                        final long[] oneDst = {write ? regionBase : packed.address()};
                        final long[] oneSrc = {write ? packed.address() : regionBase};
                        row(out, label, op, "one contiguous copy",
                            baselineMedian(baseline, NativeBench.CopyBaselineModes.CONTIGUOUS, oneDst, oneSrc,
                                new long[] {total}, iterations),
                            total, base, null);
                    }
                }
            }
            out.println("vs base: the row's speed over the " + (platform == Platform.HOST ? "memcpy loop"
                : "per-block cudaMemcpyAsync loop") + " of the same blocks (above 1 = faster)");
        }
        out.finish();
        return failed ? BenchMain.EXIT_FAILED : 0;
    }

    /**
     * Connects a software NIC per engine (the initiator rank 0, the owner rank 1, through a file
     * exchange in a temporary directory), republishes the owner's segment with its RDMA keys and
     * opens it over RDMA.
     */
    private static SegmentHandle openOverSoftNic(final TransferEngine initiator, final TransferEngine owner,
        final TransferAgent agent, final TransferAgent ownerAgent, final DeviceBuffer packed, final DeviceBuffer region,
        final InMemorySegmentDirectory dir0, final InMemorySegmentDirectory dir1)
    {
        final RdmaTransport r0 = initiator.getOrCreateRdmaTransport("soft");
        final RdmaTransport r1 = owner.getOrCreateRdmaTransport("soft");
        final int ring = 2048;  // the largest shape's blocks all in flight
        r0.initialize(2, 1, ring);
        r1.initialize(2, 1, ring);
        r0.register(packed);
        r1.register(region);
        final java.nio.file.Path dir;
        try
        {
            dir = java.nio.file.Files.createTempDirectory("te4j-bench-batch-rdma");
        }
        catch (final java.io.IOException e)
        {
            throw new java.io.UncheckedIOException(e);
        }
        final java.util.concurrent.CompletableFuture<Void> ownerSide = java.util.concurrent.CompletableFuture.runAsync(() ->
        {
            try (HandleExchange e1 = FileExchange.builder().directory(dir).rank(1).worldSize(2).defaultTimeout(TIMEOUT)
                .build())
            {
                r1.connect(e1, TIMEOUT);
            }
        });
        try (HandleExchange e0 = FileExchange.builder().directory(dir).rank(0).worldSize(2).defaultTimeout(TIMEOUT).build())
        {
            r0.connect(e0, TIMEOUT);
        }
        try
        {
            ownerSide.get(TIMEOUT.toSeconds(), java.util.concurrent.TimeUnit.SECONDS);
        }
        catch (final InterruptedException | java.util.concurrent.ExecutionException
            | java.util.concurrent.TimeoutException e)
        {
            throw new IllegalStateException("the owner's software NIC did not connect: " + e, e);
        }
        ownerAgent.useRdma(r1);
        agent.useRdma(r0);
        ownerAgent.publishSegment(dir1);
        final SegmentHandle h = agent.openSegment("bench-owner", dir0, TIMEOUT);
        if (!h.isRdma())
        {
            throw new IllegalStateException(h + " was not opened over RDMA");
        }
        return h;
    }

    private static void row(final BatchOutput out, final String shape, final String op, final String series,
        final double ns, final long bytes, final double baseNs, final String failure)
    {
        out.row(shape, op, series, ns, bytes, baseNs, failure);
    }

    /**
     * The same batch added to {@link TransferDescriptors} (no object per request, filled inside
     * the timing as a caller would) and awaited with {@link TransferBatch#awaitDone}.
     */
    private static double te4jDescriptorsMedian(final TransferAgent agent, final List<TransferRequest> rs,
        final int iterations)
    {
        final int n = rs.size();
        final TransferDescriptors d = new TransferDescriptors(n);
        final TransferState[] states = new TransferState[n];
        final double[] t = new double[iterations];
        for (int it = -warmUpRuns(n); it < iterations; it++)
        {
            try (TransferBatch b = agent.allocateBatch(n))
            {
                final long t0 = System.nanoTime();
                d.clear();
                for (int i = 0; i < n; i++)
                {
                    final TransferRequest r = rs.get(i);
                    d.add(r.opcode(), r.local(), r.localOffset(), r.segment(), r.remoteOffset(), r.length());
                }
                b.submit(d, TIMEOUT);
                final boolean done = b.awaitDone(TIMEOUT);
                final long t1 = System.nanoTime();
                b.states(states);
                for (int i = 0; i < n; i++)
                {
                    if (!done || states[i] != TransferState.COMPLETED)
                    {
                        throw new IllegalStateException("request " + i + ": " + b.status(i));
                    }
                }
                if (it >= 0)
                {
                    t[it] = t1 - t0;
                }
            }
        }
        Arrays.sort(t);
        return t[iterations / 2];
    }

    private static double te4jMedian(final TransferAgent agent, final List<TransferRequest> rs, final int iterations)
    {
        final double[] t = new double[iterations];
        for (int it = -warmUpRuns(rs.size()); it < iterations; it++)
        {
            try (TransferBatch b = agent.allocateBatch(rs.size()))
            {
                final long t0 = System.nanoTime();
                b.submit(rs, TIMEOUT);
                final List<TransferStatus> st = b.await(TIMEOUT);
                final long t1 = System.nanoTime();
                for (int i = 0; i < st.size(); i++)
                {
                    if (st.get(i).state() != TransferState.COMPLETED)
                    {
                        throw new IllegalStateException("request " + i + ": " + st.get(i));
                    }
                }
                if (it >= 0)
                {
                    t[it] = t1 - t0;
                }
            }
        }
        Arrays.sort(t);
        return t[iterations / 2];
    }

    private static double baselineMedian(final NativeBench.CopyBaseline b, final int how, final long[] dst,
        final long[] src, final long[] len, final int iterations)
    {
        final double[] t = new double[iterations];
        final long[] ns = new long[1];
        for (int it = -1; it < iterations; it++)
        {
            final int st = b.copyBlocks(how, dst, src, len, dst.length, TIMEOUT.toNanos(), ns);
            if (st != 0)
            {
                throw new IllegalStateException("baseline " + how + ": " + b.lastError());
            }
            if (it >= 0)
            {
                t[it] = ns[0];
            }
        }
        Arrays.sort(t);
        return t[iterations / 2];
    }

    /** n distinct block-aligned slots of the region, in random order. */
    private static long[] scatter(final Random rnd, final int n, final long size, final long region)
    {
        final int slots = (int) (region / size);
        final List<Integer> all = new ArrayList<>();
        for (int i = 0; i < slots; i++)
        {
            all.add(i);
        }
        Collections.shuffle(all, rnd);
        final long[] out = new long[n];
        for (int i = 0; i < n; i++)
        {
            out[i] = all.get(i) * size;
        }
        return out;
    }

    private static void fill(final DeviceBuffer packed, final DeviceBuffer region, final int n, final long size,
        final long[] offsets, final long seed)
    {
        final Random r = new Random(seed);
        final byte[] b = new byte[(int) size];
        for (int i = 0; i < n; i++)
        {
            r.nextBytes(b);
            packed.write(i * size, b);
            r.nextBytes(b);
            region.write(offsets[i], b);
        }
    }

    /** After a WRITE the region's blocks equal the packed ones; after a READ the packed equal the region's. */
    private static String verify(final DeviceBuffer packed, final DeviceBuffer region, final int n, final long size,
        final long[] offsets, final boolean write)
    {
        for (int i = 0; i < n; i++)
        {
            final byte[] a = packed.read(i * size, (int) size);
            final byte[] b = region.read(offsets[i], (int) size);
            if (!Arrays.equals(a, b))
            {
                return "block " + i + " differs after the " + (write ? "WRITE" : "READ");
            }
        }
        return null;
    }

    private static String human(final long bytes)
    {
        return bytes >= 1 << 20 ? (bytes >> 20) + " MiB" : (bytes >> 10) + " KiB";
    }
}
