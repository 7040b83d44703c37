package io.github.te4j.bench;

import io.github.te4j.DeviceBuffer;
import io.github.te4j.P2pTransport;
import io.github.te4j.Platform;
import io.github.te4j.RegisteredMemory;
import io.github.te4j.SegmentHandle;
import io.github.te4j.TransferAgent;
import io.github.te4j.TransferBatch;
import io.github.te4j.TransferDescriptors;
import io.github.te4j.TransferEngine;
import io.github.te4j.TransferRequest;
import io.github.te4j.TransferState;
import io.github.te4j.exchange.InMemorySegmentDirectory;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Random;

/**
 * The host side of one transfer batch, split where the time goes: allocating it, the submit call
 * (wall time and the calling thread's CPU time, which a loaded machine does not inflate as
 * much), the wait until every request is final, and closing it, for one shape of N requests of S bytes (WRITE) at random offsets
 * of another engine's segment, submitted as a {@code List<TransferRequest>} (built before the
 * timing) or as {@link TransferDescriptors} (filled inside it). Medians of the iterations after
 * the same warm-up as the batch bench's ({@code BatchBench.warmUpRuns}). A bench tool, not a
 * test: {@code java -cp te4j-bench.jar
 * io.github.te4j.bench.BatchSubmitCost [platform] [n] [bytes] [iterations] [requests|descriptors|list]}; the
 * mode {@code list} times a reusable transfer list instead ({@link ListBench#submitCost}): its
 * prepare and first post per request, and a repost.
 */
public final class BatchSubmitCost
{
    private static final Duration T = Duration.ofSeconds(60);
    private static final long REGION = 256L << 20;

    private BatchSubmitCost()
    {
    }

    public static void main(final String[] args)
    {
        final Platform platform = args.length > 0 ? Platform.valueOf(args[0].toUpperCase(Locale.ROOT)) : Platform.HOST;
        final int n = args.length > 1 ? Integer.parseInt(args[1]) : 4096;
        final long size = args.length > 2 ? Long.parseLong(args[2]) : 64;
        final int iterations = args.length > 3 ? Integer.parseInt(args[3]) : 1000;
        final boolean descriptors = args.length > 4 && args[4].equals("descriptors");
        final boolean list = args.length > 4 && args[4].equals("list");
        final ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        final String space = "te4j-batch-submit-cost-" + ProcessHandle.current().pid();
        try (TransferEngine e0 = TransferEngine.builder().platform(platform).device(0).build();
            TransferEngine e1 = TransferEngine.builder().platform(platform).device(0).build();
            InMemorySegmentDirectory d0 = InMemorySegmentDirectory.open(space);
            InMemorySegmentDirectory d1 = InMemorySegmentDirectory.open(space))
        {
            final P2pTransport p0 = e0.getOrCreateP2pTransport(2);
            final P2pTransport p1 = e1.getOrCreateP2pTransport(2);
            final DeviceBuffer packed = p0.allocateBuffer(n * size);
            final DeviceBuffer region = p1.allocateBuffer(REGION);
            final TransferAgent agent = e0.createTransferAgent(p0, "cost-initiator");
            final TransferAgent owner = e1.createTransferAgent(p1, "cost-owner");
            final RegisteredMemory local = agent.registerLocalMemory(packed);
            owner.registerLocalMemory(region);
            owner.publishSegment(d1);
            final SegmentHandle seg = agent.openSegment("cost-owner", d0, T);
            final Random rnd = new Random(1);
            final long slots = REGION / size;
            final List<TransferRequest> rs = new ArrayList<>();
            for (int i = 0; i < n; i++)
            {
                rs.add(TransferRequest.write(local, i * size, seg, (long) (rnd.nextDouble() * slots) * size, size));
            }
            if (list)
            {
                System.out.printf(Locale.ROOT, "%s %d x %d B WRITE, %s%n", platform, n, size,
                    ListBench.submitCost(agent, rs, iterations));
                return;
            }
            final TransferDescriptors d = new TransferDescriptors(n);
            final TransferState[] states = new TransferState[n];
            final int warmUp = BatchBench.warmUpRuns(n);
            final long[] wall = new long[iterations];
            final long[] cpu = new long[iterations];
            final long[] wait = new long[iterations];
            final long[] alloc = new long[iterations];
            final long[] close = new long[iterations];
            for (int it = -warmUp; it < iterations; it++)
            {
                final long a0 = System.nanoTime();
                final TransferBatch b = agent.allocateBatch(n);
                final long a1 = System.nanoTime();
                try
                {
                    final long c0 = mx.getCurrentThreadCpuTime();
                    final long t0 = System.nanoTime();
                    if (descriptors)
                    {
                        d.clear();
                        for (int i = 0; i < n; i++)
                        {
                            final TransferRequest r = rs.get(i);
                            d.add(r.opcode(), r.local(), r.localOffset(), r.segment(), r.remoteOffset(), r.length());
                        }
                        b.submit(d, T);
                    }
                    else
                    {
                        b.submit(rs, T);
                    }
                    final long t1 = System.nanoTime();
                    final long c1 = mx.getCurrentThreadCpuTime();
                    final boolean done = b.awaitDone(T);
                    final long t2 = System.nanoTime();
                    b.states(states);
                    if (!done || Arrays.stream(states).anyMatch(s -> s != TransferState.COMPLETED))
                    {
                        throw new IllegalStateException("a request did not complete: " + b.statuses());
                    }
                    if (it >= 0)
                    {
                        wall[it] = t1 - t0;
                        cpu[it] = c1 - c0;
                        wait[it] = t2 - t1;
                        alloc[it] = a1 - a0;
                    }
                }
                finally
                {
                    final long z0 = System.nanoTime();
                    b.close();
                    if (it >= 0)
                    {
                        close[it] = System.nanoTime() - z0;
                    }
                }
            }
            System.out.printf(Locale.ROOT, "%s %d x %d B WRITE, %s: allocateBatch %.1f us, submit %.1f us (CPU %.1f us,"
                + " %.1f ns per request), wait %.1f us, close %.1f us (medians of %d)%n", platform, n, size,
                descriptors ? "descriptors" : "request list", median(alloc) / 1e3, median(wall) / 1e3, median(cpu) / 1e3,
                median(cpu) / n, median(wait) / 1e3, median(close) / 1e3, iterations);
        }
    }

    private static double median(final long[] v)
    {
        final long[] s = v.clone();
        Arrays.sort(s);
        return s[s.length / 2];
    }
}
