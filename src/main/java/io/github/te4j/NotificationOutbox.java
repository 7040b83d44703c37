package io.github.te4j;

import io.github.te4j.exchange.Deadline;
import io.github.te4j.telemetry.NotificationSentEvent;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BiFunction;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An agent's sending side of notifications: its rings in the receivers' areas
 * ({@link NotificationTarget}, one per receiver, opened on first use), and the notifications of
 * submits whose data has not landed yet. A submit's notification takes its ring position before
 * the part is submitted (so positions, and arrival, follow submit order, and a full queue stops
 * the submit before any data moves); a thread of this agent publishes it once every request of
 * the part is final: the message when all completed, a void slot otherwise (the receiver skips
 * it, so the ring keeps flowing, and the submit's own states tell the sender what failed).
 */
final class NotificationOutbox
{
    private static final Logger LOG = LoggerFactory.getLogger(NotificationOutbox.class);
    private static final long MAX_PARK_NANOS = 100_000;

    private final TransferAgent agent;
    private final Map<String, NotificationTarget> targets = new HashMap<>();  // guarded by this
    private final List<Pending> pending = new ArrayList<>();                   // guarded by this
    private Thread publisher;  // guarded by this
    private boolean closed;    // guarded by this

    /** A submit's notification waiting for its part to be final. */
    private static final class Pending
    {
        final NotificationTarget target;
        final long position;
        final byte[] message;
        final TransferBatch batch;
        final int first;
        final int count;
        final long startNanos;
        final NotificationSentEvent event;

        Pending(final NotificationTarget target, final long position, final byte[] message, final TransferBatch batch,
            final int first, final int count, final NotificationSentEvent event)
        {
            this.target = target;
            this.position = position;
            this.message = message;
            this.batch = batch;
            this.first = first;
            this.count = count;
            this.startNanos = System.nanoTime();
            this.event = event;
        }
    }

    NotificationOutbox(final TransferAgent agent)
    {
        this.agent = agent;
    }

    /**
     * This agent's ring at the owner of {@code d}, opened on first use (again when it republished
     * a new area): over RDMA where this agent reaches the segment so, else mapped.
     */
    private synchronized NotificationTarget target(final SegmentDescriptor d, final long deadline)
    {
        if (closed)
        {
            throw new ClosedException("TransferAgent '" + agent.segmentName() + "' (its notifications)");
        }
        final NotificationTarget known = targets.get(d.name());
        if (known != null && known.sameArea(d))
        {
            return known;
        }
        if (known != null)
        {
            // A new area means a new receiving agent under that name: the old one took its last
            // notification (one still pending for it is dropped when it would be published).
            targets.remove(d.name());
            known.close();
        }
        final RdmaTransport rdma = agent.rdma();
        final NotificationTarget t = rdma != null && d.rdma() != null && d.rdma().rank != rdma.localRank()
            ? RdmaNotificationTarget.open(agent, rdma, d, agent.segmentName(), deadline)
            : MappedNotificationTarget.open(agent, d, agent.segmentName());
        targets.put(d.name(), t);
        return t;
    }

    /**
     * Submits a part with a notification: {@code submit} checks the part and, before anything of
     * it runs, calls the gate, which reserves this agent's next position at {@code segment}'s
     * owner (waiting for room until the deadline: a part refused by its checks takes no slot,
     * and one held back by a full queue runs nothing); the message is then published once
     * requests [first, first + count) of {@code batch} are final.
     */
    int submit(final TransferBatch batch, final SegmentHandle segment, final byte[] message, final Duration timeout,
        final int count, final BiFunction<Duration, Supplier<Duration>, Integer> submit)
    {
        final NotificationSentEvent event = new NotificationSentEvent();
        event.begin();
        final long deadline = Deadline.after(timeout).nanoTime();
        final NotificationTarget t = target(segment.descriptor(), deadline);
        final long[] position = {-1};
        final int first;
        try
        {
            first = submit.apply(timeout, () ->
            {
                position[0] = t.reserve(deadline);
                return Duration.ofNanos(Math.max(0, deadline - System.nanoTime()));
            });
        }
        catch (final RuntimeException e)
        {
            if (position[0] >= 0)
            {
                try
                {
                    t.publish(position[0], null, true);
                }
                catch (final RuntimeException voidFailed)
                {
                    e.addSuppressed(voidFailed);
                }
            }
            throw e;
        }
        final Pending p = new Pending(t, position[0], message.clone(), batch, first, count, event);
        synchronized (this)
        {
            if (closed)
            {
                t.publish(position[0], null, true);
                throw new ClosedException("TransferAgent '" + agent.segmentName() + "' (its notifications)");
            }
            pending.add(p);
            if (publisher == null)
            {
                publisher = new Thread(this::publishLoop, "te4j-notify-send '" + agent.segmentName() + "'");
                publisher.setDaemon(true);
                publisher.start();
            }
            else
            {
                notifyAll();
            }
        }
        return first;
    }

    /** A notification on its own: published as soon as a slot is free (until the deadline). */
    void send(final SegmentDescriptor d, final byte[] message, final Duration timeout)
    {
        final NotificationSentEvent event = new NotificationSentEvent();
        event.begin();
        final long deadline = Deadline.after(timeout).nanoTime();
        final NotificationTarget t = target(d, deadline);
        final long position = t.reserve(deadline);
        if (!t.publish(position, message, false))
        {
            throw new ClosedException("TransferAgent '" + agent.segmentName() + "' (its notifications)");
        }
        record(event, t, message.length, false, position);
    }

    private void record(final NotificationSentEvent event, final NotificationTarget t, final int bytes,
        final boolean withSubmit, final long position)
    {
        if (event.shouldCommit())
        {
            event.sender = agent.segmentName();
            event.target = t.segment();
            event.bytes = bytes;
            event.withSubmit = withSubmit;
            event.position = position;
            event.commit();
        }
    }

    /** Publishes (or voids) pending notifications whose parts are final; false when the part is still running. */
    private boolean settle(final Pending p, final boolean force)
    {
        int outcome;
        try
        {
            outcome = p.batch.partOutcome(p.first, p.count);
        }
        catch (final RuntimeException e)
        {
            outcome = -1;
        }
        if (outcome == 0 && !force)
        {
            return false;
        }
        final boolean landed = outcome == 1;
        try
        {
            p.target.publish(p.position, p.message, !landed);
        }
        catch (final RuntimeException e)
        {
            // Its receiver is gone or unreachable (a lost peer): nothing can carry it any more.
            LOG.warn("notification to segment '{}' (position {}) could not be published: {}", p.target.segment(),
                p.position, e.toString());
            return true;
        }
        if (landed)
        {
            record(p.event, p.target, p.message.length, true, p.position);
        }
        return true;
    }

    private void publishLoop()
    {
        long park = 1_000;
        for (;;)
        {
            final List<Pending> now;
            synchronized (this)
            {
                while (pending.isEmpty() && !closed)
                {
                    try
                    {
                        wait();
                    }
                    catch (final InterruptedException e)
                    {
                        Thread.currentThread().interrupt();
                        return;
                    }
                    park = 1_000;
                }
                if (closed)
                {
                    return;
                }
                now = new ArrayList<>(pending);
            }
            final List<Pending> done = new ArrayList<>();
            for (final Pending p : now)
            {
                if (settle(p, false))
                {
                    done.add(p);
                }
            }
            synchronized (this)
            {
                pending.removeAll(done);
                if (!done.isEmpty())
                {
                    park = 1_000;
                    continue;
                }
            }
            LockSupport.parkNanos(park);
            park = Math.min(park * 2, MAX_PARK_NANOS);
        }
    }

    /**
     * Publishes what is pending (each part given up to {@code graceNanos} in all to finish; one
     * still running then is void), then closes every ring. Before the agent's batches close, so
     * a submit that completes in time still delivers its notification.
     */
    void close(final long graceNanos)
    {
        final Thread t;
        final List<Pending> left;
        final List<NotificationTarget> all;
        synchronized (this)
        {
            if (closed)
            {
                return;
            }
            closed = true;
            notifyAll();
            t = publisher;
        }
        if (t != null)
        {
            LockSupport.unpark(t);
            try
            {
                t.join(1_000);
            }
            catch (final InterruptedException e)
            {
                Thread.currentThread().interrupt();
            }
        }
        synchronized (this)
        {
            left = new ArrayList<>(pending);
            pending.clear();
            all = new ArrayList<>(targets.values());
            targets.clear();
        }
        final long end = System.nanoTime() + graceNanos;
        final Iterator<Pending> it = left.iterator();
        while (it.hasNext())
        {
            final Pending p = it.next();
            while (!settle(p, System.nanoTime() - end >= 0))
            {
                LockSupport.parkNanos(MAX_PARK_NANOS);
            }
        }
        for (final NotificationTarget n : all)
        {
            n.close();
        }
    }
}
