package io.github.te4j;

import io.github.te4j.check.Patterns;
import io.github.te4j.exchange.HandleExchange;
import java.time.Duration;

/**
 * One rank of {@link HostHandOffTest}'s multi-process cases (key=value arguments: rank, world,
 * port, mode, rounds). pingpong: ranks 0 and 1 alternate putWithSignal, the sender first sleeping
 * long enough for the receiver's wait to park; alltoall: every rank sends a block to every
 * other per round and waits for all arrivals, each round verified. Exits 0 after "OK rank r done".
 */
public final class HostHandOffWorker
{
    private static final int BLOCK = 4096;

    private HostHandOffWorker()
    {
    }

    public static void main(final String[] argv) throws Exception
    {
        final WorkerArgs a = WorkerArgs.parse(argv);
        final int rank = a.rank;
        final int world = a.world;
        final int rounds = Integer.parseInt(a.required("rounds"));
        final boolean pingPong = a.required("mode").equals("pingpong");
        final Duration timeout = Duration.ofSeconds(120);
        // Slot s receives rank s's block; then the signal word; the source after it.
        final long sig = (long)BLOCK * world;
        final long src = sig + 64;
        final long windowBytes = src + BLOCK;
        try (HandleExchange ex = a.tcpExchange(timeout);
            TransferEngine engine = a.engine())
        {
            final P2pTransport p2p = engine.getOrCreateP2pTransport(world);
            final DeviceBuffer window = p2p.allocateBuffer(windowBytes);
            final CommContext ctx = p2p.connect(window, ex, timeout);
            final OpStream stream = engine.createStream();
            if (pingPong)
            {
                pingPong(rank, rounds, window, ctx, stream, sig, src, timeout);
            }
            else
            {
                allToAll(rank, world, rounds, window, ctx, stream, sig, src, ex, timeout);
            }
            ex.barrier(timeout);
        }
        System.out.println("OK rank " + rank + " done");
    }

    private static void pingPong(final int rank, final int rounds, final DeviceBuffer window, final CommContext ctx,
        final OpStream stream, final long sig, final long src, final Duration timeout) throws InterruptedException
    {
        final int peer = 1 - rank;
        int received = 0;
        for (int round = 1; round <= rounds; round++)
        {
            final boolean sends = (round % 2 == 1) == (rank == 0);
            if (sends)
            {
                Patterns.write(window, src, BLOCK, seed(rank, peer, round));
                Thread.sleep(30);  // the peer's wait is parked by now
                stream.putWithSignal(ctx, peer, (long)BLOCK * rank, window, src, BLOCK, sig, 1);
                stream.synchronize(timeout);
            }
            else
            {
                stream.waitSignal(ctx, sig, ++received, timeout);
                stream.synchronize(timeout);
                final String bad = Patterns.verify(window, (long)BLOCK * peer, BLOCK, seed(peer, rank, round));
                P2pWorker.check(bad == null, "round " + round + ": data not there once the signal was: " + bad);
            }
        }
        System.out.println("OK " + rounds + " ping-pong rounds, every wait parked before its signal");
    }

    private static void allToAll(final int rank, final int world, final int rounds, final DeviceBuffer window,
        final CommContext ctx, final OpStream stream, final long sig, final long src, final HandleExchange ex,
        final Duration timeout)
    {
        for (int round = 1; round <= rounds; round++)
        {
            // Every rank has checked the previous round's slots before anyone overwrites them.
            ex.barrier(timeout);
            for (int i = 1; i < world; i++)
            {
                final int dst = (rank + i) % world;
                Patterns.write(window, src, BLOCK, seed(rank, dst, round));
                stream.putWithSignal(ctx, dst, (long)BLOCK * rank, window, src, BLOCK, sig, 1);
                // The source is rewritten for the next peer only after this put ran.
                stream.synchronize(timeout);
            }
            stream.waitSignal(ctx, sig, round * (world - 1), timeout);
            stream.synchronize(timeout);
            for (int s = 0; s < world; s++)
            {
                if (s != rank)
                {
                    final String bad = Patterns.verify(window, (long)BLOCK * s, BLOCK, seed(s, rank, round));
                    P2pWorker.check(bad == null, "round " + round + " block from rank " + s + ": " + bad);
                }
            }
        }
        System.out.println("OK " + rounds + " all-to-all rounds among " + world + " ranks on "
            + Runtime.getRuntime().availableProcessors() + " CPUs");
    }

    private static long seed(final int from, final int to, final int round)
    {
        return Patterns.seed(4242, from, to, round);
    }
}
