package io.github.te4j;

import io.github.te4j.exchange.Deadline;
import io.github.te4j.telemetry.NotificationReceivedEvent;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The notifications other agents send to this one ({@link TransferAgent#notifications()}): taken
 * with {@link #poll()}, {@link #take(Duration)}, or handed to a listener on a te4j thread
 * ({@link #setListener(Consumer)}). They wait in this agent's notification area, a bounded ring
 * per sender: nothing is copied out before it is taken, so a receiver that does not take them
 * holds its senders back (their submits wait for room, then fail at their deadlines) and nothing
 * is ever dropped for lack of room.
 *
 * <p>Only a notification from a known, live sender is delivered: the sender's segment must be
 * one this agent can open by name (published through the same exchange or directory) and its
 * owner the process that claimed the ring. A ring whose sender process has exited is emptied
 * unseen (its senders' work is reported lost to the sender's peers by their own checks) and
 * freed for another sender. From one sender, notifications are taken in the order it sent them;
 * between senders, rings are visited in turn.
 *
 * @since 0.1
 */
public final class Notifications
{
    private static final Logger LOG = LoggerFactory.getLogger(Notifications.class);
    private static final long MAX_PARK_NANOS = 200_000;
    /** How long an unknown sender's name waits before it is looked up again (a directory may be remote). */
    private static final long LOOKUP_NANOS = 100_000_000L;

    private final TransferAgent agent;
    private final DeviceBuffer memory;
    private final NotificationArea area;
    private final Sender[] senders;
    private int nextRing;            // guarded by this
    private boolean closed;          // guarded by this
    private Consumer<Notification> listener;  // guarded by this
    private Thread listenerThread;   // guarded by this

    /** What this receiver learnt of the sender that holds a ring's claim. */
    private static final class Sender
    {
        long claim;
        String name;
        ProcessWatch watch;   // null: this process
        boolean known;
        long nextLookup;
    }

    Notifications(final TransferAgent agent, final DeviceBuffer memory)
    {
        this.agent = agent;
        this.memory = memory;
        this.area = NotificationArea.format(MappedMemory.view(memory.address(), memory.size()));
        this.senders = new Sender[area.rings()];
        for (int i = 0; i < senders.length; i++)
        {
            senders[i] = new Sender();
        }
    }

    /** The bytes of this platform's area. */
    static long areaBytes()
    {
        return NotificationArea.bytes(NotificationArea.RINGS, NotificationArea.DEPTH);
    }

    DeviceBuffer memory()
    {
        return memory;
    }

    int rings()
    {
        return area.rings();
    }

    int depth()
    {
        return area.depth();
    }

    /**
     * The next notification, or empty when none is ready now.
     *
     * @return the notification, or empty
     * @throws ClosedException when the agent is closed
     * @since 0.1
     */
    public Optional<Notification> poll()
    {
        return Optional.ofNullable(next("poll"));
    }

    /**
     * The next notification, waiting up to {@code timeout} for one.
     *
     * @param timeout how long to wait; not negative
     * @return the notification
     * @throws Te4jTimeoutException when none came in time
     * @throws IllegalArgumentException when {@code timeout} is null or negative
     * @throws ClosedException when the agent is closed
     * @since 0.1
     */
    public Notification take(final Duration timeout)
    {
        Errors.checkArgument(timeout != null && !timeout.isNegative(), "timeout must be non-negative: " + timeout);
        final long end = Deadline.after(timeout).nanoTime();
        long park = 1_000;
        for (;;)
        {
            final Notification n = next("take");
            if (n != null)
            {
                return n;
            }
            final long left = end - System.nanoTime();
            if (left <= 0)
            {
                throw new Te4jTimeoutException("no notification for segment '" + agent.segmentName() + "' within "
                    + timeout);
            }
            LockSupport.parkNanos(Math.min(left, park));
            park = Math.min(park * 2, MAX_PARK_NANOS);
        }
    }

    /**
     * Hands every notification to {@code listener} on a te4j thread, in the order
     * {@link #poll()} would; {@code null} stops that (a call running finishes). An exception
     * the listener throws is logged, and the next notification still comes. poll and take still
     * work beside a listener; each notification goes to one of them.
     *
     * @param listener the listener, or null to stop
     * @throws ClosedException when the agent is closed
     * @since 0.1
     */
    public void setListener(final Consumer<Notification> listener)
    {
        synchronized (this)
        {
            if (closed)
            {
                throw new ClosedException("TransferAgent '" + agent.segmentName() + "' (its notifications)");
            }
            this.listener = listener;
            if (listener == null || listenerThread != null)
            {
                return;
            }
            listenerThread = new Thread(this::listen, "te4j-notify '" + agent.segmentName() + "'");
            listenerThread.setDaemon(true);
            listenerThread.start();
        }
    }

    private void listen()
    {
        long park = 1_000;
        for (;;)
        {
            final Consumer<Notification> l;
            synchronized (this)
            {
                l = listener;
                if (closed || l == null)
                {
                    listenerThread = null;
                    return;
                }
            }
            final Notification n;
            try
            {
                n = next("listener");
            }
            catch (final ClosedException e)
            {
                return;
            }
            if (n == null)
            {
                LockSupport.parkNanos(park);
                park = Math.min(park * 2, MAX_PARK_NANOS);
                continue;
            }
            park = 1_000;
            try
            {
                l.accept(n);
            }
            catch (final RuntimeException | Error e)
            {
                LOG.warn("notification listener of segment '{}' threw on {}", agent.segmentName(), n, e);
            }
        }
    }

    /** Takes the next deliverable notification from the rings, visiting them in turn; null when none. */
    private Notification next(final String via)
    {
        final Lock l;
        try
        {
            l = memory.enter();
        }
        catch (final ClosedException e)
        {
            throw new ClosedException("TransferAgent '" + agent.segmentName() + "' (its notification area)");
        }
        try
        {
            return nextLocked(via);
        }
        finally
        {
            l.unlock();
        }
    }

    private synchronized Notification nextLocked(final String via)
    {
        if (closed)
        {
            throw new ClosedException("TransferAgent '" + agent.segmentName() + "' (its notifications)");
        }
        final int rings = area.rings();
        for (int k = 0; k < rings; k++)
        {
            final int r = (nextRing + k) % rings;
            final Notification n = take(r, via);
            if (n != null)
            {
                nextRing = (r + 1) % rings;
                return n;
            }
        }
        return null;
    }

    /** Ring {@code r}'s next deliverable notification, skipping void slots; frees the ring of a gone sender. */
    private Notification take(final int r, final String via)
    {
        final long claim = area.claim(r);
        if (claim == 0)
        {
            return null;
        }
        final Sender s = check(r, claim);
        if (s == null)
        {
            return null;
        }
        for (;;)
        {
            final long position = area.consumed(r);
            if (!area.isPublished(r, position))
            {
                if (area.senderClosed(r) && !area.isPublished(r, position))
                {
                    free(r, s, claim, "closed its notifications");
                }
                return null;
            }
            if ((area.flags(r, position) & NotificationArea.FLAG_VOID) != 0)
            {
                area.setConsumed(r, position + 1);
                continue;
            }
            final byte[] payload = area.payload(r, position);
            if (payload == null)
            {
                LOG.warn("notification area of segment '{}': ring {} of sender '{}' holds a slot whose length or CRC"
                    + " does not hold at position {}: the ring is dropped", agent.segmentName(), r, s.name, position);
                free(r, s, claim, "wrote a bad slot");
                return null;
            }
            area.setConsumed(r, position + 1);
            final NotificationReceivedEvent e = new NotificationReceivedEvent();
            if (e.shouldCommit())
            {
                e.receiver = agent.segmentName();
                e.sender = s.name;
                e.bytes = payload.length;
                e.position = position;
                e.via = via;
                e.commit();
            }
            return new Notification(s.name, payload);
        }
    }

    /**
     * The sender holding ring {@code r}, when it may deliver: announced, known by name with the
     * claiming process as its owner, and alive. A sender found gone frees the ring; one not
     * known (yet) is left waiting, its notifications neither delivered nor dropped.
     */
    private Sender check(final int r, final long claim)
    {
        final Sender s = senders[r];
        final boolean overRdma = r >= NotificationArea.MAPPED_RINGS;
        final int owner = (int) (claim >>> 32);  // a mapped sender's pid, or an RDMA sender's flag and rank
        if (s.claim != claim)
        {
            forget(s);
            s.claim = claim;
            if (overRdma && owner != (int) (NotificationArea.RDMA_CLAIM | (r - NotificationArea.MAPPED_RINGS)))
            {
                free(r, s, claim, "claimed an RDMA ring that is not its rank's");
                return null;
            }
            s.watch = overRdma || owner == ProcessHandle.current().pid() ? null : ProcessWatch.of(owner);
        }
        if (overRdma ? rdmaSenderLost(r - NotificationArea.MAPPED_RINGS) : s.watch != null && s.watch.exited())
        {
            free(r, s, claim, overRdma ? "its RDMA rank " + (r - NotificationArea.MAPPED_RINGS) + " is lost"
                : "its process " + owner + " exited");
            return null;
        }
        if (area.ready(r) != claim)
        {
            return null;
        }
        if (s.name == null)
        {
            s.name = area.senderName(r);
            if (s.name == null)
            {
                free(r, s, claim, "announced no segment name");
                return null;
            }
        }
        if (!s.known && System.nanoTime() - s.nextLookup >= 0)
        {
            s.known = isKnown(s.name, overRdma, overRdma ? r - NotificationArea.MAPPED_RINGS : owner);
            s.nextLookup = System.nanoTime() + LOOKUP_NANOS;
        }
        return s.known ? s : null;
    }

    /** Whether the RDMA rank writing a ring is lost to this agent's transport (none: it cannot have written). */
    private boolean rdmaSenderLost(final int rank)
    {
        final RdmaTransport rdma = agent.rdma();
        return rdma == null || rank >= rdma.numRanks() || rdma.peerLost(rank);
    }

    /**
     * Whether {@code name} is a segment this agent can open, published by the sender that claimed
     * the ring: over RDMA, from that RDMA rank; mapped, with its notification area owned by that
     * process.
     */
    private boolean isKnown(final String name, final boolean overRdma, final int owner)
    {
        final SegmentDescriptor d;
        try
        {
            final byte[] bytes = agent.descriptorNamed(name);
            if (bytes == null)
            {
                return false;
            }
            d = SegmentDescriptor.fromBytes(bytes);
        }
        catch (final RuntimeException e)
        {
            return false;
        }
        if (overRdma)
        {
            return d.rdma() != null && d.rdma().rank == owner;
        }
        return d.notificationArea() != null && d.notificationArea().handle.ownerPid() == owner;
    }

    private void free(final int r, final Sender s, final long claim, final String why)
    {
        final long dropped = countPublished(r);
        if (dropped > 0)
        {
            LOG.warn("segment '{}': {} notification(s) from '{}' not delivered: the sender {}", agent.segmentName(),
                dropped, s.name, why);
        }
        area.reset(r, claim);
        forget(s);
    }

    private long countPublished(final int r)
    {
        long n = 0;
        for (long p = area.consumed(r); n < area.depth() && area.isPublished(r, p); p++)
        {
            if ((area.flags(r, p) & NotificationArea.FLAG_VOID) == 0)
            {
                n++;
            }
        }
        return n;
    }

    private static void forget(final Sender s)
    {
        if (s.watch != null)
        {
            s.watch.close();
        }
        s.claim = 0;
        s.name = null;
        s.watch = null;
        s.known = false;
        s.nextLookup = 0;
    }

    /** Stops the listener and tells senders this agent takes no more; the agent then frees the memory. */
    void close()
    {
        final Thread t;
        synchronized (this)
        {
            if (closed)
            {
                return;
            }
            closed = true;
            final Lock l = memory.tryEnter();
            if (l != null)
            {
                area.markClosed();
                l.unlock();
            }
            for (final Sender s : senders)
            {
                forget(s);
            }
            t = listenerThread;
        }
        if (t != null && t != Thread.currentThread())
        {
            LockSupport.unpark(t);
            try
            {
                t.join(10_000);
            }
            catch (final InterruptedException e)
            {
                Thread.currentThread().interrupt();
            }
        }
    }
}
