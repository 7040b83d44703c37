package io.github.te4j;

import io.github.te4j.check.Patterns;
import io.github.te4j.exchange.HandleExchange;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * One rank of {@link NotificationMultiProcessTest}, a child JVM on the host platform. Arguments
 * key=value: rank, world (2), port, session, mode:
 * <ul>
 * <li>{@code stream}: rank 1 writes {@code parts} parts of random data into rank 0's poisoned
 * segment, each with a notification; rank 0 checks that they come in order and that each part's
 * bytes are there when its notification comes.</li>
 * <li>{@code lost}: rank 1 sends nine notifications to rank 0, which takes the first (so the ring
 * works), then rank 1 dies without closing anything; rank 0 must never deliver the other eight.</li>
 * </ul>
 * With {@code platform=cuda} both ranks' segments are device memory of GPU 0 (the notification
 * areas stay host memory). With {@code nic=soft[@IPv4]} each rank reaches the other's segment and notification area over
 * the software NIC only ({@link TransferAgent#useRdma}); host and bind: the rendezvous across
 * network namespaces. Prints "OK ..." lines and exits 0 when every check held.
 */
public final class NotificationWorker
{
    static final Duration TIMEOUT = Duration.ofSeconds(60);
    static final long SLOT = 1L << 20;

    private NotificationWorker()
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
        final int rank = Integer.parseInt(a.get("rank"));
        final int port = Integer.parseInt(a.get("port"));
        final long session = Long.parseLong(a.get("session"));
        final String mode = a.get("mode");
        final int parts = Integer.parseInt(a.getOrDefault("parts", "64"));
        final String host = a.getOrDefault("host", "127.0.0.1");
        final HandleExchange ex = io.github.te4j.rendezvous.Rendezvous.builder().rank(rank).worldSize(2)
            .endpoint(host, port).bindAddress(a.getOrDefault("bind", host)).connectTimeout(TIMEOUT)
            .defaultTimeout(TIMEOUT).build();
        final TransferEngine engine = a.getOrDefault("platform", "host").equals("cuda")
            ? TransferEngine.builder().platform(Platform.CUDA).device(0).build()
            : TransferEngine.builder().platform(Platform.HOST).build();
        final P2pTransport p2p = engine.getOrCreateP2pTransport(2);
        final DeviceBuffer buffer = p2p.allocateBuffer(parts * SLOT);
        final TransferAgent agent = engine.createTransferAgent(p2p, "rank" + rank);
        final RegisteredMemory mine = agent.registerLocalMemory(buffer);
        final Notifications inbox = agent.notifications();
        buffer.fill(0, parts * SLOT, Patterns.POISON);
        if (a.containsKey("nic"))
        {
            // The other rank's segment, and its notification area, only over the software NIC.
            final RdmaTransport rdma = engine.getOrCreateRdmaTransport(a.get("nic"));
            rdma.initialize(2, 1, 64);
            rdma.register(buffer);
            rdma.connect(ex, TIMEOUT);
            agent.useRdma(rdma);
        }
        agent.publishSegment(ex, TIMEOUT);
        System.out.println("OK rank " + rank + " published");
        if (mode.equals("stream"))
        {
            stream(rank, ex, agent, buffer, mine, inbox, session, parts);
        }
        else
        {
            lost(rank, ex, agent, inbox);
            System.out.println("OK rank " + rank + " done");
            System.out.flush();
            Runtime.getRuntime().halt(0);  // the exchange lost a rank: closing it would report that
        }
        agent.close();
        engine.close();
        ex.close();
        System.out.println("OK rank " + rank + " done");
    }

    private static long length(final long session, final int i)
    {
        return 1 + Math.floorMod(Patterns.mix(session + i), SLOT);
    }

    private static void stream(final int rank, final HandleExchange ex, final TransferAgent agent,
        final DeviceBuffer buffer, final RegisteredMemory mine, final Notifications inbox, final long session,
        final int parts)
    {
        if (rank == 1)
        {
            final SegmentHandle peer = agent.openSegment("rank0");
            check(peer.isRdma() == (agent.rdma() != null), "rank 0's segment is reached " + (peer.isRdma() ? "over RDMA"
                : "mapped"));
            try (TransferBatch b = agent.allocateBatch(parts))
            {
                for (int i = 0; i < parts; i++)
                {
                    final long len = length(session, i);
                    Patterns.write(buffer, i * SLOT, len, Patterns.seed(session, 1, 0, i));
                    b.submit(List.of(TransferRequest.write(mine, i * SLOT, peer, i * SLOT, len)),
                        ByteBuffer.allocate(12).putInt(i).putLong(len).array(), TIMEOUT);
                }
                if (!b.awaitDone(TIMEOUT))
                {
                    throw new AssertionError("the batch did not finish");
                }
            }
            System.out.println("OK rank 1 sent " + parts + " parts with notifications");
        }
        else
        {
            for (int i = 0; i < parts; i++)
            {
                final Notification n = inbox.take(TIMEOUT);
                final ByteBuffer m = ByteBuffer.wrap(n.message());
                final int index = m.getInt();
                final long len = m.getLong();
                check(index == i && len == length(session, i) && n.sender().equals("rank1"),
                    "notification " + i + ": index " + index + ", length " + len + ", from " + n.sender());
                final String bad = Patterns.verify(buffer, i * SLOT, len, Patterns.seed(session, 1, 0, i));
                check(bad == null, "part " + i + " when its notification came: " + bad);
                final String past = Patterns.verifyPoison(buffer, i * SLOT + len, (int) Math.min(64, SLOT - len));
                check(past == null, "part " + i + ": " + past);
            }
            check(inbox.poll().isEmpty(), "a notification more than was sent");
            System.out.println("OK rank 0 received " + parts + " notifications in order, each after its data");
        }
        ex.barrier(TIMEOUT);
    }

    private static void lost(final int rank, final HandleExchange ex, final TransferAgent agent,
        final Notifications inbox) throws Exception
    {
        final List<byte[]> pids = ex.allGather(ByteBuffer.allocate(8).putLong(ProcessHandle.current().pid()).array(),
            TIMEOUT);
        if (rank == 1)
        {
            for (int i = 0; i < 9; i++)
            {
                agent.sendNotification("rank0", new byte[] {(byte) i}, TIMEOUT);
            }
            ex.barrier(TIMEOUT);
            System.out.println("OK rank 1 sent 9 notifications and dies");
            System.out.println("OK rank 1 done");
            System.out.flush();
            Runtime.getRuntime().halt(0);
        }
        final Notification first = inbox.take(TIMEOUT);
        check(first.message()[0] == 0 && first.sender().equals("rank1"), "first notification: " + first);
        ex.barrier(TIMEOUT);
        final long senderPid = ByteBuffer.wrap(pids.get(1)).getLong();
        final Optional<ProcessHandle> sender = ProcessHandle.of(senderPid);
        if (sender.isPresent())
        {
            sender.get().onExit().get(60, TimeUnit.SECONDS);
        }
        final RdmaTransport rdma = agent.rdma();
        final long end = System.nanoTime() + TIMEOUT.toNanos();
        while (rdma != null && (rdma.lostPeers() & 2) == 0)
        {
            // Over RDMA the loss is known once the connection to rank 1 is seen broken.
            check(System.nanoTime() < end, "rank 1's exit was not seen by the software NIC");
            Thread.sleep(10);
        }
        final Optional<Notification> after = inbox.poll();
        check(after.isEmpty(), "a notification of a lost sender was delivered: " + after);
        System.out.println("OK rank 0 delivered nothing of the lost sender's 8 pending notifications");
    }

    private static void check(final boolean ok, final String what)
    {
        if (!ok)
        {
            throw new AssertionError(what);
        }
    }
}
