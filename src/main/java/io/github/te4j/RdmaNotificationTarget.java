package io.github.te4j;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.LockSupport;
import java.util.function.ToIntFunction;

/**
 * This agent's ring in the notification area of a receiver reached over RDMA (the software
 * NIC or an mlx5 NIC): ring {@code MAPPED_RINGS + r} for this agent's RDMA rank {@code r},
 * which only this rank writes, so it needs no atomic claim. Every access is an RDMA work request
 * of a batch of this target, from a small staging buffer registered with the NIC, against the
 * area's registered address and key from the receiver's descriptor:
 * <ul>
 * <li>a slot: one WRITE of its header and payload (bytes 8 ..), then its sequence word, in one
 * part, so on one queue pair, so the receiver never sees the sequence word before the slot (and
 * checks the CRC all the same). The software NIC executes a queue pair's requests in order, so
 * the word is a second WRITE. An mlx5 NIC's responder orders a WRITE's bytes only before a
 * later atomic (docs/MLX5.md, "Notifications"), so there the word is a fenced compare-and-swap
 * from the value this sender left in it (read at opening, then its own), whose fetched old value
 * tells whether it happened;</li>
 * <li>room: one READ of the ring's consumed index (and the area's open word) when the last one
 * read leaves no room;</li>
 * <li>opening: READs of the consumed index, the open word and every slot's sequence word (an
 * earlier sender of this rank may have left positions: this one goes on after them, voiding
 * any it reserved and never published, once the receiver took the rest), then WRITEs of the
 * name, the claim and the ready word, in that order.</li>
 * </ul>
 * Every operation waits for its completions, so a notification's slot is written only after the
 * data WRITEs of its submit completed (the publisher observes them first), and the staging buffer
 * is reused only once the NIC is done with it. Operations are serialized by this object's
 * monitor, never held while waiting for room.
 */
final class RdmaNotificationTarget implements NotificationTarget
{
    /** Staging layout: the slot image, the sequence word, READ targets, the ring header image. */
    private static final int SEQ = NotificationArea.SLOT_BYTES;
    private static final int READ_CONSUMED = SEQ + 8;
    private static final int READ_OPEN = SEQ + 16;
    private static final int HEADER = SEQ + 64;
    private static final int READ_SEQS = HEADER + NotificationArea.RING_HEADER_BYTES;
    private static final int STAGING_BYTES = READ_SEQS + 8 * NotificationArea.MAX_DEPTH;
    /** The NIC whose responder orders a slot before its sequence word only through an atomic. */
    private static final String ATOMIC_SEQUENCE_BACKEND = "mlx5";
    /** The targets open in this process, by transport and receiver: one sender per RDMA rank and ring. */
    private static final Map<RdmaTransport, Set<String>> OPEN = new IdentityHashMap<>();
    /** How long publishing one slot may take once its data landed (the NIC, not the receiver, bounds it). */
    private static final long OP_NANOS = TransferBatch.GRACE_NANOS;
    private static final int BATCH_CAPACITY = 4096;  // a claim reads every slot: depth + 2 requests in one part
    private static final long MAX_PARK_NANOS = 200_000;
    /** A READ of the consumed index gets at least this long, even at the deadline (a round trip under load). */
    private static final long MIN_READ_NANOS = 20_000_000;

    private final TransferAgent agent;
    private final RdmaTransport rdma;
    private final String segment;
    private final int ownerRank;
    private final long areaAddress;
    private final NotificationArea layout;   // offsets only: the area is not mapped here
    private final int ring;
    private final long claim;
    private final DeviceBuffer staging;
    private final ByteBuffer stage;
    private final RegisteredMemory local;
    private final SegmentHandle area;
    private final boolean atomicSequence;
    /** What this sender last knew each slot's sequence word to hold (atomicSequence); guarded by this. */
    private final long[] wordLeft;
    private TransferBatch batch;  // guarded by this
    private long next;            // guarded by this
    private long consumedSeen;    // guarded by this
    private boolean closed;       // guarded by this

    private RdmaNotificationTarget(final TransferAgent agent, final RdmaTransport rdma, final SegmentDescriptor d,
        final DeviceBuffer staging, final RegisteredMemory local, final SegmentHandle area)
    {
        this.agent = agent;
        this.rdma = rdma;
        this.segment = d.name();
        this.ownerRank = d.rdma().rank;
        this.areaAddress = d.notificationArea().rdmaAddress;
        this.layout = NotificationArea.layout(d.notificationArea().rings, d.notificationArea().depth);
        this.ring = NotificationArea.MAPPED_RINGS + rdma.localRank();
        this.claim = (NotificationArea.RDMA_CLAIM | rdma.localRank()) << 32
            | (ThreadLocalRandom.current().nextInt(Integer.MAX_VALUE) + 1L);
        this.staging = staging;
        this.stage = MappedMemory.view(staging.address(), STAGING_BYTES).order(ByteOrder.LITTLE_ENDIAN);
        this.local = local;
        this.area = area;
        this.atomicSequence = ATOMIC_SEQUENCE_BACKEND.equals(rdma.backend());
        this.wordLeft = new long[layout.depth()];
    }

    /** Reaches {@code d}'s notification area over {@code rdma} and claims this rank's ring, until {@code deadline}. */
    static RdmaNotificationTarget open(final TransferAgent agent, final RdmaTransport rdma, final SegmentDescriptor d,
        final String sender, final long deadline)
    {
        final SegmentDescriptor.Notify n = d.notificationArea();
        if (n == null || n.rdmaAddress == 0)
        {
            throw new UnavailableException("segment '" + d.name() + "' has no notification area reachable over RDMA:"
                + " its agent publishes none (a CUDA agent, or one without useRdma)");
        }
        if (rdma.localRank() >= NotificationArea.RDMA_RINGS)
        {
            throw new UnavailableException("notifications over RDMA reach ranks below " + NotificationArea.RDMA_RINGS
                + "; this agent is RDMA rank " + rdma.localRank());
        }
        synchronized (OPEN)
        {
            if (!OPEN.computeIfAbsent(rdma, k -> new HashSet<>()).add(d.name()))
            {
                throw new IllegalStateException("another agent of this process sends notifications to segment '"
                    + d.name() + "' over " + rdma + ": over RDMA one agent per rank may (the ring is the rank's)");
            }
        }
        final DeviceBuffer staging;
        try
        {
            staging = agent.transport().allocateBuffer(STAGING_BYTES);
        }
        catch (final RuntimeException e)
        {
            forget(rdma, d.name());
            throw e;
        }
        RegisteredMemory local = null;
        SegmentHandle area = null;
        try
        {
            rdma.registerAside(staging);
            local = agent.registerLocalMemory(staging.address(), staging.size());
            final SegmentDescriptor areaOnly = new SegmentDescriptor(d.name(), d.rank(),
                List.of(new SegmentDescriptor.Part(0, n.handle)),
                new SegmentDescriptor.Rdma(d.rdma().rank, new long[] {n.rdmaAddress}, new int[] {n.rdmaKey}));
            area = new SegmentHandle(agent, areaOnly, rdma);
        }
        catch (final RuntimeException e)
        {
            if (area != null)
            {
                area.close();
            }
            if (local != null)
            {
                agent.unregisterLocalMemory(local);
            }
            staging.close();
            forget(rdma, d.name());
            throw e;
        }
        final RdmaNotificationTarget t = new RdmaNotificationTarget(agent, rdma, d, staging, local, area);
        try
        {
            t.claim(sender, deadline);
        }
        catch (final RuntimeException e)
        {
            t.close();
            throw e;
        }
        return t;
    }

    private static void forget(final RdmaTransport rdma, final String segment)
    {
        synchronized (OPEN)
        {
            final Set<String> open = OPEN.get(rdma);
            if (open != null && open.remove(segment) && open.isEmpty())
            {
                OPEN.remove(rdma);
            }
        }
    }

    /**
     * Takes this rank's ring over: where an earlier sender of this rank left it (an agent closed
     * or replaced on this rank), positions go on after the last one it published, and positions
     * it reserved but never published are voided so the receiver passes them; then the name, the
     * claim and the ready word.
     */
    private synchronized void claim(final String sender, final long deadline)
    {
        final int header = layout.ring(ring);
        final int depth = layout.depth();
        final List<TransferRequest> reads = new java.util.ArrayList<>();
        reads.add(read(READ_CONSUMED, header + NotificationArea.CONSUMED, 8));
        reads.add(read(READ_OPEN, NotificationArea.OPEN, 8));
        for (int k = 0; k < depth; k++)
        {
            reads.add(read(READ_SEQS + 8 * k, layout.slot(ring, k) + NotificationArea.SEQ, 8));
        }
        run(reads, deadline, "read its ring");
        if (stage.getLong(READ_OPEN) != 1L)
        {
            throw new ClosedException("the agent of segment '" + segment + "' (it closed its notifications)");
        }
        final long consumed = stage.getLong(READ_CONSUMED);
        for (int k = 0; k < depth; k++)
        {
            wordLeft[k] = stage.getLong(READ_SEQS + 8 * k);
        }
        long end = consumed;
        for (long p = consumed; p < consumed + depth; p++)
        {
            if (stage.getLong(READ_SEQS + 8 * (int) (p % depth)) == p + 1)
            {
                end = p + 1;
            }
        }
        next = end;
        consumedSeen = consumed;
        for (long p = consumed; p < end; p++)
        {
            if (stage.getLong(READ_SEQS + 8 * (int) (p % depth)) != p + 1)
            {
                publish(p, null, true);
            }
        }
        // What the earlier sender left is delivered under its name: the ring changes hands once
        // the receiver took it.
        long park = 1_000;
        while (consumedSeen < end)
        {
            if (System.nanoTime() - deadline >= 0)
            {
                throw new Te4jTimeoutException("notification to segment '" + segment + "': an earlier sender of RDMA"
                    + " rank " + rdma.localRank() + " left " + (end - consumedSeen) + " notification(s) there that the"
                    + " receiver has not taken by the deadline; this rank's ring changes hands once it has");
            }
            LockSupport.parkNanos(park);
            park = Math.min(2 * park, MAX_PARK_NANOS);
            if (readRoom(header, deadline))
            {
                if (stage.getLong(READ_OPEN) != 1L)
                {
                    throw new ClosedException("the agent of segment '" + segment + "' (it closed its notifications)");
                }
                consumedSeen = stage.getLong(READ_CONSUMED);
            }
        }
        final byte[] name = sender.getBytes(StandardCharsets.UTF_8);
        stage.putShort(HEADER + NotificationArea.NAME_LENGTH, (short) name.length);
        stage.put(HEADER + NotificationArea.NAME, name);
        stage.putLong(HEADER + NotificationArea.CLAIM, claim);
        stage.putLong(HEADER + NotificationArea.READY, claim);
        final int nameBytes = NotificationArea.NAME - NotificationArea.NAME_LENGTH + name.length;
        run(List.of(write(HEADER + NotificationArea.NAME_LENGTH, header + NotificationArea.NAME_LENGTH, nameBytes),
            write(HEADER + NotificationArea.CLAIM, header + NotificationArea.CLAIM, 8),
            write(HEADER + NotificationArea.READY, header + NotificationArea.READY, 8)), deadline, "claim its ring");
    }

    /**
     * READs the consumed index and the open word into the staging buffer; false when that did
     * not complete by the deadline (given at least one short round trip), which leaves what the
     * caller knew: no room yet.
     */
    private boolean readRoom(final int header, final long deadline)
    {
        try
        {
            run(List.of(read(READ_CONSUMED, header + NotificationArea.CONSUMED, 8),
                read(READ_OPEN, NotificationArea.OPEN, 8)), Math.max(deadline, System.nanoTime() + MIN_READ_NANOS),
                "read its consumed index");
            return true;
        }
        catch (final Te4jTimeoutException e)
        {
            if (System.nanoTime() - deadline < 0)
            {
                throw e;
            }
            return false;
        }
    }

    private TransferRequest read(final int stagingOffset, final long areaOffset, final int bytes)
    {
        return TransferRequest.read(local, stagingOffset, area, areaOffset, bytes);
    }

    private TransferRequest write(final int stagingOffset, final long areaOffset, final int bytes)
    {
        return TransferRequest.write(local, stagingOffset, area, areaOffset, bytes);
    }

    /** Posts {@code part} and waits for its completions until {@code deadline}; throws unless all completed. */
    private void run(final List<TransferRequest> part, final long deadline, final String what)
    {
        post(part.size(), timeout -> batch.submit(part, timeout), deadline, what);
    }

    /** Posts {@code n} requests through {@code submit} (given the time left); as {@link #run}. */
    private void post(final int n, final ToIntFunction<Duration> submit, final long deadline, final String what)
    {
        if (rdma.peerLost(ownerRank))
        {
            throw new PeerLostException("notification to segment '" + segment + "': its owner (RDMA rank " + ownerRank
                + ") is lost");
        }
        final Lock l = staging.enter();
        try
        {
            if (batch == null || batch.size() + n > batch.capacity())
            {
                if (batch != null)
                {
                    batch.close();
                }
                batch = agent.allocateBatch(BATCH_CAPACITY);
            }
            final int first = submit.applyAsInt(Duration.ofNanos(Math.max(0, deadline - System.nanoTime())));
            batch.awaitDone(Duration.ofNanos(Math.max(0, deadline - System.nanoTime())));
            for (int i = first; i < first + n; i++)
            {
                final TransferStatus s = batch.status(i);
                if (s.state() != TransferState.COMPLETED)
                {
                    final TransferBatch failed = batch;
                    batch = null;  // a timed-out or failed batch takes no more parts
                    failed.close();
                    if (s.state() == TransferState.PENDING || s.state() == TransferState.TIMEOUT)
                    {
                        throw new Te4jTimeoutException("notification to segment '" + segment + "': " + what
                            + " over RDMA did not complete by the deadline");
                    }
                    throw new Te4jException(Te4jException.Code.REMOTE_ERROR, "notification to segment '" + segment
                        + "': " + what + " over RDMA failed: " + s, s.cause());
                }
            }
        }
        finally
        {
            l.unlock();
        }
    }

    @Override
    public String segment()
    {
        return segment;
    }

    @Override
    public boolean sameArea(final SegmentDescriptor d)
    {
        return d.notificationArea() != null && d.notificationArea().rdmaAddress == areaAddress && d.rdma() != null
            && d.rdma().rank == ownerRank;
    }

    @Override
    public long reserve(final long deadline)
    {
        long park = 1_000;
        for (;;)
        {
            synchronized (this)
            {
                checkOpen();
                if (next - consumedSeen < layout.depth())
                {
                    return next++;
                }
                // The last index read leaves no room: read it again (and whether the receiver is still open).
                final int header = layout.ring(ring);
                if (!readRoom(header, deadline))
                {
                    throw NotificationTarget.queueFull(segment, layout.depth());
                }
                if (stage.getLong(READ_OPEN) != 1L)
                {
                    throw new ClosedException("the agent of segment '" + segment + "' (it closed its notifications)");
                }
                consumedSeen = stage.getLong(READ_CONSUMED);
                if (next - consumedSeen < layout.depth())
                {
                    return next++;
                }
            }
            final long left = deadline - System.nanoTime();
            if (left <= 0)
            {
                throw NotificationTarget.queueFull(segment, layout.depth());
            }
            LockSupport.parkNanos(Math.min(left, park));
            park = Math.min(park * 2, MAX_PARK_NANOS);
        }
    }

    private void checkOpen()
    {
        if (closed)
        {
            throw new ClosedException("notifications to segment '" + segment + "'");
        }
    }

    @Override
    public synchronized boolean publish(final long position, final byte[] message, final boolean isVoid)
    {
        if (closed)
        {
            return false;
        }
        final int n = isVoid ? 0 : message.length;
        if (n > 0)
        {
            stage.put(NotificationArea.SLOT_HEADER_BYTES, message, 0, n);
        }
        stage.putInt(NotificationArea.LENGTH, n).putInt(NotificationArea.CRC, isVoid ? 0 : NotificationArea.crc(message))
            .putInt(NotificationArea.FLAGS, isVoid ? NotificationArea.FLAG_VOID : 0);
        final int slot = layout.slot(ring, position);
        final TransferRequest bytes = write(8, slot + 8, NotificationArea.SLOT_HEADER_BYTES - 8 + n);
        if (!atomicSequence)
        {
            stage.putLong(SEQ, position + 1);
            run(List.of(bytes, write(SEQ, slot, 8)), System.nanoTime() + OP_NANOS, "write its slot");
            return true;
        }
        final int k = (int) (position & (layout.depth() - 1));
        final long expected = wordLeft[k];
        stage.putLong(SEQ, ~expected);  // where the word's old value lands: only the NIC leaves `expected` there
        final TransferRequest word = write(SEQ, slot, 8);
        post(2, timeout -> batch.submitPublication(bytes, word, expected, position + 1, timeout),
            System.nanoTime() + OP_NANOS, "write its slot");
        final long found = stage.getLong(SEQ);
        if (found != expected)
        {
            throw new Te4jException(Te4jException.Code.REMOTE_ERROR, "notification to segment '" + segment
                + "': the sequence word of its slot held " + found + ", not the " + expected + " this sender left"
                + " there, so the notification was not published (the receiver freed this rank's ring, taking this"
                + " sender for lost, or the NIC's 8-byte atomics are not host-endian: docs/MLX5.md)");
        }
        wordLeft[k] = position + 1;
        return true;
    }

    /**
     * Stops writing the ring and lets go of the staging memory. Nothing is written to the
     * receiver: the ring stays this rank's, and the next sender of this rank takes it over where
     * this one stopped (every position it reserved was published or voided).
     */
    @Override
    public void close()
    {
        synchronized (this)
        {
            if (closed)
            {
                return;
            }
            closed = true;
            if (batch != null)
            {
                batch.close();
                batch = null;
            }
        }
        forget(rdma, segment);
        area.close();
        try
        {
            agent.unregisterLocalMemory(local);
        }
        catch (final ClosedException e)
        {
            // The agent is closing: it forgets every registration itself.
        }
        staging.close();
    }
}
