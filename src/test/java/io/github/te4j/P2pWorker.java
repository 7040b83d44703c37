package io.github.te4j;

import io.github.te4j.check.Patterns;
import io.github.te4j.exchange.HandleExchange;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * One rank of the multi-process P2P tests, run as a child JVM by {@link P2pMultiProcessTest}
 * (and by scripts/gpu-tests.sh on the GPU host). Arguments are key=value:
 * rank, world, port, platform (host|cuda), device, sizes (comma list), rounds, session, writers.
 * Prints "OK ..." lines and exits 0 when every check held; anything else exits non-zero.
 *
 * <p>Window layout: world slots of slotBytes (slot s receives rank s's data), then one signal
 * word per source rank, then one many-writer counter word.
 */
public final class P2pWorker
{
    private P2pWorker()
    {
    }

    public static void main(final String[] argv) throws Exception
    {
        final WorkerArgs a = WorkerArgs.parse(argv);
        final int rank = a.rank;
        final int world = a.world;
        final Platform platform = a.platform();
        final int device = a.device();
        final long[] sizes = a.sizes("16,4096,65536,1048576");
        final int rounds = a.getInt("rounds", 2);
        final long session = a.getLong("session", 12345);
        final int writes = a.getInt("writes", 1000);
        final Duration timeout = a.timeout(60);

        long slot = 16;
        for (final long s : sizes)
        {
            slot = Math.max(slot, (s + 16 + 15) & ~15L);
        }
        final long sigBase = slot * world;
        final long counter = sigBase + 4L * world;
        final long windowBytes = counter + 64;

        try (HandleExchange ex = a.tcpExchange(timeout);
            TransferEngine engine = a.engine())
        {
            final P2pTransport p2p = engine.getOrCreateP2pTransport(world);
            final DeviceBuffer window = p2p.allocateBuffer(windowBytes);
            final DeviceBuffer staging = p2p.allocateBuffer(slot);
            final CommContext ctx = p2p.connect(window, ex, timeout);
            ctx.verifyPeerAccess();
            final OpStream stream = engine.createStream();
            System.out.println("OK connected rank " + rank + "/" + world + " on " + platform + ":" + device
                + " window " + windowBytes + " B");

            // 1. put+signal of random data, every rank to every other, poisoned destinations.
            int round = 0;
            for (final long size : sizes)
            {
                for (int r = 0; r < rounds; r++, round++)
                {
                    window.fill(0, sigBase, Patterns.POISON);
                    ex.barrier(timeout);
                    for (int dst = 0; dst < world; dst++)
                    {
                        if (dst == rank)
                        {
                            continue;
                        }
                        Patterns.write(staging, 0, size, Patterns.seed(session, rank, dst, round));
                        stream.putWithSignal(ctx, dst, slot * rank, staging, 0, size, sigBase + 4L * rank, 1);
                        // the staging buffer is rewritten for the next peer only after this put ran
                        stream.synchronize(timeout);
                    }
                    for (int src = 0; src < world; src++)
                    {
                        if (src != rank)
                        {
                            stream.waitSignal(ctx, sigBase + 4L * src, round + 1, timeout);
                        }
                    }
                    stream.synchronize(timeout);
                    for (int src = 0; src < world; src++)
                    {
                        if (src == rank)
                        {
                            continue;
                        }
                        final String bad = Patterns.verify(window, slot * src, size, Patterns.seed(session, src, rank, round));
                        check(bad == null, "data from rank " + src + " size " + size + " round " + round + ": " + bad);
                        final String over = Patterns.verifyPoison(window, slot * src + size, 16);
                        check(over == null, "size " + size + " from rank " + src + ": " + over);
                    }
                    ex.barrier(timeout);
                }
                System.out.println("OK put+signal size " + size + " x" + rounds + " from " + (world - 1) + " peers");
            }

            // 2. many writers: every rank adds to every rank's counter; totals must be exact.
            ex.barrier(timeout);
            final int value = rank + 1;
            for (int i = 0; i < writes; i++)
            {
                for (int dst = 0; dst < world; dst++)
                {
                    stream.redAdd(ctx, dst, counter, value);
                }
            }
            stream.synchronize(timeout);
            final int expectedTotal = writes * world * (world + 1) / 2;
            stream.waitSignal(ctx, counter, expectedTotal, timeout);
            stream.synchronize(timeout);
            ex.barrier(timeout);
            final int total = readInt(window, counter);
            check(total == expectedTotal, "many-writer total " + total + " != " + expectedTotal);
            System.out.println("OK many-writer total " + total + " (" + world + " writers x " + writes + " adds)");

            // 3. signal semantics: adds from every rank, waited with >= (the word was not zero-started).
            final int sigBefore = readInt(window, sigBase + 4L * ((rank + 1) % world));
            ex.barrier(timeout);
            stream.signal(ctx, (rank + world - 1) % world, sigBase + 4L * rank, 5);
            stream.waitSignal(ctx, sigBase + 4L * ((rank + 1) % world), sigBefore + 5, timeout);
            stream.synchronize(timeout);
            System.out.println("OK signal add from rank " + ((rank + 1) % world));

            // 4. a wait that can never complete times out with a clear exception, and the stream survives.
            if (world > 1)
            {
                stream.waitSignal(ctx, counter, expectedTotal + 1000, Duration.ofMillis(200));
                try
                {
                    stream.synchronize(timeout);
                    check(false, "a wait for a signal nobody sends did not time out");
                }
                catch (final Te4jTimeoutException expected)
                {
                    System.out.println("OK timeout reported: " + expected.getMessage());
                }
                stream.synchronize(timeout);
            }
            // Nobody frees its window while a peer may still write into it.
            ex.barrier(timeout);
        }
        System.out.println("OK rank " + rank + " done");
    }

    static int readInt(final DeviceBuffer b, final long offset)
    {
        final byte[] x = b.read(offset, 4);
        return (x[0] & 0xff) | (x[1] & 0xff) << 8 | (x[2] & 0xff) << 16 | (x[3] & 0xff) << 24;
    }

    static void check(final boolean ok, final String what)
    {
        if (!ok)
        {
            System.out.println("FAIL " + what);
            System.out.flush();
            System.exit(2);
        }
    }

    /** Builds the argument list for one rank. */
    static List<String> args(final int rank, final int world, final int port, final Platform platform,
        final String sizes, final int rounds, final long session)
    {
        final List<String> l = new ArrayList<>();
        l.add("rank=" + rank);
        l.add("world=" + world);
        l.add("port=" + port);
        l.add("platform=" + platform.name().toLowerCase());
        l.add("sizes=" + sizes);
        l.add("rounds=" + rounds);
        l.add("session=" + session);
        return l;
    }
}
