package io.github.te4j;

import io.github.te4j.exchange.HandleExchange;
import io.github.te4j.rendezvous.Rendezvous;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * One rank of {@link RdmaPeerFailureTest}: ranks joined only by the software NIC (P2P to no
 * other rank). Arguments key=value: rank, world, port, port2 (the survivors' second rendezvous),
 * host (rendezvous address), bind, nic, mode (exit|continue), dir, deadline (seconds), idle
 * (true: survivors only wait, so a silent victim is noticed by keepalive, not by unacked data).
 *
 * <p>The last rank is the victim: it streams put+signal rounds into every other rank until the
 * test kills it. Each survivor, every round, puts into the victim's window and waits for the
 * victim's next signal; its synchronize deadline is {@code deadline} and the wait's own timeout
 * three times that, so only the loss detection can end the round in time. It must get
 * {@link PeerLostException} naming the victim; it prints the wall-clock time it got it
 * ({@code te4j-peer-lost-epoch-ms}). Then {@code exit}: release everything (threads and fds back
 * to their level before the engine) and exit 0; {@code continue}: recreate the queue pairs,
 * exchange metadata among the survivors over a new rendezvous, connect with the victim's bit
 * cleared and check put+signal data between the survivors.
 */
public final class RdmaPeerFailureWorker
{
    private static final long SLOT = 64 * 1024;
    private static final long SIG = 0;
    private static final Duration SETUP = Duration.ofSeconds(60);

    private RdmaPeerFailureWorker()
    {
    }

    public static void main(final String[] argv) throws Exception
    {
        final Map<String, String> a = new HashMap<>();
        for (final String s : argv)
        {
            a.put(s.substring(0, s.indexOf('=')), s.substring(s.indexOf('=') + 1));
        }
        final int rank = Integer.parseInt(a.get("rank"));
        final int world = Integer.parseInt(a.get("world"));
        final String host = a.getOrDefault("host", "127.0.0.1");
        final String bind = a.getOrDefault("bind", host);
        final Path dir = Path.of(a.get("dir"));
        final Duration deadline = Duration.ofSeconds(Long.parseLong(a.get("deadline")));
        final int victim = world - 1;
        final HandleExchange ex = Rendezvous.builder().rank(rank).worldSize(world)
            .endpoint(host, Integer.parseInt(a.get("port"))).bindAddress(bind).connectTimeout(SETUP)
            .defaultTimeout(SETUP).build();
        // One engine with a NIC first: the JVM and JavaCPP start threads and open jars on first use.
        try (TransferEngine warmUp = TransferEngine.builder().platform(Platform.HOST).build())
        {
            warmUp.getOrCreateRdmaTransport(a.getOrDefault("nic", "soft")).initialize(world, 1);
        }
        // Every rank has joined the rendezvous (its sockets and threads on rank 0 exist from here).
        ex.barrier(SETUP);
        final ResourceCounts before = ResourceCounts.now();
        final TransferEngine engine = TransferEngine.builder().platform(Platform.HOST).build();
        final P2pTransport p2p = engine.getOrCreateP2pTransport(world);
        final DeviceBuffer window = p2p.allocateBuffer(4096 + SLOT * world);
        final CommContext ctx = p2p.connect(window, ex, SETUP, 1L << rank);
        final RdmaTransport rdma = engine.getOrCreateRdmaTransport(a.getOrDefault("nic", "soft"));
        rdma.initialize(world, 1);
        rdma.register(window);
        rdma.connect(ex, SETUP);
        ctx.withRdma(rdma);
        OpStream stream = engine.createStream();
        if (rank == victim)
        {
            streamUntilKilled(dir, rank, world, window, ctx, stream);
        }
        final boolean idle = Boolean.parseBoolean(a.getOrDefault("idle", "false"));
        final long lostAt = awaitLoss(dir, rank, victim, deadline, idle, window, ctx, stream);
        System.out.println("te4j-peer-lost-epoch-ms " + lostAt);
        awaitEverySurvivorSawLoss(dir, rank, victim, SETUP);
        // (another survivor that already closed its engine may be lost too by now)
        check((rdma.lostPeers() & 1L << victim) != 0, "lostPeers 0x" + Long.toHexString(rdma.lostPeers())
            + " does not include the victim");
        // Release what involved the victim. Closing the stream abandons its wait on the dead peer.
        stream.close();
        ctx.close();
        if (a.get("mode").equals("exit"))
        {
            engine.close();
            checkReleased(before);
            closeQuietly(ex);
            System.out.println("OK rank " + rank + " released everything after peer loss");
            System.exit(0);
        }
        closeQuietly(ex);
        final long survivors = ((1L << world) - 1) & ~(1L << victim);
        try (HandleExchange ex2 = Rendezvous.builder().rank(rank).worldSize(world - 1)
            .endpoint(host, Integer.parseInt(a.get("port2"))).bindAddress(bind).connectTimeout(SETUP)
            .defaultTimeout(SETUP).build())
        {
            rdma.recreateQueuePairs();
            final List<RdmaMetadata> all = new ArrayList<>();
            for (final byte[] b : ex2.allGather(rdma.localMetadata().toBytes(), SETUP))
            {
                all.add(RdmaMetadata.fromBytes(b));
            }
            all.add(null);  // the victim
            rdma.connectPeers(rank, MetadataBytes.of(all), survivors);
            ex2.barrier(SETUP);
            final CommContext ctx2 = p2p.importPeerHandles(window, rank, Arrays.asList(new IpcHandle[world]),
                survivors, 1L << rank).withRdma(rdma);
            check(!ctx2.isActive(victim) && rdma.lostPeers() == 0, "after reconnecting: victim still active or lost");
            stream = engine.createStream();
            exchangeData(rank, victim, window, ctx2, stream);
            ex2.barrier(SETUP);  // nobody frees its window while a survivor may still write into it
        }
        engine.close();
        System.out.println("OK rank " + rank + " continued over RDMA with mask 0x" + Long.toHexString(survivors));
        System.exit(0);
    }

    /** The victim: put+signal rounds into every other rank, until SIGKILL. */
    private static void streamUntilKilled(final Path dir, final int rank, final int world, final DeviceBuffer window,
        final CommContext ctx, final OpStream stream) throws Exception
    {
        for (int round = 1;; round++)
        {
            for (int r = 0; r < world - 1; r++)
            {
                stream.putWithSignal(ctx, r, 4096 + SLOT * rank, window, 4096 + SLOT * rank, SLOT, SIG, 1);
            }
            stream.synchronize(SETUP);
            if (round == 1)
            {
                Files.writeString(dir.resolve("victim-streaming"), "" + ProcessHandle.current().pid());
            }
        }
    }

    /** A survivor: puts into the victim (unless idle) and waits for its rounds until the loss is reported; returns when. */
    private static long awaitLoss(final Path dir, final int rank, final int victim, final Duration deadline,
        final boolean idle, final DeviceBuffer window, final CommContext ctx, final OpStream stream) throws Exception
    {
        int expected = 0;
        try
        {
            for (;;)
            {
                expected++;
                if (!idle)
                {
                    stream.put(ctx, victim, 4096 + SLOT * rank, window, 4096 + SLOT * rank, SLOT);
                }
                // The wait alone outlasts the synchronize deadline (3x): only loss detection ends it in time.
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
            final long at = System.currentTimeMillis();
            System.out.println("rank " + rank + " got PeerLostException after round " + (expected - 1) + ": "
                + e.getMessage() + (e.getCause() == null ? "" : " [cause: " + e.getCause().getMessage() + "]"));
            check(e.getMessage().contains("rank " + victim + " ("), "the exception does not name the lost rank "
                + victim);
            return at;
        }
    }

    /**
     * Marks this survivor's detection in {@code dir}, then waits (bounded) for every other
     * survivor's (ranks below {@code victim}): nobody closes anything before all have seen the loss,
     * or a survivor that closed early would be reported lost itself by a slower one.
     */
    static void awaitEverySurvivorSawLoss(final Path dir, final int rank, final int victim, final Duration bound)
        throws Exception
    {
        Files.writeString(dir.resolve("rank-" + rank + "-saw-loss"), "");
        final long until = System.nanoTime() + bound.toNanos();
        for (int r = 0; r < victim; r++)
        {
            while (!Files.exists(dir.resolve("rank-" + r + "-saw-loss")))
            {
                check(System.nanoTime() < until, "survivor rank " + r + " did not report the loss within " + bound);
                Thread.sleep(5);
            }
        }
    }

    /** Put+signal of a per-rank pattern to every other survivor over RDMA; checks what arrived. */
    private static void exchangeData(final int rank, final int victim, final DeviceBuffer window,
        final CommContext ctx, final OpStream stream)
    {
        final long sig = 8;
        final byte[] data = pattern(rank);
        window.write(4096 + SLOT * rank, data);
        for (int r = 0; r < victim; r++)
        {
            if (r != rank)
            {
                check(ctx.routesOverRdma(r), "rank " + r + " is not reached over RDMA");
                stream.putWithSignal(ctx, r, 4096 + SLOT * rank, window, 4096 + SLOT * rank, data.length, sig, 1);
            }
        }
        stream.waitSignal(ctx, sig, victim - 1, SETUP);
        stream.synchronize(SETUP);
        for (int r = 0; r < victim; r++)
        {
            check(Arrays.equals(window.read(4096 + SLOT * r, data.length), pattern(r)),
                "data from surviving rank " + r + " is wrong after reconnecting");
        }
    }

    private static byte[] pattern(final int rank)
    {
        final byte[] b = new byte[(int)SLOT];
        for (int i = 0; i < b.length; i++)
        {
            b[i] = (byte)(i * 31 + rank * 7 + 1);
        }
        return b;
    }

    /** The NIC's threads and sockets are gone once the engine is closed (the JVM's may only have ended). */
    private static void checkReleased(final ResourceCounts before) throws Exception
    {
        ResourceCounts after = ResourceCounts.now();
        for (int i = 0; i < 100 && (after.threads > before.threads || after.fds > before.fds); i++)
        {
            Thread.sleep(50);
            after = ResourceCounts.now();
        }
        System.out.println("resources before the engine: " + before + ", after closing it: " + after);
        if (after.threads > before.threads || after.fds > before.fds)
        {
            new ProcessBuilder("sh", "-c", "cat /proc/" + ProcessHandle.current().pid() + "/task/*/comm; ls -l /proc/"
                + ProcessHandle.current().pid() + "/fd").inheritIO().start().waitFor();
        }
        check(after.threads <= before.threads && after.fds <= before.fds, "threads or fds left after close");
    }

    private static void check(final boolean ok, final String what)
    {
        if (!ok)
        {
            throw new AssertionError(what);
        }
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
