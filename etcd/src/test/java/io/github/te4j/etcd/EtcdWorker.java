package io.github.te4j.etcd;

import io.github.te4j.Te4jException;
import io.github.te4j.CommContext;
import io.github.te4j.DeviceBuffer;
import io.github.te4j.OpStream;
import io.github.te4j.P2pTransport;
import io.github.te4j.Platform;
import io.github.te4j.TransferEngine;
import io.github.te4j.check.Patterns;
import io.github.te4j.exchange.Exchanges;
import io.github.te4j.exchange.HandleExchange;
import io.github.te4j.PeerLostException;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

/**
 * One rank of {@link EtcdMultiProcessTest}, a child JVM. Arguments key=value: uri (any address
 * {@link Exchanges} opens), rank, world, mode, rounds, size. Every mode joins, times allGathers
 * of a 64-byte blob, exchanges host-platform window handles through the exchange and runs
 * put+signal from every rank to every other, checking the data. Then:
 * <ul>
 *   <li>{@code done}: a last barrier, exit 0;</li>
 *   <li>{@code survivor}: prints READY and waits in a barrier, which must end in a
 *       {@link PeerLostException}; prints {@code LOST rank=<r> at=<epoch ms>}, exit 0;</li>
 *   <li>{@code victim}: prints READY and reads standard input (the test kills or stops it there);
 *       after a line arrives it calls a barrier, which must fail because its lease is gone.</li>
 * </ul>
 * Any other outcome prints FAIL and exits non-zero.
 */
public final class EtcdWorker
{
    private EtcdWorker()
    {
    }

    public static void main(final String[] argv) throws Exception
    {
        final Map<String, String> a = new HashMap<>();
        for (final String s : argv)
        {
            final int eq = s.indexOf('=');
            a.put(s.substring(0, eq), s.substring(eq + 1));
        }
        final String uri = a.get("uri");
        final int rank = Integer.parseInt(a.get("rank"));
        final int world = Integer.parseInt(a.get("world"));
        final String mode = a.getOrDefault("mode", "done");
        final int rounds = Integer.parseInt(a.getOrDefault("rounds", "20"));
        final long size = Long.parseLong(a.getOrDefault("size", "65536"));
        final Duration timeout = Duration.ofSeconds(300);
        final long slot = (size + 16 + 15) & ~15L;
        final long sigBase = slot * world;

        final long j0 = System.nanoTime();
        final HandleExchange ex = Exchanges.open(uri, rank, world);
        final long joinMicros = (System.nanoTime() - j0) / 1000;
        try (TransferEngine engine = TransferEngine.builder().platform(Platform.HOST).device(0).build())
        {
            ex.barrier(timeout);
            final long g0 = System.nanoTime();
            for (int i = 0; i < rounds; i++)
            {
                final byte[] mine = new byte[64];
                mine[0] = (byte) rank;
                mine[1] = (byte) i;
                final java.util.List<byte[]> all = ex.allGather(mine, timeout);
                for (int q = 0; q < world; q++)
                {
                    check(all.get(q)[0] == (byte) q && all.get(q)[1] == (byte) i, "allGather " + i + " slot " + q);
                }
            }
            final long gatherMicros = (System.nanoTime() - g0) / 1000 / Math.max(1, rounds);
            final P2pTransport p2p = engine.getOrCreateP2pTransport(world);
            final DeviceBuffer window = p2p.allocateBuffer(sigBase + 4L * world + 64);
            final DeviceBuffer staging = p2p.allocateBuffer(slot);
            final long c0 = System.nanoTime();
            final CommContext ctx = p2p.connect(window, ex, timeout);
            final long connectMicros = (System.nanoTime() - c0) / 1000;
            System.out.println("TIME rank " + rank + "/" + world + " join_us=" + joinMicros + " allgather_us="
                + gatherMicros + " connect_us=" + connectMicros + " via " + uri.substring(0, uri.indexOf(':')));
            final OpStream stream = engine.createStream();
            window.fill(0, sigBase, Patterns.POISON);
            ex.barrier(timeout);
            for (int dst = 0; dst < world; dst++)
            {
                if (dst != rank)
                {
                    Patterns.write(staging, 0, size, Patterns.seed(7, rank, dst, 0));
                    stream.putWithSignal(ctx, dst, slot * rank, staging, 0, size, sigBase + 4L * rank, 1);
                    stream.synchronize(timeout);
                }
            }
            for (int src = 0; src < world; src++)
            {
                if (src != rank)
                {
                    stream.waitSignal(ctx, sigBase + 4L * src, 1, timeout);
                }
            }
            stream.synchronize(timeout);
            for (int src = 0; src < world; src++)
            {
                if (src != rank)
                {
                    final String bad = Patterns.verify(window, slot * src, size, Patterns.seed(7, src, rank, 0));
                    check(bad == null, "put+signal data from rank " + src + ": " + bad);
                }
            }
            System.out.println("OK put+signal " + size + " B from " + (world - 1) + " peers over " + uri.substring(0,
                uri.indexOf(':')));
            ex.barrier(timeout);
            switch (mode)
            {
                case "done":
                    ex.barrier(timeout);
                    break;
                case "survivor":
                    System.out.println("READY");
                    System.out.flush();
                    try
                    {
                        ex.barrier(timeout);
                        check(false, "the barrier completed although a rank was gone");
                    }
                    catch (final PeerLostException e)
                    {
                        System.out.println("LOST rank=" + e.rank() + " at=" + System.currentTimeMillis() + " " + e.getMessage());
                    }
                    break;
                case "victim":
                    System.out.println("READY");
                    System.out.flush();
                    System.in.read();
                    try
                    {
                        ex.barrier(timeout);
                        check(false, "the barrier of a rank whose lease ran out completed");
                    }
                    catch (final Te4jException e)
                    {
                        check(e.getMessage().contains("lost its lease"), "unexpected failure: " + e);
                        System.out.println("VICTIM " + e.getMessage());
                    }
                    break;
                default:
                    check(false, "unknown mode " + mode);
            }
        }
        finally
        {
            ex.close();
        }
        System.out.println("OK rank " + rank + " " + mode);
        System.out.flush();
        System.exit(0);
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
}
