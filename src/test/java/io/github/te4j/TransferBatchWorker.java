package io.github.te4j;

import io.github.te4j.check.Patterns;
import io.github.te4j.exchange.HandleExchange;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * One rank of {@link TransferBatchMultiProcessTest}, a child JVM. Arguments key=value: rank,
 * world, port, session, mode (random | kill | rdmaerror), requests, maxLength; nic (soft,
 * soft@IPv4: route other ranks' segments over the software NIC, {@link TransferAgent#useRdma}),
 * ring, host and bind (the rendezvous across network namespaces). Prints "OK ..." lines and
 * exits 0 when every check held.
 *
 * <p>Each rank's segment is one buffer: a source area of {@code area} bytes holding pattern
 * seed(rank), then a landing area of world slots (slot s receives rank s's WRITEs), poisoned.
 * READ destinations are a second registered buffer of world slots (slot p: what was read from
 * rank p), poisoned. Every rank runs one random batch per peer, then checks its READs at once
 * and, after a barrier, the WRITEs that landed in its own segment, byte for byte.
 */
public final class TransferBatchWorker
{
    static final Duration TIMEOUT = Duration.ofSeconds(60);
    /** Whether other ranks' segments must be reached over RDMA (argument nic). */
    private static boolean overRdma;

    private TransferBatchWorker()
    {
    }

    static long sourceSeed(final long session, final int rank)
    {
        return Patterns.seed(session, rank, rank, 7);
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
        final int world = Integer.parseInt(a.get("world"));
        final int port = Integer.parseInt(a.get("port"));
        final long session = Long.parseLong(a.get("session"));
        final String mode = a.getOrDefault("mode", "random");
        final int count = Integer.parseInt(a.getOrDefault("requests", "64"));
        final long maxLength = Long.parseLong(a.getOrDefault("maxLength", "1048576"));
        final long slot = Long.parseLong(a.getOrDefault("slot", "" + (8L << 20)));
        final long area = slot;  // the source area: a READ of slot p comes from anywhere in it
        final String nic = a.get("nic");
        overRdma = nic != null;
        final String host = a.getOrDefault("host", "127.0.0.1");
        final String bind = a.getOrDefault("bind", host);
        try (HandleExchange ex = io.github.te4j.rendezvous.Rendezvous.builder().rank(rank).worldSize(world)
                .endpoint(host, port).bindAddress(bind).connectTimeout(TIMEOUT).defaultTimeout(TIMEOUT).build();
            TransferEngine engine = TransferEngine.builder().platform(Platform.HOST).build())
        {
            final P2pTransport p2p = engine.getOrCreateP2pTransport(world);
            final DeviceBuffer segmentBuffer = p2p.allocateBuffer(area + world * slot + 64);
            final DeviceBuffer reads = p2p.allocateBuffer(world * slot);
            Patterns.write(segmentBuffer, 0, area, sourceSeed(session, rank));
            segmentBuffer.fill(area, world * slot + 64, Patterns.POISON);
            reads.fill(0, world * slot, Patterns.POISON);
            final TransferAgent agent = engine.createTransferAgent(p2p, "rank" + rank);
            final RegisteredMemory seg = agent.registerLocalMemory(segmentBuffer);
            final RegisteredMemory readMem = agent.registerLocalMemory(reads);
            // rdmaerror: a second segment buffer that the owner withdraws from its NIC after publishing.
            final DeviceBuffer withdrawn = mode.equals("rdmaerror") ? p2p.allocateBuffer(1 << 20) : null;
            RdmaTransport rdma = null;
            if (nic != null)
            {
                rdma = engine.getOrCreateRdmaTransport(nic);
                rdma.initialize(world, 1, Integer.parseInt(a.getOrDefault("ring", "64")));
                if (withdrawn != null)
                {
                    agent.registerLocalMemory(withdrawn);
                    rdma.register(withdrawn);  // not last: the last registration is the NIC's window
                }
                rdma.register(segmentBuffer);
                rdma.register(reads);
                rdma.connect(ex, TIMEOUT);
                agent.useRdma(rdma);
            }
            agent.publishSegment(ex, TIMEOUT);
            System.out.println("OK rank " + rank + " published " + agent.segmentName());
            if (mode.equals("kill"))
            {
                runKill(rank, ex, agent, seg, readMem, session, area, slot);
                // The exchange lost a rank: closing it would report that; this rank's part is done.
                System.out.println("OK rank " + rank + " done");
                System.out.flush();
                Runtime.getRuntime().halt(0);
            }
            else if (mode.equals("rdmaerror"))
            {
                runRdmaError(rank, ex, agent, rdma, seg, readMem, withdrawn, session, area, slot);
            }
            else
            {
                runRandom(rank, world, ex, agent, seg, readMem, session, count, maxLength, area, slot);
            }
            System.out.println("OK rank " + rank + " done");
        }
    }

    /** The requests of rank src's batch to rank dst, against the layout above. */
    static List<TransferRequest> requests(final List<BatchPlan.Item> plan, final int src, final int dst,
        final RegisteredMemory seg, final RegisteredMemory readMem, final SegmentHandle peer, final long area,
        final long slot)
    {
        final List<TransferRequest> out = new ArrayList<>();
        for (final BatchPlan.Item it : plan)
        {
            if (it.opcode == TransferOpcode.WRITE)
            {
                out.add(TransferRequest.write(seg, it.localOffset, peer, area + src * slot + it.remoteOffset, it.length));
            }
            else
            {
                out.add(TransferRequest.read(readMem, dst * slot + it.localOffset, peer, it.remoteOffset, it.length));
            }
        }
        return out;
    }

    static long planSeed(final long session, final int src, final int dst)
    {
        return Patterns.seed(session, src, dst, 1);
    }

    private static void runRandom(final int rank, final int world, final HandleExchange ex, final TransferAgent agent,
        final RegisteredMemory seg, final RegisteredMemory readMem, final long session, final int count,
        final long maxLength, final long area, final long slot)
    {
        final List<TransferBatch> batches = new ArrayList<>();
        final Map<Integer, List<BatchPlan.Item>> plans = new HashMap<>();
        final List<List<TransferRequest>> all = new ArrayList<>();
        for (int peer = 0; peer < world; peer++)
        {
            final SegmentHandle h = agent.openSegment("rank" + peer);
            check(h.rank() == peer, "segment rank" + peer + " names rank " + h.rank());
            check(h.isRdma() == (overRdma && peer != rank), h + ": the wrong route");
            final List<BatchPlan.Item> plan = BatchPlan.make(planSeed(session, rank, peer), count, slot, maxLength);
            plans.put(peer, plan);
            final TransferBatch b = agent.allocateBatch(count);
            // Two parts: a batch is filled in more than one submit.
            final List<TransferRequest> rs = requests(plan, rank, peer, seg, readMem, h, area, slot);
            all.add(rs);
            b.submit(rs.subList(0, count / 2), TIMEOUT);
            b.submit(rs.subList(count / 2, count), TIMEOUT);
            batches.add(b);
        }
        for (int peer = 0; peer < world; peer++)
        {
            final List<TransferStatus> st = batches.get(peer).future().join();
            for (int i = 0; i < st.size(); i++)
            {
                check(st.get(i).state() == TransferState.COMPLETED, "request " + i + " to rank " + peer + ": " + st.get(i));
            }
            final byte[] image = readMem.buffer().read(peer * slot, (int) slot);
            final String bad = BatchPlan.verifyArea(image, plans.get(peer), TransferOpcode.READ, true,
                sourceSeed(session, peer), 0);
            check(bad == null, "READs from rank " + peer + ": " + bad);
            batches.get(peer).close();
        }
        System.out.println("OK rank " + rank + " READ " + world + " batches of " + count + " verified");
        runMixed(rank, world, agent, readMem, session, plans, all, slot);
        ex.barrier(TIMEOUT);
        for (int src = 0; src < world; src++)
        {
            final byte[] image = seg.buffer().read(area + src * slot, (int) slot);
            final String bad = BatchPlan.verifyArea(image, BatchPlan.make(planSeed(session, src, rank), count, slot,
                maxLength), TransferOpcode.WRITE, false, sourceSeed(session, src), 0);
            check(bad == null, "WRITEs from rank " + src + ": " + bad);
        }
        System.out.println("OK rank " + rank + " WRITE landing areas of " + world + " ranks verified");
        ex.barrier(TIMEOUT);
    }

    /**
     * The same requests again, every peer's interleaved in one batch of two parts: over RDMA, a
     * part mixes the own segment's requests (mapped) with the others' (RDMA), which one native
     * batch runs by route. Each request writes or reads what it did before, so every area still
     * verifies.
     */
    private static void runMixed(final int rank, final int world, final TransferAgent agent,
        final RegisteredMemory readMem, final long session,
        final Map<Integer, List<BatchPlan.Item>> plans, final List<List<TransferRequest>> all, final long slot)
    {
        final List<TransferRequest> mixed = new ArrayList<>();
        for (int i = 0; i < all.get(0).size(); i++)
        {
            for (final List<TransferRequest> rs : all)
            {
                mixed.add(rs.get(i));
            }
        }
        try (TransferBatch b = agent.allocateBatch(mixed.size()))
        {
            b.submit(mixed.subList(0, mixed.size() / 2), TIMEOUT);
            b.submit(mixed.subList(mixed.size() / 2, mixed.size()), TIMEOUT);
            final List<TransferStatus> st = b.future().join();
            for (int i = 0; i < st.size(); i++)
            {
                check(st.get(i).state() == TransferState.COMPLETED, "mixed request " + i + ": " + st.get(i));
            }
        }
        for (int peer = 0; peer < world; peer++)
        {
            final byte[] image = readMem.buffer().read(peer * slot, (int) slot);
            final String bad = BatchPlan.verifyArea(image, plans.get(peer), TransferOpcode.READ, true,
                sourceSeed(session, peer), 0);
            check(bad == null, "mixed READs from rank " + peer + ": " + bad);
        }
        System.out.println("OK rank " + rank + " one batch mixing " + world + " ranks' requests verified");
    }

    /**
     * World 3: rank 1 exits right after publishing; rank 0 runs batches to ranks 1 and 2 while and
     * after it dies; rank 2 serves until rank 0 writes its done byte into rank 2's segment.
     */
    private static void runKill(final int rank, final HandleExchange ex, final TransferAgent agent, final RegisteredMemory seg,
        final RegisteredMemory readMem, final long session, final long area, final long slot) throws Exception
    {
        final long doneOffset = area + 3 * slot;
        // Rank 0 maps both segments before rank 1 goes.
        final SegmentHandle one = rank == 0 ? agent.openSegment("rank1") : null;
        final SegmentHandle two = rank == 0 ? agent.openSegment("rank2") : null;
        ex.barrier(TIMEOUT);
        if (rank == 1)
        {
            System.out.println("OK rank 1 done");
            System.out.flush();
            Runtime.getRuntime().halt(0);
        }
        if (rank == 2)
        {
            final long end = System.nanoTime() + TIMEOUT.toNanos() * 2;
            while (seg.buffer().read(doneOffset, 1)[0] != 1)
            {
                check(System.nanoTime() < end, "rank 0 never wrote the done byte");
                Thread.sleep(10);
            }
            return;
        }
        // Mid-batch: many requests to the dying rank, and to rank 2, in one batch.
        final int n = 2000;
        final List<BatchPlan.Item> plan = BatchPlan.make(planSeed(session, 0, 1), n, slot, 64 * 1024);
        final List<TransferRequest> rs = new ArrayList<>();
        for (final BatchPlan.Item it : plan)
        {
            rs.add(TransferRequest.write(seg, it.localOffset, one, area + it.remoteOffset, it.length));
        }
        final List<BatchPlan.Item> plan2 = new ArrayList<>();
        for (final BatchPlan.Item it : BatchPlan.make(planSeed(session, 0, 2), 64, slot, 64 * 1024))
        {
            plan2.add(new BatchPlan.Item(TransferOpcode.READ, it.localOffset, it.remoteOffset, it.length));
        }
        for (final BatchPlan.Item it : plan2)
        {
            rs.add(TransferRequest.read(readMem, 2 * slot + it.localOffset, two, it.remoteOffset, it.length));
        }
        int rounds = 0;
        boolean lostSeen = false;
        final long end = System.nanoTime() + TIMEOUT.toNanos();
        while (!lostSeen)
        {
            check(System.nanoTime() < end, "rank 1's death was never reported");
            try (TransferBatch b = agent.allocateBatch(rs.size()))
            {
                b.submit(rs, TIMEOUT);
                final List<TransferStatus> st = b.await(TIMEOUT);
                for (int i = 0; i < st.size(); i++)
                {
                    final TransferStatus s = st.get(i);
                    if (i < n)
                    {
                        check(s.state() == TransferState.COMPLETED
                            || (s.state() == TransferState.FAILED && s.cause() instanceof PeerLostException),
                            "request " + i + " to the dying rank: " + s);
                        lostSeen |= s.state() == TransferState.FAILED;
                        if (s.state() == TransferState.FAILED)
                        {
                            check(s.cause().getMessage().contains("rank 1") && s.cause().getMessage().contains(
                                "request " + i), "cause names neither rank nor request: " + s.cause().getMessage());
                        }
                    }
                    else
                    {
                        check(s.state() == TransferState.COMPLETED, "request " + i + " to rank 2: " + s);
                    }
                }
            }
            rounds++;
        }
        // After the loss is known, every request to rank 1 fails at once; rank 2's still complete.
        try (TransferBatch b = agent.allocateBatch(rs.size()))
        {
            b.submit(rs, TIMEOUT);
            final List<TransferStatus> st = b.future().get(TIMEOUT.toSeconds(), java.util.concurrent.TimeUnit.SECONDS);
            for (int i = 0; i < st.size(); i++)
            {
                check(st.get(i).state() == (i < n ? TransferState.FAILED : TransferState.COMPLETED),
                    "request " + i + " after the loss: " + st.get(i));
            }
        }
        final byte[] image = readMem.buffer().read(2 * slot, (int) slot);
        final String bad = BatchPlan.verifyArea(image, plan2, TransferOpcode.READ, true, sourceSeed(session, 2), 0);
        check(bad == null, "READs from rank 2: " + bad);
        System.out.println("OK rank 0 saw rank 1 lost after " + rounds + " batches; rank 2's requests all completed");
        seg.buffer().fill(0, 1, (byte) 1);
        try (TransferBatch b = agent.allocateBatch(1))
        {
            b.submit(List.of(TransferRequest.write(seg, 0, two, doneOffset, 1)), TIMEOUT);
            check(b.await(TIMEOUT).get(0).state() == TransferState.COMPLETED, "done byte");
        }
    }

    /**
     * World 2 over the software NIC: rank 1 withdraws its second segment buffer from its NIC after
     * publishing. Rank 0's batches to rank 1: a range outside the segment is refused at submit
     * naming its index; a bad request last in a batch fails alone with the remote access syndrome
     * (0x13) while the others complete; in the middle, the ones before it complete and the ones
     * after it are flushed (RC: the queue pair is in the error state), and after both ranks
     * reconnect a batch completes again.
     */
    private static void runRdmaError(final int rank, final HandleExchange ex, final TransferAgent agent,
        final RdmaTransport rdma, final RegisteredMemory seg, final RegisteredMemory readMem, final DeviceBuffer withdrawn,
        final long session, final long area, final long slot)
    {
        final SegmentHandle peer = rank == 0 ? agent.openSegment("rank1") : null;
        ex.barrier(TIMEOUT);
        if (rank == 1)
        {
            rdma.deregister(withdrawn);
        }
        ex.barrier(TIMEOUT);
        if (rank == 0)
        {
            check(peer.isRdma(), peer + " is not reached over RDMA");
            final long badOffset = peer.bufferOffsets()[2];
            final int n = 32;
            final List<BatchPlan.Item> plan = BatchPlan.make(planSeed(session, 0, 1), n, slot, 64 * 1024);
            try (TransferBatch b = agent.allocateBatch(n + 1))
            {
                final List<TransferRequest> rs = new ArrayList<>(requests(plan, 0, 1, seg, readMem, peer, area, slot));
                rs.add(TransferRequest.write(seg, 0, peer, peer.size() - 8, 16));
                try
                {
                    b.submit(rs, TIMEOUT);
                    check(false, "a range past the segment was submitted");
                }
                catch (final IndexOutOfBoundsException e)
                {
                    check(e.getMessage().contains("request " + n), "refusal names another index: " + e.getMessage());
                }
                check(b.size() == 0, "a refused part left requests in the batch");
            }
            try (TransferBatch b = agent.allocateBatch(n + 1))
            {
                final List<TransferRequest> rs = new ArrayList<>(requests(plan, 0, 1, seg, readMem, peer, area, slot));
                rs.add(TransferRequest.write(seg, 0, peer, badOffset, 4096));
                b.submit(rs, TIMEOUT);
                final List<TransferStatus> st = b.future().join();
                for (int i = 0; i < n; i++)
                {
                    check(st.get(i).state() == TransferState.COMPLETED, "request " + i + ": " + st.get(i));
                }
                check(st.get(n).state() == TransferState.FAILED && st.get(n).cause().getMessage().contains("0x13"),
                    "the request to the withdrawn buffer: " + st.get(n));
                System.out.println("OK rank 0 bad request last: it failed alone: " + st.get(n).cause().getMessage());
            }
            final byte[] image = readMem.buffer().read(slot, (int) slot);
            check(BatchPlan.verifyArea(image, plan, TransferOpcode.READ, true, sourceSeed(session, 1), 0) == null,
                "READs before the failed request");
            try (TransferBatch b = agent.allocateBatch(3))
            {
                // The queue pair is in the error state now: everything on it fails until a reconnect.
                b.submit(List.of(TransferRequest.write(seg, 0, peer, area, 64)), TIMEOUT);
                final TransferStatus s = b.future().join().get(0);
                check(s.state() == TransferState.FAILED, "a request on the queue pair in the error state: " + s);
            }
        }
        ex.barrier(TIMEOUT);
        rdma.reconnect(ex, TIMEOUT);
        if (rank == 0)
        {
            final long badOffset = peer.bufferOffsets()[2];
            final List<BatchPlan.Item> plan = BatchPlan.make(planSeed(session, 0, 1) + 1, 16, slot, 64 * 1024);
            try (TransferBatch b = agent.allocateBatch(17))
            {
                final List<TransferRequest> rs = new ArrayList<>(requests(plan, 0, 1, seg, readMem, peer, area, slot));
                rs.add(8, TransferRequest.write(seg, 0, peer, badOffset, 4096));
                b.submit(rs, TIMEOUT);
                final List<TransferStatus> st = b.future().join();
                for (int i = 0; i < 8; i++)
                {
                    check(st.get(i).state() == TransferState.COMPLETED, "request " + i + " before the bad one: " + st.get(i));
                }
                check(st.get(8).state() == TransferState.FAILED && st.get(8).cause().getMessage().contains("0x13"),
                    "the bad request: " + st.get(8));
                for (int i = 9; i < st.size(); i++)
                {
                    check(st.get(i).state() == TransferState.FAILED && st.get(i).cause().getMessage().contains("0x5 "),
                        "request " + i + " after the bad one: " + st.get(i));
                }
                System.out.println("OK rank 0 bad request mid-batch: 8 completed, it failed with 0x13, 8 flushed");
            }
        }
        ex.barrier(TIMEOUT);
        rdma.reconnect(ex, TIMEOUT);
        if (rank == 0)
        {
            final List<BatchPlan.Item> plan = BatchPlan.make(planSeed(session, 0, 1) + 2, 16, slot, 64 * 1024);
            readMem.buffer().fill(slot, slot, io.github.te4j.check.Patterns.POISON);
            try (TransferBatch b = agent.allocateBatch(16))
            {
                b.submit(requests(plan, 0, 1, seg, readMem, peer, area, slot), TIMEOUT);
                for (final TransferStatus s : b.future().join())
                {
                    check(s.state() == TransferState.COMPLETED, "after the reconnect: " + s);
                }
            }
            final byte[] image = readMem.buffer().read(slot, (int) slot);
            check(BatchPlan.verifyArea(image, plan, TransferOpcode.READ, true, sourceSeed(session, 1), 0) == null,
                "READs after the reconnect");
            System.out.println("OK rank 0 batch after the reconnect completed and verified");
        }
        ex.barrier(TIMEOUT);
    }

    static void check(final boolean ok, final String what)
    {
        if (!ok)
        {
            throw new AssertionError(what);
        }
    }
}
