package io.github.te4j;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.LockSupport;

/**
 * One sender's ring in one receiver's notification area mapped here (host platform, one host):
 * claimed with a compare-and-swap when opened,
 * written by this sender only, its positions reserved in submit order. Every access to the
 * mapping happens under this object's monitor with the target open, so closing it (which
 * unmaps) never races an access.
 */
final class MappedNotificationTarget implements NotificationTarget
{
    private static final long MAX_PARK_NANOS = 200_000;

    private final TransferAgent agent;
    private final P2pTransport transport;  // the mapping's: its close unmaps it
    private final String segment;
    private final byte[] descriptorHandle;
    private final long base;
    private final NotificationArea area;
    private final ProcessWatch owner;  // null: this process
    private final int ring;
    private final long claim;
    private long next;         // the next position to reserve, guarded by this
    private boolean closed;    // guarded by this

    private MappedNotificationTarget(final TransferAgent agent, final P2pTransport transport, final String segment,
        final byte[] descriptorHandle, final long base, final NotificationArea area, final ProcessWatch owner,
        final int ring, final long claim)
    {
        this.agent = agent;
        this.transport = transport;
        this.segment = segment;
        this.descriptorHandle = descriptorHandle;
        this.base = base;
        this.area = area;
        this.owner = owner;
        this.ring = ring;
        this.claim = claim;
    }

    /** Maps {@code d}'s notification area and claims a ring in it for {@code sender}. */
    static MappedNotificationTarget open(final TransferAgent agent, final SegmentDescriptor d, final String sender)
    {
        final SegmentDescriptor.Notify n = d.notificationArea();
        if (n == null)
        {
            throw new UnavailableException("segment '" + d.name() + "' has no notification area: its agent published"
                + " none (it could not make one: its log says why)");
        }
        if (n.handle.platform() != Platform.HOST || !n.handle.isFromThisHost())
        {
            throw new BadHandleException("segment '" + d.name() + "': its notification area is a " + n.handle.platform()
                + " buffer" + (n.handle.isFromThisHost() ? "" : " of another host") + ": notifications by mapping need"
                + " host memory of this host (a receiver elsewhere is reached over RDMA: useRdma)");
        }
        final P2pTransport transport = agent.notificationTransport();
        final int pid = n.handle.ownerPid();
        final long self = ProcessHandle.current().pid();
        final long base = agent.mapHandle(transport, n.handle, "segment '" + d.name() + "' notification area");
        try
        {
            final NotificationArea area = NotificationArea.attach(MappedMemory.view(base, n.handle.bufferSize()),
                n.rings, n.depth, d.name());
            if (!area.isOpen())
            {
                throw new ClosedException("the agent of segment '" + d.name() + "' (its notifications)");
            }
            final long word = ((long) (int) self << 32) | (ThreadLocalRandom.current().nextInt(Integer.MAX_VALUE) + 1L);
            for (int r = 0; r < NotificationArea.MAPPED_RINGS; r++)
            {
                if (area.tryClaim(r, word))
                {
                    area.announce(r, word, sender.getBytes(StandardCharsets.UTF_8));
                    return new MappedNotificationTarget(agent, transport, d.name(), n.handle.toBytes(), base, area,
                        pid == self || pid <= 0 ? null : ProcessWatch.of(pid), r, word);
                }
            }
            throw new Te4jException(Te4jException.Code.ILLEGAL_STATE, "segment '" + d.name() + "' already has "
                + NotificationArea.MAPPED_RINGS + " senders of notifications (every ring of its area is claimed): close an agent that"
                + " sends to it");
        }
        catch (final RuntimeException e)
        {
            agent.unmap(transport, base);
            throw e;
        }
    }

    @Override
    public String segment()
    {
        return segment;
    }

    /** Whether {@code d} names the area this target mapped (a republish may bring a new one). */
    @Override
    public boolean sameArea(final SegmentDescriptor d)
    {
        return d.notificationArea() != null && java.util.Arrays.equals(d.notificationArea().handle.toBytes(), descriptorHandle);
    }

    /**
     * Reserves the next position, waiting for the receiver to free a slot until {@code deadline}
     * (System.nanoTime): the back-pressure of a full receive queue.
     */
    @Override
    public long reserve(final long deadline)
    {
        long park = 1_000;
        for (;;)
        {
            final Lock l = mapping();
            try
            {
                synchronized (this)
                {
                    checkUsable();
                    if (next - area.consumed(ring) < area.depth())
                    {
                        return next++;
                    }
                }
            }
            finally
            {
                l.unlock();
            }
            if (owner != null && owner.exited())
            {
                throw new PeerLostException("notification to segment '" + segment + "': its owner process "
                    + owner.pid() + " has exited");
            }
            final long left = deadline - System.nanoTime();
            if (left <= 0)
            {
                throw NotificationTarget.queueFull(segment, area.depth());
            }
            LockSupport.parkNanos(Math.min(left, park));
            park = Math.min(park * 2, MAX_PARK_NANOS);
        }
    }

    /** Writes the notification of a reserved position; {@code isVoid}: consumed unseen (its data did not land). */
    @Override
    public boolean publish(final long position, final byte[] message, final boolean isVoid)
    {
        final Lock l = transport.enterForDrain();
        if (l == null)
        {
            return false;
        }
        try
        {
            synchronized (this)
            {
                if (closed)
                {
                    return false;
                }
                area.publish(ring, position, message, isVoid);
                return true;
            }
        }
        finally
        {
            l.unlock();
        }
    }

    /** Keeps the transport, whose close unmaps every mapping it made, open while the ring is touched. */
    private Lock mapping()
    {
        try
        {
            return transport.enter();
        }
        catch (final ClosedException e)
        {
            throw new ClosedException("notifications to segment '" + segment + "' (the transport of this agent)");
        }
    }

    private void checkUsable()
    {
        if (closed)
        {
            throw new ClosedException("notifications to segment '" + segment + "'");
        }
        if (!area.isOpen())
        {
            throw new ClosedException("the agent of segment '" + segment + "' (it closed its notifications)");
        }
        if (area.claim(ring) != claim)
        {
            throw new PeerLostException("notification to segment '" + segment + "': its receiver released this"
                + " agent's ring (it took this agent for lost)");
        }
    }

    /** Tells the receiver no more comes on this ring, then unmaps (every position reserved was published or voided). */
    @Override
    public void close()
    {
        final Lock l = transport.enterForDrain();
        try
        {
            synchronized (this)
            {
                if (closed)
                {
                    return;
                }
                if (l != null)
                {
                    area.markSenderClosed(ring);
                }
                closed = true;
            }
        }
        finally
        {
            if (l != null)
            {
                l.unlock();
            }
        }
        if (owner != null)
        {
            owner.close();
        }
        agent.unmap(transport, base);
    }
}
