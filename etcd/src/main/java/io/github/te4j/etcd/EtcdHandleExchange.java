package io.github.te4j.etcd;

import io.github.te4j.exchange.Deadline;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.kv.TxnResponse;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.DeleteOption;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.PutOption;
import io.etcd.jetcd.options.WatchOption;
import io.github.te4j.exchange.HandleExchange;
import io.github.te4j.PeerLostException;
import io.github.te4j.Te4jException;
import io.github.te4j.rendezvous.Rendezvous;
import io.github.te4j.rendezvous.RendezvousException;
import io.github.te4j.rendezvous.RendezvousTimeoutException;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link HandleExchange} over etcd v3: ranks on any number of hosts meet under a job's key
 * prefix, {@code /te4j/jobs/<job>/}, and never read or write keys outside it.
 * <pre>
 *   /te4j/jobs/&lt;job&gt;/ranks/&lt;r&gt;            rank r's membership: world size, generation, pid, host
 *   /te4j/jobs/&lt;job&gt;/op/&lt;seq&gt;/&lt;r&gt;         rank r's blob of collective #seq (barriers carry none)
 * </pre>
 * Every key a rank writes is bound to its lease ({@link EtcdSettings#ttl()}, default 10 s), which
 * it keeps alive while it lives. A rank that dies, hangs or is cut off from etcd loses its lease
 * and its keys; the others, waiting in a collective, then get a {@link PeerLostException} naming
 * it: within the TTL of its last renewal plus one poll interval. {@link #checkPeers()} asks the
 * same question outside a collective.
 *
 * <p>Joining claims {@code ranks/<r>} with a transaction that succeeds only when the key is free
 * (a rank of an earlier run that has not expired yet is waited for, up to the connect timeout).
 * Every record read is checked before use: magic, version, rank, operation, world size and
 * generation against this rank's, the blob against the size limit, and the key's lease against
 * the lease of the rank that owns the key, so a value that another client put under the prefix is
 * refused with a {@link RendezvousException} naming the key. A job whose ranks disagree on the
 * world size or the generation is refused, and the message says which of the two.
 *
 * <p>A collective publishes its entry, then looks at the job's keys (one consistent transaction per
 * look) until every rank's entry is there; between looks it sleeps until a watch of the job's
 * prefix reports a change, at most the poll interval (backing off from 1 ms to it). A rank
 * publishing #k deletes its entry of #k-2 in the same transaction: everyone has read it. While
 * etcd is unreachable (restarting, say), every call is retried until the collective's deadline:
 * an etcd that comes back with its data in time lets the collective complete; otherwise the
 * collective fails naming etcd and its last error (a look begun before the deadline may end up to
 * a second after it).
 *
 * <p>{@link #close()} marks the rank closed, waits (at most the TTL, at most 5 s) for the other
 * ranks to close as well, since they may still be reading its last entry, then revokes the lease
 * so the job's keys go at once; a rank that is still running when that wait ends finds the keys
 * until the TTL runs out.
 */
public final class EtcdHandleExchange implements HandleExchange
{
    private static final Logger LOG = LoggerFactory.getLogger(EtcdHandleExchange.class);

    private final EtcdSettings settings;
    private final EtcdSession session;
    private final int rank;
    private final int worldSize;
    private final String prefix;
    private final String where;
    private final boolean[] everSeen;
    private final boolean[] closedSeen;
    private final long[] knownLease;
    private final Object lock = new Object();
    /** Counts the watch's events under the job prefix; waits sleep on it between looks. */
    private final Object wake = new Object();
    private long events;
    private volatile Watch.Watcher watcher;
    private int seq;
    private volatile Te4jException failure;
    private volatile boolean closed;

    private EtcdHandleExchange(final EtcdSettings settings, final EtcdSession session, final int rank,
        final int worldSize)
    {
        this.settings = settings;
        this.session = session;
        this.rank = rank;
        this.worldSize = worldSize;
        this.prefix = settings.prefix();
        this.where = "etcd job " + settings.job();
        this.everSeen = new boolean[worldSize];
        this.closedSeen = new boolean[worldSize];
        this.knownLease = new long[worldSize];
    }

    /**
     * Joins a job: connects, grants the lease and claims the rank, within
     * {@link EtcdSettings#connectTimeout()}.
     *
     * @param settings where etcd is and how the job lives there
     * @param rank this process's rank
     * @param worldSize the number of ranks, 1..{@value Rendezvous#MAX_WORLD_SIZE}
     * @return the joined exchange
     * @throws RendezvousException when etcd cannot be reached in time, the rank stays taken, or the
     *         ranks already there disagree on world size or generation
     */
    public static EtcdHandleExchange join(final EtcdSettings settings, final int rank, final int worldSize)
    {
        if (settings == null)
        {
            throw new IllegalArgumentException("settings is null");
        }
        if (worldSize < 1 || worldSize > Rendezvous.MAX_WORLD_SIZE)
        {
            throw new IllegalArgumentException("worldSize must be 1.." + Rendezvous.MAX_WORLD_SIZE + ": " + worldSize);
        }
        if (rank < 0 || rank >= worldSize)
        {
            throw new IllegalArgumentException("rank " + rank + " out of range 0.." + (worldSize - 1));
        }
        final long deadline = Deadline.after(settings.connectTimeout()).nanoTime();
        while (true)
        {
            final EtcdSession session = EtcdSession.open(settings);
            final EtcdHandleExchange ex = new EtcdHandleExchange(settings, session, rank, worldSize);
            try
            {
                ex.claim(deadline);
                ex.startWatch();
                return ex;
            }
            catch (final RendezvousException e)
            {
                session.close(true);
                // A lease that ran out before the rank was claimed was never seen by another rank: a
                // process starved that long (a loaded machine) may simply start over with a new one.
                if (!e.getMessage().contains("lease not found") || System.nanoTime() >= deadline)
                {
                    throw e;
                }
                LOG.warn("etcd rank {}: lease expired before joining job {}; joining again with a new lease", rank,
                    settings.job());
            }
            catch (final RuntimeException e)
            {
                session.close(true);
                throw e;
            }
        }
    }

    @Override
    public int rank()
    {
        return rank;
    }

    @Override
    public int worldSize()
    {
        return worldSize;
    }

    @Override
    public Duration defaultTimeout()
    {
        return settings.defaultTimeout();
    }

    /** @return the settings this exchange runs with */
    public EtcdSettings settings()
    {
        return settings;
    }

    /** @return this rank's lease id */
    public long lease()
    {
        return session.lease();
    }

    @Override
    public List<byte[]> allGather(final byte[] mine, final Duration timeout)
    {
        if (mine == null)
        {
            throw new IllegalArgumentException("mine is null");
        }
        if (mine.length > settings.maxBlobBytes())
        {
            throw new IllegalArgumentException("blob of " + mine.length + " bytes exceeds the limit of "
                + settings.maxBlobBytes() + " bytes (option maxBlobBytes)");
        }
        return collective(EtcdRecords.GATHER, mine, timeout);
    }

    @Override
    public void barrier(final Duration timeout)
    {
        collective(EtcdRecords.BARRIER, new byte[0], timeout);
    }

    /**
     * Looks once whether every rank that has joined is still alive.
     *
     * @param timeout how long the look may take
     * @throws PeerLostException naming the first rank whose lease is gone
     * @throws RendezvousException when this rank's own lease is gone or etcd cannot be reached
     */
    public void checkPeers(final Duration timeout)
    {
        final long deadline = System.nanoTime() + nanos(timeout);
        synchronized (lock)
        {
            usable();
            final Snapshot s = snapshot(-1, deadline, "checking peers");
            for (int r = 0; r < worldSize; r++)
            {
                if (r != rank && s.members[r] == null && everSeen[r] && !closedSeen[r])
                {
                    throw fail(lost(r));
                }
            }
        }
    }

    @Override
    public void close()
    {
        if (closed)
        {
            return;
        }
        closed = true;
        final Watch.Watcher w = watcher;
        if (w != null)
        {
            w.close();
        }
        boolean revoke = false;
        try
        {
            if (failure == null && session.leaseLost() == null)
            {
                revoke = depart();
            }
        }
        catch (final RuntimeException e)
        {
            LOG.debug("etcd rank {}: leaving job {}: {}", rank, settings.job(), e.toString());
        }
        session.close(revoke);
    }

    @Override
    public String toString()
    {
        return "EtcdHandleExchange[rank " + rank + "/" + worldSize + ", " + settings + "]";
    }

    private String memberKey(final int r)
    {
        return prefix + "ranks/" + r;
    }

    private String opPrefix(final int s)
    {
        return prefix + "op/" + String.format("%010d", s) + "/";
    }

    private byte[] memberRecord(final byte state)
    {
        String host;
        try
        {
            host = InetAddress.getLocalHost().getHostName();
        }
        catch (final Exception e)
        {
            host = "unknown";
        }
        return EtcdRecords.member(new EtcdRecords.Member(state, rank, worldSize, settings.generation(),
            ProcessHandle.current().pid(), host));
    }

    /** Claims ranks/&lt;rank&gt; for this lease, waiting for an earlier holder's lease to run out. */
    private void claim(final long deadline)
    {
        final ByteSequence key = EtcdSession.bytes(memberKey(rank));
        final ByteSequence value = ByteSequence.from(memberRecord(EtcdRecords.LIVE));
        final PutOption withLease = PutOption.builder().withLeaseId(session.lease()).build();
        String holder = null;
        while (true)
        {
            final TxnResponse t;
            try
            {
                t = session.call("claiming rank " + rank + " of job " + settings.job(), () ->
                    session.client().getKVClient().txn()
                        .If(new Cmp(key, Cmp.Op.EQUAL, CmpTarget.createRevision(0)))
                        .Then(Op.put(key, value, withLease))
                        .Else(Op.get(key, GetOption.DEFAULT)).commit(), deadline);
            }
            catch (final RendezvousException e)
            {
                if (holder == null)
                {
                    throw e;
                }
                throw taken(holder, e);
            }
            if (t.isSucceeded())
            {
                break;
            }
            final List<KeyValue> kvs = t.getGetResponses().get(0).getKvs();
            if (!kvs.isEmpty())
            {
                final KeyValue kv = kvs.get(0);
                if (kv.getLease() == session.lease())
                {
                    break; // an earlier attempt went through before etcd's answer was lost
                }
                holder = describeHolder(kv);
                checkAgreement(kv, rank);
            }
            if (System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(500) > deadline)
            {
                throw taken(holder, null);
            }
            sleepMillis(200);
        }
        // Ranks already there must agree with this one; later arrivals are checked in every look.
        synchronized (lock)
        {
            snapshot(-1, deadline, "joining");
        }
        LOG.debug("etcd rank {}/{} joined {} with lease {}", rank, worldSize, settings, Long.toHexString(session.lease()));
    }

    private RendezvousException taken(final String holder, final Throwable cause)
    {
        return new RendezvousException(where, "rank " + rank + " is taken by " + holder + ": another process "
            + "of this job claims the same rank, or a process of an earlier run that has not expired yet "
            + "(its keys go within the TTL it set); gave up after the connect timeout of "
            + settings.connectTimeout().toSeconds() + " s", cause);
    }

    private String describeHolder(final KeyValue kv)
    {
        try
        {
            final EtcdRecords.Member m = EtcdRecords.member(kv.getValue().getBytes(), rank, where);
            return m.who() + " (lease " + Long.toHexString(kv.getLease()) + (m.state() == EtcdRecords.CLOSED
                ? ", closed" : "") + ")";
        }
        catch (final RendezvousException e)
        {
            return "a value not written by te4j (" + e.reason() + ")";
        }
    }

    private List<byte[]> collective(final byte kind, final byte[] mine, final Duration timeout)
    {
        final long deadline = System.nanoTime() + nanos(timeout);
        synchronized (lock)
        {
            usable();
            final int s = ++seq;
            final String what = (kind == EtcdRecords.BARRIER ? "barrier" : "allGather") + " #" + s;
            try
            {
                publish(kind, s, mine, deadline, what);
                final byte[][] blobs = awaitAll(kind, s, deadline, timeout, what);
                return kind == EtcdRecords.BARRIER ? List.of() : Collections.unmodifiableList(Arrays.asList(blobs));
            }
            catch (final RendezvousException e)
            {
                throw fail(e);
            }
        }
    }

    private void publish(final byte kind, final int s, final byte[] blob, final long deadline, final String what)
    {
        final ByteSequence key = EtcdSession.bytes(opPrefix(s) + rank);
        final byte[] value = EtcdRecords.entry(kind, rank, s, worldSize, settings.generation(), blob);
        final ByteSequence v = ByteSequence.from(value);
        final PutOption withLease = PutOption.builder().withLeaseId(session.lease()).build();
        // This rank publishes #s only after it finished #s-1, which every rank published only after it
        // finished #s-2: nobody reads this rank's entry of #s-2 any more, so the same transaction deletes it.
        final Op[] then = s > 2
            ? new Op[] {Op.put(key, v, withLease), Op.delete(EtcdSession.bytes(opPrefix(s - 2) + rank), DeleteOption.DEFAULT)}
            : new Op[] {Op.put(key, v, withLease)};
        final TxnResponse t;
        try
        {
            t = session.call("publishing " + what, () -> session.client().getKVClient().txn()
                .If(new Cmp(key, Cmp.Op.EQUAL, CmpTarget.createRevision(0)))
                .Then(then)
                .Else(Op.get(key, GetOption.DEFAULT)).commit(), deadline);
        }
        catch (final RendezvousException e)
        {
            if (e.getMessage().contains("lease not found"))
            {
                throw ownLeaseLost("etcd no longer knows lease " + Long.toHexString(session.lease()));
            }
            throw e;
        }
        if (!t.isSucceeded())
        {
            final List<KeyValue> kvs = t.getGetResponses().get(0).getKvs();
            final KeyValue kv = kvs.isEmpty() ? null : kvs.get(0);
            if (kv == null || kv.getLease() != session.lease() || !Arrays.equals(kv.getValue().getBytes(), value))
            {
                throw new RendezvousException(where, "refused: key " + key + " already holds a value that this rank "
                    + "did not write" + (kv == null ? "" : " (lease " + Long.toHexString(kv.getLease()) + ", "
                    + kv.getValue().size() + " bytes)") + "; another client writes under this job's prefix");
            }
        }
    }

    private byte[][] awaitAll(final byte kind, final int s, final long deadline, final Duration timeout,
        final String what)
    {
        long pause = TimeUnit.MILLISECONDS.toNanos(1);
        final long maxPause = Deadline.toNanos(settings.pollInterval());
        while (true)
        {
            // counted before the look: a change that lands while it runs still cuts the next wait short
            final long seen = eventCount();
            // a look begun before the deadline may finish after it, so that a slow answer reads as the
            // timeout it is (naming the missing ranks) rather than as an unreachable etcd
            final Snapshot snap = snapshot(s, deadline + grace(timeout), what);
            final byte[][] blobs = new byte[worldSize][];
            for (final KeyValue kv : snap.entries)
            {
                final String k = kv.getKey().toString(StandardCharsets.UTF_8);
                final int r = keyRank(k, opPrefix(s).length(), k);
                final String who = "rank " + r + " (" + k + ")";
                if (r >= worldSize)
                {
                    throw new RendezvousException(who, "refused: rank out of range 0.." + (worldSize - 1));
                }
                if (snap.members[r] == null)
                {
                    throw new RendezvousException(who, "refused: an entry without a membership record, not written by "
                        + "a rank of this job");
                }
                if (kv.getLease() != snap.leases[r])
                {
                    throw new RendezvousException(who, "refused: written under lease " + Long.toHexString(kv.getLease())
                        + ", not rank " + r + "'s lease " + Long.toHexString(snap.leases[r]));
                }
                blobs[r] = EtcdRecords.entry(kv.getValue().getBytes(), kind, r, s, worldSize, settings.generation(),
                    settings.maxBlobBytes(), who);
            }
            final List<Integer> missing = new ArrayList<>();
            for (int r = 0; r < worldSize; r++)
            {
                if (blobs[r] == null)
                {
                    // gone, or closed without taking part: either way it will never arrive
                    if ((snap.members[r] == null && everSeen[r])
                        || (snap.members[r] != null && snap.members[r].state() == EtcdRecords.CLOSED))
                    {
                        throw lost(r);
                    }
                    missing.add(r);
                }
            }
            if (missing.isEmpty())
            {
                return blobs;
            }
            final long left = deadline - System.nanoTime();
            if (left <= 0)
            {
                throw new RendezvousTimeoutException(where, what, missing, timeout);
            }
            awaitEvent(seen, Math.min(pause, left));
            pause = Math.min(pause * 2, maxPause);
        }
    }

    /**
     * Watches the job's prefix so that a wait wakes as soon as something under it changes; the
     * looks themselves stay consistent reads, and the poll interval bounds a wait whose watch
     * missed an event (etcd restarting, say).
     */
    private void startWatch()
    {
        try
        {
            watcher = session.client().getWatchClient().watch(EtcdSession.bytes(prefix),
                WatchOption.builder().isPrefix(true).build(),
                response -> signalEvent(),
                error -> LOG.debug("etcd rank {}: watch of job {} ended: {}", rank, settings.job(),
                    EtcdSession.describe(error)));
        }
        catch (final RuntimeException e)
        {
            LOG.debug("etcd rank {}: no watch of job {} ({}); polling only", rank, settings.job(), e.toString());
        }
    }

    private void signalEvent()
    {
        synchronized (wake)
        {
            events++;
            wake.notifyAll();
        }
    }

    private long eventCount()
    {
        synchronized (wake)
        {
            return events;
        }
    }

    /** Waits up to {@code nanos} for an event after the {@code seen}-th. */
    private void awaitEvent(final long seen, final long nanos)
    {
        final long end = System.nanoTime() + nanos;
        synchronized (wake)
        {
            long left = nanos;
            while (events == seen && left > 0)
            {
                try
                {
                    TimeUnit.NANOSECONDS.timedWait(wake, left);
                }
                catch (final InterruptedException e)
                {
                    Thread.currentThread().interrupt();
                    throw new RendezvousException(where, "interrupted while waiting", e);
                }
                left = end - System.nanoTime();
            }
        }
    }

    /** How long a look begun before a collective's deadline may run past it: a second at most. */
    static long grace(final Duration timeout)
    {
        return Math.min(TimeUnit.SECONDS.toNanos(1), nanos(timeout) / 2);
    }

    private PeerLostException lost(final int r)
    {
        return new PeerLostException(r, closedSeen[r] ? "closed its exchange and left job " + settings.job()
            : "its etcd lease ran out or was revoked (the process died, hung, or lost etcd for longer than its TTL); "
                + "job " + settings.job());
    }

    /** The job's members and, for {@code s > 0}, collective #s's entries, in one consistent read. */
    private Snapshot snapshot(final int s, final long deadline, final String what)
    {
        final GetOption byPrefix = GetOption.builder().isPrefix(true).build();
        final ByteSequence members = EtcdSession.bytes(prefix + "ranks/");
        final TxnResponse t = session.call(what, () -> s > 0
            ? session.client().getKVClient().txn().Then(Op.get(members, byPrefix),
                Op.get(EtcdSession.bytes(opPrefix(s)), byPrefix)).commit()
            : session.client().getKVClient().txn().Then(Op.get(members, byPrefix)).commit(), deadline);
        final String own = session.leaseLost();
        if (own != null)
        {
            throw ownLeaseLost(own);
        }
        final Snapshot snap = new Snapshot(worldSize);
        final GetResponse m = t.getGetResponses().get(0);
        for (final KeyValue kv : m.getKvs())
        {
            final String k = kv.getKey().toString(StandardCharsets.UTF_8);
            final int r = keyRank(k, (prefix + "ranks/").length(), k);
            final EtcdRecords.Member rec = checkAgreement(kv, r);
            if (r >= worldSize)
            {
                throw new RendezvousException("rank " + r + " (" + k + ")", "refused: rank out of range 0.."
                    + (worldSize - 1));
            }
            if (everSeen[r] && knownLease[r] != kv.getLease())
            {
                throw new PeerLostException(r, "was replaced by another process (" + rec.who() + ", lease "
                    + Long.toHexString(kv.getLease()) + ") in job " + settings.job());
            }
            snap.members[r] = rec;
            snap.leases[r] = kv.getLease();
            everSeen[r] = true;
            knownLease[r] = kv.getLease();
            closedSeen[r] |= rec.state() == EtcdRecords.CLOSED;
        }
        if (snap.members[rank] == null || snap.leases[rank] != session.lease())
        {
            throw ownLeaseLost("this rank's membership key " + memberKey(rank) + " is gone");
        }
        if (s > 0)
        {
            snap.entries = t.getGetResponses().get(1).getKvs();
        }
        return snap;
    }

    /** Checks a membership record against this rank's world size and generation. */
    private EtcdRecords.Member checkAgreement(final KeyValue kv, final int r)
    {
        final String k = kv.getKey().toString(StandardCharsets.UTF_8);
        final EtcdRecords.Member rec = EtcdRecords.member(kv.getValue().getBytes(), r, "rank " + r + " (" + k + ")");
        if (rec.worldSize() != worldSize)
        {
            throw new RendezvousException(where, "world size disagrees: rank " + r + " (" + rec.who()
                + ") joined with world size " + rec.worldSize() + ", this rank (" + rank + ") has " + worldSize);
        }
        if (rec.generation() != settings.generation())
        {
            throw new RendezvousException(where, "generation disagrees: rank " + r + " (" + rec.who()
                + ") joined generation " + rec.generation() + ", this rank (" + rank + ") is of generation "
                + settings.generation() + "; a rank of another run of the job is still alive");
        }
        return rec;
    }

    /** Marks this rank closed and waits for the others; returns whether every rank has closed. */
    private boolean depart()
    {
        final long deadline = System.nanoTime() + Math.min(settings.ttl().toNanos(), TimeUnit.SECONDS.toNanos(5));
        final ByteSequence key = EtcdSession.bytes(memberKey(rank));
        final ByteSequence value = ByteSequence.from(memberRecord(EtcdRecords.CLOSED));
        session.call("marking rank " + rank + " closed", () -> session.client().getKVClient().put(key, value,
            PutOption.builder().withLeaseId(session.lease()).build()), deadline);
        final GetOption byPrefix = GetOption.builder().isPrefix(true).build();
        final ByteSequence members = EtcdSession.bytes(prefix + "ranks/");
        while (System.nanoTime() < deadline)
        {
            final GetResponse g = session.call("waiting for the other ranks to close",
                () -> session.client().getKVClient().get(members, byPrefix), deadline);
            boolean all = true;
            for (final KeyValue kv : g.getKvs())
            {
                final String k = kv.getKey().toString(StandardCharsets.UTF_8);
                try
                {
                    final int r = keyRank(k, (prefix + "ranks/").length(), k);
                    all &= EtcdRecords.member(kv.getValue().getBytes(), r, k).state() == EtcdRecords.CLOSED;
                }
                catch (final RendezvousException e)
                {
                    all = false;
                }
            }
            if (all)
            {
                return true;
            }
            sleepMillis(20);
        }
        return false;
    }

    private static int keyRank(final String key, final int from, final String where)
    {
        final String tail = key.substring(Math.min(from, key.length()));
        if (!tail.matches("0|[1-9][0-9]{0,2}"))
        {
            throw new RendezvousException(where, "refused: unexpected key under the job's prefix (expected a rank number "
                + "after the last '/')");
        }
        final int r = Integer.parseInt(tail);
        if (r >= Rendezvous.MAX_WORLD_SIZE)
        {
            throw new RendezvousException(where, "refused: rank " + r + " beyond the largest world size "
                + Rendezvous.MAX_WORLD_SIZE);
        }
        return r;
    }

    private RendezvousException ownLeaseLost(final String why)
    {
        return new RendezvousException(where, "rank " + rank + " lost its lease: " + why
            + "; the other ranks consider it lost, so it cannot take part any more (TTL "
            + settings.ttl().toSeconds() + " s)");
    }

    private void usable()
    {
        if (closed)
        {
            throw new IllegalStateException("etcd exchange is closed");
        }
        final Te4jException earlier = failure;
        if (earlier != null)
        {
            throw new RendezvousException(where, "exchange is unusable after an earlier failure: "
                + earlier.getMessage(), earlier);
        }
    }

    private <E extends Te4jException> E fail(final E e)
    {
        failure = e;
        return e;
    }

    private static long nanos(final Duration timeout)
    {
        if (timeout == null)
        {
            throw new IllegalArgumentException("timeout is null");
        }
        if (timeout.isNegative() || timeout.isZero())
        {
            throw new IllegalArgumentException("timeout must be positive: " + timeout);
        }
        return Deadline.toNanos(timeout);
    }

    private static void sleepMillis(final long ms)
    {
        TimeUnitSleep.nanos(TimeUnit.MILLISECONDS.toNanos(ms));
    }

    /** One consistent look at the job. */
    private static final class Snapshot
    {
        final EtcdRecords.Member[] members;
        final long[] leases;
        List<KeyValue> entries = List.of();

        Snapshot(final int world)
        {
            members = new EtcdRecords.Member[world];
            leases = new long[world];
        }
    }
}
