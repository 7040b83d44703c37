package io.github.te4j.exchange;

import io.github.te4j.rendezvous.RendezvousException;
import io.github.te4j.rendezvous.RendezvousTimeoutException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A {@link SegmentDirectory} held in this JVM, for ranks that are threads of one process (the
 * host platform's in-process jobs, tests). Instances opened with the same space name share one
 * directory; each instance owns what it published and its entries go when it is closed, as a
 * process's entries go when it dies in a directory held by a store.
 *
 * <p>Ranks that are separate processes need a store they all reach: the etcd directory
 * ({@code etcd://} through {@link Exchanges#openDirectory}).
 *
 * @since 0.1
 */
public final class InMemorySegmentDirectory implements SegmentDirectory
{
    /**
     * The default limit of one descriptor.
     *
     * @since 0.1
     */
    public static final int DEFAULT_MAX_DESCRIPTOR_BYTES = 1 << 20;

    private static final Map<String, Space> SPACES = new HashMap<>();
    private static final AtomicLong OWNERS = new AtomicLong();

    private final Space space;
    private final long owner = OWNERS.incrementAndGet();
    private final int maxDescriptorBytes;
    private final List<Reg> registrations = new ArrayList<>();
    private final AtomicBoolean closed = new AtomicBoolean();

    private InMemorySegmentDirectory(final Space space, final int maxDescriptorBytes)
    {
        this.space = space;
        this.maxDescriptorBytes = maxDescriptorBytes;
    }

    /**
     * Opens the directory named {@code space} of this JVM, creating it when it is new.
     *
     * @param space the directory's name (the same rules as a segment name)
     * @return a new member of that directory
     * @since 0.1
     */
    public static InMemorySegmentDirectory open(final String space)
    {
        return open(space, DEFAULT_MAX_DESCRIPTOR_BYTES);
    }

    /**
     * Joins the in-JVM directory named {@code space}, made on first use.
     *
     * @param space the directory's name (the same rules as a segment name)
     * @param maxDescriptorBytes the largest descriptor this member publishes, 0 or more
     * @return a new member of that directory
     * @throws IllegalArgumentException when {@code space} is null or not a valid name, or {@code
     *     maxDescriptorBytes} is negative
     * @since 0.1
     */
    public static InMemorySegmentDirectory open(final String space, final int maxDescriptorBytes)
    {
        SegmentDirectory.checkName(Checks.notNull(space, "space"));
        if (maxDescriptorBytes < 0)
        {
            throw new IllegalArgumentException("maxDescriptorBytes must not be negative: " + maxDescriptorBytes);
        }
        synchronized (SPACES)
        {
            return new InMemorySegmentDirectory(SPACES.computeIfAbsent(space, Space::new), maxDescriptorBytes);
        }
    }

    @Override
    public void publish(final String name, final byte[] descriptor)
    {
        SegmentDirectory.checkName(name);
        Checks.notNull(descriptor, "descriptor");
        if (descriptor.length > maxDescriptorBytes)
        {
            throw new IllegalArgumentException("descriptor of " + descriptor.length + " bytes exceeds the limit of "
                + maxDescriptorBytes + " bytes");
        }
        checkOpen();
        final byte[] copy = descriptor.clone();
        synchronized (space)
        {
            final Entry old = space.entries.get(name);
            if (old != null && old.owner != owner)
            {
                throw new RendezvousException("segment " + name, "published by another member of directory '"
                    + space.name + "'; names are owned by the member that published them first");
            }
            space.entries.put(name, new Entry(owner, copy));
            space.notifyAll();
            for (final Reg r : space.watchers)
            {
                r.published(name, copy);
            }
        }
    }

    @Override
    public boolean remove(final String name)
    {
        SegmentDirectory.checkName(name);
        checkOpen();
        synchronized (space)
        {
            return removeOwned(name);
        }
    }

    @Override
    public Optional<byte[]> lookup(final String name)
    {
        SegmentDirectory.checkName(name);
        checkOpen();
        synchronized (space)
        {
            final Entry e = space.entries.get(name);
            return e == null ? Optional.empty() : Optional.of(e.descriptor.clone());
        }
    }

    @Override
    public byte[] await(final String name, final Duration timeout)
    {
        SegmentDirectory.checkName(name);
        final long deadline = System.nanoTime() + positiveNanos(timeout);
        synchronized (space)
        {
            while (true)
            {
                checkOpen();
                final Entry e = space.entries.get(name);
                if (e != null)
                {
                    return e.descriptor.clone();
                }
                final long left = deadline - System.nanoTime();
                if (left <= 0)
                {
                    throw new RendezvousTimeoutException("directory " + space.name, "segment " + name,
                        List.of(), timeout);
                }
                try
                {
                    TimeUnit.NANOSECONDS.timedWait(space, left);
                }
                catch (final InterruptedException ie)
                {
                    Thread.currentThread().interrupt();
                    throw new RendezvousException("directory " + space.name, "interrupted waiting for segment "
                        + name, ie);
                }
            }
        }
    }

    @Override
    public Map<String, byte[]> list()
    {
        checkOpen();
        final Map<String, byte[]> out = new TreeMap<>();
        synchronized (space)
        {
            space.entries.forEach((k, v) -> out.put(k, v.descriptor.clone()));
        }
        return Collections.unmodifiableMap(out);
    }

    @Override
    public Registration watch(final Listener listener)
    {
        Checks.notNull(listener, "listener");
        checkOpen();
        final Reg reg = new Reg(listener, space.name);
        synchronized (space)
        {
            // Under the directory's lock: the snapshot and the changes after it reach the listener in order.
            space.entries.forEach((k, v) -> reg.published(k, v.descriptor));
            space.watchers.add(reg);
        }
        synchronized (registrations)
        {
            registrations.add(reg);
        }
        return () -> stop(reg);
    }

    @Override
    public int maxDescriptorBytes()
    {
        return maxDescriptorBytes;
    }

    @Override
    public void close()
    {
        if (!closed.compareAndSet(false, true))
        {
            return;
        }
        synchronized (space)
        {
            for (final String name : new ArrayList<>(space.entries.keySet()))
            {
                removeOwned(name);
            }
            space.notifyAll();
        }
        final List<Reg> regs;
        synchronized (registrations)
        {
            regs = new ArrayList<>(registrations);
        }
        regs.forEach(this::stop);
    }

    @Override
    public String toString()
    {
        return "InMemorySegmentDirectory[" + space.name + ", member " + owner + "]";
    }

    private boolean removeOwned(final String name)
    {
        final Entry e = space.entries.get(name);
        if (e == null || e.owner != owner)
        {
            return false;
        }
        space.entries.remove(name);
        for (final Reg r : space.watchers)
        {
            r.removed(name);
        }
        return true;
    }

    private void stop(final Reg reg)
    {
        synchronized (space)
        {
            space.watchers.remove(reg);
        }
        synchronized (registrations)
        {
            registrations.remove(reg);
        }
        reg.shutdown();
    }

    private void checkOpen()
    {
        if (closed.get())
        {
            throw new IllegalStateException("segment directory " + space.name + " is closed");
        }
    }

    static long positiveNanos(final Duration timeout)
    {
        Checks.notNull(timeout, "timeout");
        if (timeout.isNegative() || timeout.isZero())
        {
            throw new IllegalArgumentException("timeout must be positive: " + timeout);
        }
        return Deadline.toNanos(timeout);
    }

    /** One named directory: the entries and who watches them; its monitor guards both. */
    private static final class Space
    {
        final String name;
        final Map<String, Entry> entries = new TreeMap<>();
        final List<Reg> watchers = new ArrayList<>();

        Space(final String name)
        {
            this.name = name;
        }
    }

    /** A descriptor and the member that owns it. */
    private record Entry(long owner, byte[] descriptor)
    {
    }

    /** A watch: its calls run in order on a thread of its own, never under the directory's lock. */
    private static final class Reg
    {
        private final Listener listener;
        private final ExecutorService thread;
        private volatile boolean stopped;

        Reg(final Listener listener, final String space)
        {
            this.listener = listener;
            this.thread = Executors.newSingleThreadExecutor(r ->
            {
                final Thread t = new Thread(r, "te4j-directory-watch-" + space);
                t.setDaemon(true);
                return t;
            });
        }

        void published(final String name, final byte[] descriptor)
        {
            final byte[] copy = descriptor.clone();
            submit(() -> listener.published(name, copy));
        }

        void removed(final String name)
        {
            submit(() -> listener.removed(name));
        }

        private void submit(final Runnable call)
        {
            if (stopped)
            {
                return;
            }
            thread.execute(() ->
            {
                if (!stopped)
                {
                    call.run();
                }
            });
        }

        void shutdown()
        {
            stopped = true;
            thread.shutdown();
        }
    }
}
