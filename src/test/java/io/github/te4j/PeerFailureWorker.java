package io.github.te4j;

import io.github.te4j.launcher.DeviceMap;
import io.github.te4j.exchange.HandleExchange;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * One rank of {@link PeerFailureTest}. Arguments: rank world port platform mode dir waitSeconds.
 * The last rank is the victim: it streams put+signal rounds to every other rank until the test
 * kills it with SIGKILL. The survivors wait for each round's signal with a long wait timeout but
 * a synchronize deadline of {@code waitSeconds}: only the liveness check (PeerMonitor) can turn
 * the dead victim into PeerLostException before that deadline. Then, by mode:
 * {@code exit} releases everything and exits 0; {@code continue} re-imports the handles it has with
 * the victim's bit cleared and moves data between the survivors.
 */
public final class PeerFailureWorker
{
    private static final long SLOT = 64 * 1024;
    private static final long SIG = 0;

    private PeerFailureWorker()
    {
    }

    public static void main(final String[] a) throws Exception
    {
        final int rank = Integer.parseInt(a[0]);
        final int world = Integer.parseInt(a[1]);
        final int port = Integer.parseInt(a[2]);
        final Platform platform = Platform.valueOf(a[3]);
        final String mode = a[4];
        final Path dir = Path.of(a[5]);
        final Duration deadline = Duration.ofSeconds(Long.parseLong(a[6]));
        final int victim = world - 1;
        final long windowBytes = 4096 + SLOT * world;
        final HandleExchange ex = TestExchanges.tcp(rank, world, port, Duration.ofSeconds(60));
        final TransferEngine engine = TransferEngine.builder().platform(platform)
            .device(platform == Platform.CUDA ? DeviceMap.deviceOf(rank) : 0).build();
        final P2pTransport p2p = engine.getOrCreateP2pTransport(world);
        final DeviceBuffer window = p2p.allocateBuffer(windowBytes);
        final List<IpcHandle> handles = new ArrayList<>();
        for (final byte[] b : ex.allGather(p2p.exportHandle(window).toBytes(), Duration.ofSeconds(60)))
        {
            handles.add(IpcHandle.fromBytes(b));
        }
        final long all = (1L << world) - 1;
        final CommContext ctx = p2p.importPeerHandles(window, rank, handles, all);
        ex.barrier(Duration.ofSeconds(60));
        OpStream stream = engine.createStream();
        if (rank == victim)
        {
            // Transfers in flight until SIGKILL; never returns normally.
            for (int round = 1;; round++)
            {
                for (int r = 0; r < victim; r++)
                {
                    stream.putWithSignal(ctx, r, 4096 + SLOT * rank, window, 4096, SLOT, SIG, 1);
                }
                stream.synchronize(Duration.ofSeconds(60));
                if (round == 1)
                {
                    Files.writeString(dir.resolve("victim-streaming"), "" + ProcessHandle.current().pid());
                }
                Thread.sleep(5);
            }
        }
        int expected = 0;
        try
        {
            for (;;)
            {
                expected++;
                // The wait alone would outlast the synchronize deadline (3x): only liveness can end it in time.
                stream.waitSignal(ctx, SIG, expected, deadline.multipliedBy(3));
                stream.synchronize(deadline);
                if (expected == 3)
                {
                    Files.writeString(dir.resolve("rank-" + rank + "-receiving"), "");
                }
            }
        }
        catch (final PeerLostException e)
        {
            System.out.println("rank " + rank + " got PeerLostException after round " + (expected - 1) + ": "
                + e.getMessage());
            if (!e.getMessage().contains("rank " + victim))
            {
                throw new AssertionError("the exception does not name the lost rank " + victim);
            }
        }
        RdmaPeerFailureWorker.awaitEverySurvivorSawLoss(dir, rank, victim, Duration.ofSeconds(60));
        // Release what involved the victim. Closing the stream abandons the wait on the dead peer.
        stream.close();
        ctx.close();
        if (mode.equals("exit"))
        {
            engine.close();
            closeQuietly(ex);
            System.out.println("OK rank " + rank + " released everything after peer loss");
            System.exit(0);
        }
        // Continue with the survivors: same window, same handles, the victim's bit cleared.
        final long survivors = all & ~(1L << victim);
        final CommContext ctx2 = p2p.importPeerHandles(window, rank, handles, survivors);
        stream = engine.createStream();
        final byte[] data = new byte[4096];
        Arrays.fill(data, (byte)(rank + 1));
        window.write(4096 + SLOT * rank, data);
        final long sig2 = 4;
        for (int r = 0; r < victim; r++)
        {
            if (r != rank)
            {
                stream.putWithSignal(ctx2, r, 4096 + SLOT * rank, window, 4096 + SLOT * rank, data.length, sig2, 1);
            }
        }
        stream.waitSignal(ctx2, sig2, victim - 1, Duration.ofSeconds(60));
        stream.synchronize(Duration.ofSeconds(60));
        for (int r = 0; r < victim; r++)
        {
            final byte[] got = window.read(4096 + SLOT * r, data.length);
            for (final byte b : got)
            {
                if (b != (byte)(r + 1))
                {
                    throw new AssertionError("data from surviving rank " + r + " is wrong after re-import");
                }
            }
        }
        // Nobody frees before every survivor has read: one more signal round, then close.
        final long sig3 = 8;
        for (int r = 0; r < victim; r++)
        {
            if (r != rank)
            {
                stream.signal(ctx2, r, sig3, 1);
            }
        }
        stream.waitSignal(ctx2, sig3, victim - 1, Duration.ofSeconds(60));
        stream.synchronize(Duration.ofSeconds(60));
        engine.close();
        closeQuietly(ex);
        System.out.println("OK rank " + rank + " continued with mask 0x" + Long.toHexString(survivors));
        System.exit(0);
    }

    private static void closeQuietly(final AutoCloseable c)
    {
        try
        {
            c.close();
        }
        catch (final Exception e)
        {
            // the rendezvous may report the lost rank again while closing; nothing to release
        }
    }
}
