package io.github.te4j;

import io.github.te4j.launcher.DeviceMap;
import io.github.te4j.exchange.HandleExchange;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

/**
 * One rank of the two-rank CUDA variants of {@link PeerFailureTest}, one JVM each, placed by
 * {@link DeviceMap} (GPUs 0 and 1, or both on GPU 0 where there is one; then rank 1's window
 * reaches rank 0 through CUDA IPC on that device).
 * Arguments: rank port mode dir detectSeconds waitSeconds memSlackBytes.
 *
 * <p>Ping-pong rounds first: rank 0 puts random data into rank 1's IPC-mapped window with a
 * signal, rank 1 echoes it back with a signal, rank 0 checks the echo. After {@link #ROUNDS}
 * rounds rank 1 (the victim) stops answering and streams large puts into rank 0's window until
 * the test kills it with SIGKILL. Rank 0 starts one more round: its put lands in rank 1's window,
 * then it waits for the echo signal that never comes, with a wait timeout of {@code waitSeconds}
 * (short: a spinning CUDA wait kernel cannot be aborted, so cleanup lasts until it ends) and a
 * synchronize deadline of {@code detectSeconds}. The dead peer must surface as PeerLostException
 * from the liveness check (PeerMonitor), not as the wait's own timeout (Te4jTimeoutException).
 * Then, by mode: {@code exit} releases everything and exits 0; {@code continue} re-imports with
 * only its own rank active (mask 0b01), puts random data plus a signal to itself, checks it, and
 * exits 0. Either way, rank 0 checks that releasing completes in bounded time and that free device
 * memory (cudaMemGetInfo) is back to its level before the engine was made (within the slack).
 * Where rank 1 shares rank 0's device, that level may or may not include rank 1's context (the two
 * start together), and the driver frees a killed process's memory only shortly after its death:
 * rank 0 then waits up to {@link #SHARED_FREE_SECONDS} for the level. The test checks the shared
 * device once more after both ranks are gone, against a level taken before either started.
 */
public final class PeerFailurePairWorker
{
    static final int ROUNDS = 3;
    private static final long MIB = 1L << 20;
    /** Window size: large enough that a leaked window shows in cudaMemGetInfo beyond the slack. */
    static final long WINDOW = 64 * MIB;
    private static final long SIG_PING = 0;
    private static final long SIG_ECHO = 4;
    private static final long SIG_SELF = 8;
    private static final long SRC = MIB;
    private static final long PING = 2 * MIB;
    private static final long ECHO = 3 * MIB;
    private static final long SELF = 4 * MIB;
    private static final int SLOT = (int)MIB;
    /** The victim's stream of puts into rank 0 (still running when it is killed). */
    private static final long STREAM_DST = 16 * MIB;
    private static final long STREAM_SRC = 32 * MIB;
    private static final long STREAM_BYTES = 16 * MIB;
    private static final Duration LONG = Duration.ofSeconds(60);
    /** How long rank 0 waits for the driver to free a killed rank's memory on a shared device. */
    static final int SHARED_FREE_SECONDS = 30;

    private PeerFailurePairWorker()
    {
    }

    public static void main(final String[] a) throws Exception
    {
        final int rank = Integer.parseInt(a[0]);
        final int port = Integer.parseInt(a[1]);
        final String mode = a[2];
        final Path dir = Path.of(a[3]);
        final Duration deadline = Duration.ofSeconds(Long.parseLong(a[4]));
        final Duration waitTimeout = Duration.ofSeconds(Long.parseLong(a[5]));
        final long memSlack = Long.parseLong(a[6]);
        final int world = 2;
        final HandleExchange ex = TestExchanges.tcp(rank, world, port, LONG);
        // Kernel images load lazily and stay: one warm-up cycle before the baseline (rank 0 only).
        final long freeBefore = rank == 0 ? warmUpThenFreeBytes() : 0;
        final int device = DeviceMap.deviceOf(rank);
        final boolean sharedDevice = DeviceMap.deviceOf(0) == DeviceMap.deviceOf(1);
        final TransferEngine engine = TransferEngine.builder().platform(Platform.CUDA).device(device).build();
        final P2pTransport p2p = engine.getOrCreateP2pTransport(world);
        final DeviceBuffer window = p2p.allocateBuffer(WINDOW);
        final List<IpcHandle> handles = new ArrayList<>();
        for (final byte[] b : ex.allGather(p2p.exportHandle(window).toBytes(), LONG))
        {
            handles.add(IpcHandle.fromBytes(b));
        }
        final CommContext ctx = p2p.importPeerHandles(window, rank, handles, 0b11);
        ex.barrier(LONG);
        OpStream stream = engine.createStream();
        if (rank == 1)
        {
            victim(dir, stream, ctx, window);
            return;  // not reached: the victim streams until SIGKILL
        }
        final long seed = System.nanoTime();
        System.out.println("rank 0 data seed " + seed);
        final Random random = new Random(seed);
        final byte[] data = new byte[SLOT];
        for (int round = 1; round <= ROUNDS; round++)
        {
            random.nextBytes(data);
            window.write(SRC, data);
            stream.putWithSignal(ctx, 1, PING, window, SRC, SLOT, SIG_PING, 1);
            stream.waitSignal(ctx, SIG_ECHO, round, LONG);
            stream.synchronize(LONG);
            if (!Arrays.equals(window.read(ECHO, SLOT), data))
            {
                throw new AssertionError("round " + round + ": the echo from rank 1 differs from what was put");
            }
        }
        // The last round: a put into rank 1's mapped window, then a wait on rank 1 that only its
        // death ends. The wait's own timeout would give Te4jTimeoutException, never PeerLostException.
        random.nextBytes(data);
        window.write(SRC, data);
        stream.putWithSignal(ctx, 1, PING, window, SRC, SLOT, SIG_PING, 1);
        stream.waitSignal(ctx, SIG_ECHO, ROUNDS + 1, waitTimeout);
        Files.writeString(dir.resolve("rank-0-blocked"), "");
        final long blockedAt = System.nanoTime();
        try
        {
            stream.synchronize(deadline);
            throw new AssertionError("synchronize returned although rank 1 never echoed round " + (ROUNDS + 1));
        }
        catch (final PeerLostException e)
        {
            System.out.println("te4j-peer-lost-epoch-ms " + System.currentTimeMillis());
            System.out.println("rank 0 got PeerLostException after " + ms(blockedAt) + " ms in synchronize (wait timeout "
                + waitTimeout.toMillis() + " ms, deadline " + deadline.toMillis() + " ms): " + e.getMessage());
            if (!e.getMessage().contains("rank 1 "))
            {
                throw new AssertionError("the exception does not name the lost rank 1", e);
            }
        }
        // Release what involves rank 1. The wait kernel spins until its own timeout: closing the
        // stream returns once it ended, so this is bounded by the wait timeout.
        final long releaseStart = System.nanoTime();
        stream.close();
        ctx.close();
        System.out.println("rank 0 closed the stream and the window in " + ms(releaseStart) + " ms");
        String how = "released everything after peer loss";
        if (mode.equals("continue"))
        {
            how = continueAlone(engine, p2p, window, handles, random);
        }
        final long closeStart = System.nanoTime();
        engine.close();
        final long closeMs = ms(closeStart);
        final long releaseMs = ms(releaseStart);
        System.out.println("rank 0 engine close took " + closeMs + " ms; release in all " + releaseMs + " ms");
        final long bound = waitTimeout.toMillis() + 15_000;
        if (releaseMs > bound)
        {
            throw new AssertionError("releasing took " + releaseMs + " ms, more than the wait timeout + 15 s (" + bound
                + " ms)");
        }
        closeQuietly(ex);
        long freeAfter = CudaMemInfo.freeBytes(0);
        final long freeEnd = System.nanoTime() + SHARED_FREE_SECONDS * 1_000_000_000L;
        while (sharedDevice && freeAfter < freeBefore - memSlack && System.nanoTime() < freeEnd)
        {
            Thread.sleep(200);
            freeAfter = CudaMemInfo.freeBytes(0);
        }
        System.out.println("rank 0 device 0 free memory: " + freeBefore + " B before the engine, " + freeAfter
            + " B after its close (slack " + memSlack + " B)");
        if (freeAfter < freeBefore - memSlack)
        {
            throw new AssertionError("device 0 lost " + (freeBefore - freeAfter) + " B after peer loss and close");
        }
        System.out.println("OK rank 0 " + how);
        System.exit(0);
    }

    /** Rank 1: echoes the ping-pong rounds, then streams puts into rank 0 until it is killed. */
    private static void victim(final Path dir, final OpStream stream, final CommContext ctx, final DeviceBuffer window)
        throws Exception
    {
        for (int round = 1; round <= ROUNDS; round++)
        {
            stream.waitSignal(ctx, SIG_PING, round, LONG);
            stream.putWithSignal(ctx, 0, ECHO, window, PING, SLOT, SIG_ECHO, 1);
            stream.synchronize(LONG);
        }
        for (long n = 1;; n++)
        {
            stream.put(ctx, 0, STREAM_DST, window, STREAM_SRC, STREAM_BYTES);
            stream.put(ctx, 0, STREAM_DST, window, STREAM_SRC, STREAM_BYTES);
            stream.synchronize(LONG);
            if (n == 1)
            {
                Files.writeString(dir.resolve("victim-streaming"), "" + ProcessHandle.current().pid());
            }
        }
    }

    /** Mode continue: own rank only (mask 0b01), put+signal to itself with random data, checked. */
    private static String continueAlone(final TransferEngine engine, final P2pTransport p2p, final DeviceBuffer window,
        final List<IpcHandle> handles, final Random random)
    {
        final long alone = 0b01;
        final CommContext ctx = p2p.importPeerHandles(window, 0, handles, alone);
        if (ctx.isActive(1))
        {
            throw new AssertionError("rank 1 is still active after the re-import with mask 0b01");
        }
        final OpStream stream = engine.createStream();
        try
        {
            stream.put(ctx, 1, SELF, window, SRC, SLOT);
            throw new AssertionError("a put to the lost rank 1 was accepted after the re-import");
        }
        catch (final IllegalArgumentException expected)
        {
            // rank 1 is not active any more
        }
        final byte[] data = new byte[SLOT];
        random.nextBytes(data);
        window.write(SRC, data);
        stream.putWithSignal(ctx, 0, SELF, window, SRC, SLOT, SIG_SELF, 1);
        stream.waitSignal(ctx, SIG_SELF, 1, LONG);
        stream.synchronize(LONG);
        if (!Arrays.equals(window.read(SELF, SLOT), data))
        {
            throw new AssertionError("the put to itself after the re-import delivered other data");
        }
        return "continued alone with mask 0x" + Long.toHexString(alone);
    }

    /** One cycle of everything rank 0 will use (own rank only), then the free memory of device 0. */
    private static long warmUpThenFreeBytes()
    {
        try (TransferEngine e = TransferEngine.builder().platform(Platform.CUDA).device(0).build())
        {
            final P2pTransport p2p = e.getOrCreateP2pTransport(2);
            final DeviceBuffer b = p2p.allocateBuffer(WINDOW);
            p2p.exportHandle(b);
            final CommContext ctx = p2p.importPeerHandles(b, 0, Arrays.asList(null, null), 0b01);
            final OpStream s = e.createStream();
            b.write(SRC, new byte[] {1, 2, 3, 4});
            s.putWithSignal(ctx, 0, SELF, b, SRC, 4, SIG_SELF, 1);
            s.put(ctx, 0, SELF, b, SRC, 4);
            s.waitSignal(ctx, SIG_SELF, 1, LONG);
            s.synchronize(LONG);
        }
        return CudaMemInfo.freeBytes(0);
    }

    private static long ms(final long sinceNanos)
    {
        return (System.nanoTime() - sinceNanos) / 1_000_000;
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
