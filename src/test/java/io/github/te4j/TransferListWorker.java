package io.github.te4j;

import io.github.te4j.check.Patterns;
import io.github.te4j.exchange.HandleExchange;
import io.github.te4j.telemetry.PeerLostEvent;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;

/**
 * One rank of {@link TransferListMultiProcessTest}, a child JVM on the host platform. Arguments
 * key=value: rank, world (2), port, session, mode (random | kill), rounds. Prints "OK ..." lines
 * and exits 0 when every check held.
 *
 * <p>random: each rank's segment is a source area (pattern seed(round, rank), rewritten every
 * round) and a landing area for the peer's WRITEs, poisoned every round; READ destinations are a
 * second buffer. Each rank prepares one list of random READs and WRITEs to the peer once and
 * posts it every round, whole or a range, between barriers; it checks its READs, and after the
 * next barrier the WRITEs that landed in its own segment, byte for byte.
 *
 * <p>kill: rank 0 prepares a list to rank 1's segment, records JFR, and once rank 1 has exited
 * its next post fails with a {@link PeerLostException} naming the segment, and the recording
 * holds one {@link PeerLostEvent} for it.
 */
public final class TransferListWorker
{
    static final Duration TIMEOUT = Duration.ofSeconds(60);

    private TransferListWorker()
    {
    }

    static void check(final boolean ok, final String what)
    {
        if (!ok)
        {
            throw new AssertionError(what);
        }
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
        final String mode = a.getOrDefault("mode", "random");
        final int rounds = Integer.parseInt(a.getOrDefault("rounds", "12"));
        final long area = 4L << 20;
        try (HandleExchange ex = io.github.te4j.rendezvous.Rendezvous.builder().rank(rank).worldSize(2)
                .endpoint("127.0.0.1", port).connectTimeout(TIMEOUT).defaultTimeout(TIMEOUT).build();
            TransferEngine engine = TransferEngine.builder().platform(Platform.HOST).build())
        {
            final P2pTransport p2p = engine.getOrCreateP2pTransport(2);
            final DeviceBuffer segmentBuffer = p2p.allocateBuffer(2 * area);  // source, then landing area
            final DeviceBuffer reads = p2p.allocateBuffer(area);
            final TransferAgent agent = engine.createTransferAgent(p2p, "rank" + rank);
            final RegisteredMemory seg = agent.registerLocalMemory(segmentBuffer);
            final RegisteredMemory readMem = agent.registerLocalMemory(reads);
            agent.publishSegment(ex, TIMEOUT);
            final int peerRank = 1 - rank;
            final SegmentHandle peer = agent.openSegment("rank" + peerRank);
            System.out.println("OK rank " + rank + " opened " + peer);
            if (mode.equals("kill"))
            {
                runKill(rank, ex, agent, seg, peer);
                System.out.println("OK rank " + rank + " done");
                System.out.flush();
                Runtime.getRuntime().halt(0);
            }
            final List<BatchPlan.Item> mine = BatchPlan.make(Patterns.seed(session, rank, peerRank, 1), 150, area, 256L << 10);
            final List<BatchPlan.Item> theirs = BatchPlan.make(Patterns.seed(session, peerRank, rank, 1), 150, area,
                256L << 10);
            final TransferDescriptors d = new TransferDescriptors(mine.size());
            for (final BatchPlan.Item it : mine)
            {
                if (it.opcode == TransferOpcode.WRITE)
                {
                    d.write(seg, it.localOffset, peer, area + it.remoteOffset, it.length);
                }
                else
                {
                    d.read(readMem, it.localOffset, peer, it.remoteOffset, it.length);
                }
            }
            try (TransferList list = agent.prepareList(d))
            {
                for (int round = 0; round < rounds; round++)
                {
                    final int from = round % 3 == 2 ? round % mine.size() : 0;
                    final int to = round % 3 == 2 ? Math.min(mine.size(), from + 40) : mine.size();
                    Patterns.write(segmentBuffer, 0, area, Patterns.seed(session, rank, round, 2));
                    segmentBuffer.fill(area, area, Patterns.POISON);
                    reads.fill(0, area, Patterns.POISON);
                    ex.barrier(TIMEOUT);  // every source written, every destination poisoned
                    final List<TransferStatus> st = list.post(from, to, TIMEOUT).await(TIMEOUT);
                    for (int i = 0; i < st.size(); i++)
                    {
                        check(st.get(i).state() == TransferState.COMPLETED, "round " + round + " request " + (from + i)
                            + ": " + st.get(i));
                    }
                    final String reads0 = BatchPlan.verifyArea(reads.read(0, (int) area), mine.subList(from, to),
                        TransferOpcode.READ, true, Patterns.seed(session, peerRank, round, 2), 0);
                    check(reads0 == null, "round " + round + " READ destinations: " + reads0);
                    ex.barrier(TIMEOUT);  // the peer's WRITEs into this segment have landed
                    final int pf = round % 3 == 2 ? round % theirs.size() : 0;
                    final int pt = round % 3 == 2 ? Math.min(theirs.size(), pf + 40) : theirs.size();
                    final byte[] landing = segmentBuffer.read(area, (int) area);
                    final String writes = BatchPlan.verifyArea(landing, theirs.subList(pf, pt), TransferOpcode.WRITE,
                        false, Patterns.seed(session, peerRank, round, 2), 0);
                    check(writes == null, "round " + round + " WRITEs landed here: " + writes);
                    ex.barrier(TIMEOUT);  // checked before the next round rewrites
                }
            }
            System.out.println("OK rank " + rank + " " + rounds + " posts verified");
            ex.barrier(TIMEOUT);
            System.out.println("OK rank " + rank + " done");
        }
    }

    private static void runKill(final int rank, final HandleExchange ex, final TransferAgent agent,
        final RegisteredMemory seg, final SegmentHandle peer) throws Exception
    {
        if (rank == 1)
        {
            ex.barrier(TIMEOUT);  // rank 0 has prepared its list
            System.out.println("OK rank 1 done");
            System.out.flush();
            Runtime.getRuntime().halt(0);
        }
        final Path jfr = Files.createTempFile("te4j-list-peerlost", ".jfr");
        try (Recording recording = new Recording())
        {
            recording.enable(PeerLostEvent.class).withoutThreshold();
            recording.start();
            final TransferDescriptors d = new TransferDescriptors(16);
            for (int i = 0; i < 16; i++)
            {
                d.write(seg, i * 4096L, peer, i * 4096L, 4096);
            }
            try (TransferList list = agent.prepareList(d))
            {
                list.post(TIMEOUT).await(TIMEOUT).forEach(s -> check(s.state() == TransferState.COMPLETED, "" + s));
                ex.barrier(TIMEOUT);
                final long end = System.nanoTime() + TIMEOUT.toNanos();
                PeerLostException lost = null;
                while (lost == null)
                {
                    check(System.nanoTime() < end, "rank 1's exit was never reported by a post");
                    try
                    {
                        list.post(TIMEOUT).await(TIMEOUT);
                        Thread.sleep(10);
                    }
                    catch (final PeerLostException e)
                    {
                        lost = e;
                    }
                }
                check(lost.getMessage().contains("rank1") && lost.getMessage().contains("exited"),
                    "the loss names neither segment nor cause: " + lost.getMessage());
                System.out.println("OK rank 0 post refused: " + lost.getMessage());
                // Again: still refused, never a crash.
                try
                {
                    list.post(TIMEOUT);
                    check(false, "a post to a lost owner was accepted");
                }
                catch (final PeerLostException e)
                {
                    System.out.println("OK rank 0 refused again");
                }
            }
            recording.stop();
            recording.dump(jfr);
        }
        final List<RecordedEvent> events = RecordingFile.readAllEvents(jfr);
        Files.deleteIfExists(jfr);
        int seen = 0;
        for (final RecordedEvent e : events)
        {
            if (e.getEventType().getName().equals("io.github.te4j.PeerLost"))
            {
                seen++;
                check(e.getString("segment").equals("rank1") && e.getInt("rank") == 1
                    && e.getString("route").equals("mapped") && e.getString("agent").equals("rank0"),
                    "PeerLost fields: " + e);
            }
        }
        check(seen == 1, "PeerLost events: " + seen + " (one per segment handle expected)");
        System.out.println("OK rank 0 PeerLost event recorded");
    }
}
