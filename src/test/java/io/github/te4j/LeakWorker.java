package io.github.te4j;

import io.github.te4j.launcher.DeviceMap;
import io.github.te4j.exchange.HandleExchange;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * One rank of {@link LeakTest#hostCyclesAcrossProcesses}: arguments rank world port platform
 * cycles. Each cycle builds an engine, transport, buffer and stream, all-gathers the handles over
 * the rendezvous (kept for the whole run), imports, moves data, barriers, closes. Compares its
 * own fds, threads, te4j mappings and /dev/shm before and after; prints "OK rank N no leak".
 */
public final class LeakWorker
{
    private LeakWorker()
    {
    }

    public static void main(final String[] a) throws Exception
    {
        final int rank = Integer.parseInt(a[0]);
        final int world = Integer.parseInt(a[1]);
        final int port = Integer.parseInt(a[2]);
        final Platform platform = Platform.valueOf(a[3]);
        final int cycles = Integer.parseInt(a[4]);
        try (HandleExchange ex = TestExchanges.tcp(rank, world, port, Duration.ofSeconds(60)))
        {
            cycle(ex, rank, world, platform, 0);
            final ResourceCounts before = ResourceCounts.now();
            for (int i = 1; i <= cycles; i++)
            {
                cycle(ex, rank, world, platform, i);
            }
            final ResourceCounts after = ResourceCounts.now();
            System.out.println("rank " + rank + ": " + before + " -> " + after);
            if (after.fds != before.fds || after.threads != before.threads || after.te4jMaps != before.te4jMaps
                || after.shmEntries != before.shmEntries)
            {
                System.out.println("LEAK rank " + rank);
                System.exit(1);
            }
        }
        System.out.println("OK rank " + rank + " no leak after " + cycles + " cycles");
    }

    private static void cycle(final HandleExchange ex, final int rank, final int world, final Platform platform,
        final int i)
    {
        try (TransferEngine engine = TransferEngine.builder().platform(platform)
            .device(platform == Platform.CUDA ? DeviceMap.deviceOf(rank) : 0).build())
        {
            final P2pTransport p2p = engine.getOrCreateP2pTransport(world);
            final DeviceBuffer window = p2p.allocateBuffer(65536 + 4096L * (i % 5));
            final List<IpcHandle> handles = new ArrayList<>();
            for (final byte[] b : ex.allGather(p2p.exportHandle(window).toBytes(), Duration.ofSeconds(60)))
            {
                handles.add(IpcHandle.fromBytes(b));
            }
            final CommContext ctx = p2p.importPeerHandles(window, rank, handles, (1L << world) - 1);
            final OpStream s = engine.createStream();
            final int next = (rank + 1) % world;
            s.putWithSignal(ctx, next, 4096, window, 8192, 4096, 0, 1);
            s.waitSignal(ctx, 0, 1, Duration.ofSeconds(30));
            s.synchronize(Duration.ofSeconds(30));
            // Nobody frees a buffer that a peer still maps for an operation.
            ex.barrier(Duration.ofSeconds(60));
        }
    }
}
