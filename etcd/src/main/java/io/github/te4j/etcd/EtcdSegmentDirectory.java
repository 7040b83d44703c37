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
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.PutOption;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchEvent;
import io.github.te4j.exchange.SegmentDirectory;
import io.github.te4j.rendezvous.RendezvousException;
import io.github.te4j.rendezvous.RendezvousTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link SegmentDirectory} in etcd, under {@code /te4j/jobs/<job>/segments/<name>}. Each
 * process's entries are bound to its own lease, so they vanish within the TTL when it dies and at
 * once when it closes the directory. A name belongs to the lease that created it: another process
 * cannot overwrite it while that lease lives. Values are checked (magic, version, size) before they
 * are returned; a watch skips, and logs, a value that fails the checks.
 */
public final class EtcdSegmentDirectory implements SegmentDirectory
{
    private static final Logger LOG = LoggerFactory.getLogger(EtcdSegmentDirectory.class);

    private final EtcdSettings settings;
    private final EtcdSession session;
    private final String base;
    private final List<Runnable> stops = new ArrayList<>();
    private volatile boolean closed;

    private EtcdSegmentDirectory(final EtcdSettings settings, final EtcdSession session)
    {
        this.settings = settings;
        this.session = session;
        this.base = settings.prefix() + "segments/";
    }

    /**
     * Connects and grants this process's lease, within {@link EtcdSettings#connectTimeout()}.
     *
     * @param settings where etcd is
     * @return the directory
     */
    public static EtcdSegmentDirectory open(final EtcdSettings settings)
    {
        if (settings == null)
        {
            throw new IllegalArgumentException("settings is null");
        }
        return new EtcdSegmentDirectory(settings, EtcdSession.open(settings));
    }

    @Override
    public void publish(final String name, final byte[] descriptor)
    {
        SegmentDirectory.checkName(name);
        if (descriptor == null)
        {
            throw new IllegalArgumentException("descriptor is null");
        }
        if (descriptor.length > settings.maxBlobBytes())
        {
            throw new IllegalArgumentException("descriptor of " + descriptor.length + " bytes exceeds the limit of "
                + settings.maxBlobBytes() + " bytes (option maxBlobBytes)");
        }
        usable();
        final long deadline = deadline();
        final ByteSequence key = EtcdSession.bytes(base + name);
        final ByteSequence value = ByteSequence.from(EtcdRecords.segment(descriptor));
        final PutOption withLease = PutOption.builder().withLeaseId(session.lease()).build();
        while (true)
        {
            final TxnResponse t = session.call("publishing segment " + name, () -> session.client().getKVClient().txn()
                .If(new Cmp(key, Cmp.Op.EQUAL, CmpTarget.createRevision(0)))
                .Then(Op.put(key, value, withLease))
                .Else(Op.get(key, GetOption.DEFAULT)).commit(), deadline);
            if (t.isSucceeded())
            {
                return;
            }
            final List<KeyValue> kvs = t.getGetResponses().get(0).getKvs();
            if (kvs.isEmpty())
            {
                continue; // removed between the compare and the read: try again
            }
            final KeyValue kv = kvs.get(0);
            if (kv.getLease() != session.lease())
            {
                throw new RendezvousException("segment " + name, "published by another process (lease "
                    + Long.toHexString(kv.getLease()) + "); names belong to the process that published them first");
            }
            final TxnResponse r = session.call("replacing segment " + name, () -> session.client().getKVClient().txn()
                .If(new Cmp(key, Cmp.Op.EQUAL, CmpTarget.modRevision(kv.getModRevision())))
                .Then(Op.put(key, value, withLease)).commit(), deadline);
            if (r.isSucceeded())
            {
                return;
            }
        }
    }

    @Override
    public boolean remove(final String name)
    {
        SegmentDirectory.checkName(name);
        usable();
        final long deadline = deadline();
        final ByteSequence key = EtcdSession.bytes(base + name);
        final GetResponse g = session.call("reading segment " + name, () -> session.client().getKVClient().get(key),
            deadline);
        if (g.getKvs().isEmpty() || g.getKvs().get(0).getLease() != session.lease())
        {
            return false;
        }
        final long rev = g.getKvs().get(0).getModRevision();
        return session.call("removing segment " + name, () -> session.client().getKVClient().txn()
            .If(new Cmp(key, Cmp.Op.EQUAL, CmpTarget.modRevision(rev)))
            .Then(Op.delete(key, io.etcd.jetcd.options.DeleteOption.DEFAULT)).commit(), deadline).isSucceeded();
    }

    @Override
    public Optional<byte[]> lookup(final String name)
    {
        SegmentDirectory.checkName(name);
        usable();
        final ByteSequence key = EtcdSession.bytes(base + name);
        final GetResponse g = session.call("looking up segment " + name, () -> session.client().getKVClient().get(key),
            deadline());
        return g.getKvs().isEmpty() ? Optional.empty() : Optional.of(decode(g.getKvs().get(0)));
    }

    @Override
    public byte[] await(final String name, final Duration timeout)
    {
        SegmentDirectory.checkName(name);
        if (timeout == null)
        {
            throw new IllegalArgumentException("timeout is null");
        }
        if (timeout.isNegative() || timeout.isZero())
        {
            throw new IllegalArgumentException("timeout must be positive: " + timeout);
        }
        final long deadline = Deadline.after(timeout).nanoTime();
        final ByteSequence key = EtcdSession.bytes(base + name);
        long pause = TimeUnit.MILLISECONDS.toNanos(1);
        while (true)
        {
            usable();
            final GetResponse g = session.call("waiting for segment " + name,
                () -> session.client().getKVClient().get(key), deadline + EtcdHandleExchange.grace(timeout));
            if (!g.getKvs().isEmpty())
            {
                return decode(g.getKvs().get(0));
            }
            final long left = deadline - System.nanoTime();
            if (left <= 0)
            {
                throw new RendezvousTimeoutException("etcd job " + settings.job(), "segment " + name, List.of(), timeout);
            }
            TimeUnitSleep.nanos(Math.min(pause, left));
            pause = Math.min(pause * 2, Deadline.toNanos(settings.pollInterval()));
        }
    }

    @Override
    public Map<String, byte[]> list()
    {
        usable();
        final GetResponse g = session.call("listing segments", () -> session.client().getKVClient().get(
            EtcdSession.bytes(base), GetOption.builder().isPrefix(true).build()), deadline());
        final Map<String, byte[]> out = new TreeMap<>();
        for (final KeyValue kv : g.getKvs())
        {
            out.put(name(kv), decode(kv));
        }
        return Collections.unmodifiableMap(out);
    }

    @Override
    public Registration watch(final Listener listener)
    {
        if (listener == null)
        {
            throw new IllegalArgumentException("listener is null");
        }
        usable();
        final GetResponse g = session.call("listing segments", () -> session.client().getKVClient().get(
            EtcdSession.bytes(base), GetOption.builder().isPrefix(true).build()), deadline());
        final ExecutorService calls = Executors.newSingleThreadExecutor(r ->
        {
            final Thread t = new Thread(r, "te4j-etcd-segments-watch");
            t.setDaemon(true);
            return t;
        });
        for (final KeyValue kv : g.getKvs())
        {
            deliver(calls, listener, kv, WatchEvent.EventType.PUT);
        }
        // From the revision after the listing: no change is missed and none is seen twice.
        final WatchOption opt = WatchOption.builder().isPrefix(true).withRevision(g.getHeader().getRevision() + 1).build();
        final Watch.Watcher w = session.client().getWatchClient().watch(EtcdSession.bytes(base), opt,
            response -> response.getEvents().forEach(e -> deliver(calls, listener, e.getKeyValue(), e.getEventType())),
            error -> LOG.warn("etcd segment watch of job {} ended: {}", settings.job(), EtcdSession.describe(error)));
        final Runnable stop = () ->
        {
            w.close();
            calls.shutdown();
        };
        synchronized (stops)
        {
            stops.add(stop);
        }
        return () ->
        {
            synchronized (stops)
            {
                if (!stops.remove(stop))
                {
                    return;
                }
            }
            stop.run();
        };
    }

    @Override
    public int maxDescriptorBytes()
    {
        return settings.maxBlobBytes();
    }

    /** Stops the watches and revokes this process's lease: its segments go at once. */
    @Override
    public void close()
    {
        if (closed)
        {
            return;
        }
        closed = true;
        final List<Runnable> all;
        synchronized (stops)
        {
            all = new ArrayList<>(stops);
            stops.clear();
        }
        all.forEach(Runnable::run);
        session.close(true);
    }

    @Override
    public String toString()
    {
        return "EtcdSegmentDirectory[" + settings + "]";
    }

    private void deliver(final ExecutorService calls, final Listener listener, final KeyValue kv,
        final WatchEvent.EventType type)
    {
        final String name;
        try
        {
            name = name(kv);
        }
        catch (final RendezvousException e)
        {
            LOG.warn("etcd segments of job {}: {}", settings.job(), e.getMessage());
            return;
        }
        if (type == WatchEvent.EventType.DELETE)
        {
            calls.execute(() -> listener.removed(name));
            return;
        }
        if (type != WatchEvent.EventType.PUT)
        {
            return;
        }
        final byte[] d;
        try
        {
            d = decode(kv);
        }
        catch (final RendezvousException e)
        {
            LOG.warn("etcd segments of job {}: skipping {}", settings.job(), e.getMessage());
            return;
        }
        calls.execute(() -> listener.published(name, d));
    }

    private String name(final KeyValue kv)
    {
        final String k = kv.getKey().toString(StandardCharsets.UTF_8);
        final String n = k.substring(Math.min(base.length(), k.length()));
        if (!k.startsWith(base) || !SegmentDirectory.NAME.matcher(n).matches())
        {
            throw new RendezvousException(k, "refused: not a segment name");
        }
        return n;
    }

    private byte[] decode(final KeyValue kv)
    {
        return EtcdRecords.segment(kv.getValue().getBytes(), settings.maxBlobBytes(),
            "segment " + kv.getKey().toString(StandardCharsets.UTF_8));
    }

    private long deadline()
    {
        return Deadline.after(settings.connectTimeout()).nanoTime();
    }

    private void usable()
    {
        if (closed)
        {
            throw new IllegalStateException("etcd segment directory is closed");
        }
        final String lost = session.leaseLost();
        if (lost != null)
        {
            throw new RendezvousException("etcd job " + settings.job(), "segment directory lost its lease: " + lost);
        }
    }
}
