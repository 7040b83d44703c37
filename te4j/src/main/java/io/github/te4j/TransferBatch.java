package io.github.te4j;

import io.github.te4j.internal.NativeApi;
import io.github.te4j.internal.NativeTransferBatch;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.LockSupport;

/**
 * A batch of READ and WRITE requests ({@link TransferAgent#allocateBatch(int)}): submitted in
 * one or more parts up to its capacity, run asynchronously and in any order, each request
 * reaching one final {@link TransferState}. A failed request fails alone: the others complete.
 *
 * <p>Every request is checked before anything of its part runs; a bad one throws
 * {@link IllegalArgumentException} or {@link IndexOutOfBoundsException} naming its index in
 * the batch, and nothing of that part is submitted. Destinations may overlap, within a batch and
 * with other batches: where they do, which request's bytes land is unspecified.
 *
 * <p>Each submit carries a timeout; once the batch's deadline (the latest of its submits) has
 * passed, requests that have not started end as {@link TransferState#TIMEOUT} and never touch
 * memory. Requests to a segment whose owner process has exited end as {@link TransferState#FAILED}
 * with a {@link PeerLostException}, unless they completed before that was seen.
 */
public final class TransferBatch extends NativeResource
{
    /** The largest capacity. */
    public static final int MAX_CAPACITY = 1 << 20;

    /** How long a close, or a wait past the deadline, gives requests already running. */
    static final long GRACE_NANOS = 10_000_000_000L;

    private static final int COMPLETED = 1;
    private static final int TIMED_OUT = 2;
    private static final int PENDING = 0;

    private final TransferAgent agent;
    private final NativeTransferBatch peer;
    private final int capacity;
    private final TransferRequest[] requests;
    private final TransferStatus[] statuses;
    private final int[] nativeStates;
    private final Map<SegmentHandle, Boolean> segmentsInUse = new IdentityHashMap<>();
    private final Map<DeviceBuffer, Boolean> buffersInUse = new IdentityHashMap<>();
    private final Map<RegisteredMemory, Boolean> memoryInUse = new IdentityHashMap<>();
    private int submitted;
    private int finished;
    private long deadline;
    private boolean cancelled;
    private boolean keepNative;
    private CompletableFuture<List<TransferStatus>> future;

    TransferBatch(final TransferAgent agent, final Platform platform, final int device, final int capacity)
    {
        super("TransferBatch");
        this.agent = agent;
        this.capacity = capacity;
        final NativeTransferBatch p = NativeTransferBatch.create(platform.nativeId(), device, capacity);
        if (p == null || p.isNull())
        {
            throw new Te4jException(Te4jException.Code.OUT_OF_MEMORY, "TransferBatch.create returned null");
        }
        if (p.status() != 0)
        {
            final Te4jException e = Errors.toException(p.status(), "TransferBatch.create(" + platform + ", "
                + capacity + ")", p.lastError());
            NativeApi.destroyObject(p);
            throw e;
        }
        this.peer = p;
        this.requests = new TransferRequest[capacity];
        this.statuses = new TransferStatus[capacity];
        this.nativeStates = new int[capacity];
    }

    public int capacity()
    {
        return capacity;
    }

    /** The number of requests submitted so far. */
    public synchronized int size()
    {
        return submitted;
    }

    /**
     * Checks and submits {@code part} as requests [size(), size() + part.size()).
     *
     * @param part the requests, 1 or more, within the remaining capacity
     * @param timeout how long they may take; the batch's deadline becomes the later of this and its own
     * @return the batch index of the part's first request
     */
    public int submit(final List<TransferRequest> part, final Duration timeout)
    {
        Errors.checkArgument(part != null, "requests is null");
        Errors.checkArgument(timeout != null && !timeout.isNegative(), "timeout must be non-negative: " + timeout);
        final int n = part.size();
        Errors.checkArgument(n >= 1, "a submit needs at least one request");
        final Lock la = agent.enterForSubmit();
        try
        {
            final Lock lb = enter();
            try
            {
                return submitChecked(part, timeout);
            }
            finally
            {
                lb.unlock();
            }
        }
        finally
        {
            la.unlock();
        }
    }

    private int submitChecked(final List<TransferRequest> part, final Duration timeout)
    {
        final int first;
        final int n = part.size();
        synchronized (this)
        {
            first = submitted;
            Errors.checkArgument(!cancelled, "this batch's deadline has passed: allocate a new batch");
            Errors.checkArgument(n <= capacity - first, "the batch holds " + first + " of " + capacity
                + " requests: " + n + " more are over its capacity");
        }
        final int[] ops = new int[n];
        final long[] local = new long[n];
        final long[] remote = new long[n];
        final long[] lengths = new long[n];
        final List<DeviceBuffer> buffers = new ArrayList<>();
        final List<SegmentHandle> segments = new ArrayList<>();
        final List<RegisteredMemory> memories = new ArrayList<>();
        for (int i = 0; i < n; i++)
        {
            final TransferRequest r = part.get(i);
            // Messages are built only for a request that fails: this loop runs for every request.
            if (r == null || r.opcode() == null || r.local() == null || r.segment() == null)
            {
                throw new IllegalArgumentException(at(first + i) + (r == null ? "is null" : r.opcode() == null
                    ? "opcode is null" : r.local() == null ? "local memory is null" : "segment is null"));
            }
            final RegisteredMemory m = r.local();
            if (m.agent() != agent)
            {
                throw new IllegalArgumentException(at(first + i) + m + " is registered with another agent");
            }
            if (!agent.isRegistered(m))
            {
                throw new IllegalArgumentException(at(first + i) + m
                    + " is not registered (unregistered, or its buffer closed)");
            }
            final SegmentHandle s = r.segment();
            if (s.agent() != agent)
            {
                throw new IllegalArgumentException(at(first + i) + s + " was opened by another agent");
            }
            if (s.isClosed())
            {
                throw new ClosedException(at(first + i) + s + " (closed)");
            }
            if (r.length() < 1 || r.length() > TransferRequest.MAX_LENGTH)
            {
                throw new IllegalArgumentException(at(first + i) + "length=" + r.length() + " must be in [1, 2^40]");
            }
            final long lo = r.localOffset();
            if (lo < 0 || lo > m.size() || r.length() > m.size() - lo)
            {
                throw new IndexOutOfBoundsException(at(first + i) + "local: offset=" + lo + " length=" + r.length()
                    + " is outside [0, " + m.size() + ") of " + m);
            }
            final long address = s.addressOf(r.remoteOffset(), r.length());
            if (address < 0)
            {
                throw new IndexOutOfBoundsException(at(first + i) + s.describeMiss(r.remoteOffset(), r.length()));
            }
            ops[i] = r.opcode().nativeCode();
            local[i] = m.address() + r.localOffset();
            remote[i] = address;
            lengths[i] = r.length();
            // Usually one or two of each per batch: compare with the last one first.
            if (m.buffer() != null && (buffers.isEmpty() || buffers.get(buffers.size() - 1) != m.buffer())
                && !buffers.contains(m.buffer()))
            {
                buffers.add(m.buffer());
            }
            if ((segments.isEmpty() || segments.get(segments.size() - 1) != s) && !segments.contains(s))
            {
                segments.add(s);
            }
            if ((memories.isEmpty() || memories.get(memories.size() - 1) != m) && !memories.contains(m))
            {
                memories.add(m);
            }
        }
        // Held while native code takes the addresses (and before this batch's monitor, which a
        // closing buffer's drain takes): a buffer or segment closed meanwhile waits for them.
        final List<Lock> held = new ArrayList<>();
        final List<SegmentHandle> acquired = new ArrayList<>();
        try
        {
            held.add(agent.transport().enter());  // the segments' mappings belong to it
            for (final DeviceBuffer b : buffers)
            {
                held.add(b.enter());
            }
            for (final SegmentHandle s : segments)
            {
                s.acquire();
                acquired.add(s);
            }
            synchronized (this)
            {
                Errors.checkArgument(!cancelled, "this batch's deadline has passed: allocate a new batch");
                Errors.checkArgument(submitted == first, "another thread submitted to this batch at the same time");
                Errors.checkArgument(n <= capacity - submitted, "the batch holds " + submitted + " of "
                    + capacity + " requests: " + n + " more are over its capacity");
                final boolean firstPart = submitted == 0;
                if (firstPart || finished == submitted)
                {
                    InFlightWork.batchStarted(this);
                }
                final int status = peer.submit(first, n, ops, local, remote, lengths);
                if (status < 0)
                {
                    if (firstPart || finished == submitted)
                    {
                        InFlightWork.batchFinished(this);
                    }
                    throw Errors.toException(status, "TransferBatch.submit(requests " + first + ".." + (first + n - 1)
                        + ")", peer.lastError());
                }
                for (final SegmentHandle s : segments)
                {
                    if (segmentsInUse.putIfAbsent(s, Boolean.TRUE) == null)
                    {
                        acquired.remove(s);  // this batch keeps the use until it finishes
                    }
                }
                for (final DeviceBuffer b : buffers)
                {
                    buffersInUse.put(b, Boolean.TRUE);
                }
                for (final RegisteredMemory m : memories)
                {
                    memoryInUse.put(m, Boolean.TRUE);
                }
                final Map<SegmentHandle, Boolean> lost = new IdentityHashMap<>();
                for (final SegmentHandle s : segments)
                {
                    lost.put(s, s.ownerLost());
                }
                for (int i = 0; i < n; i++)
                {
                    requests[first + i] = part.get(i);
                    final SegmentHandle s = part.get(i).segment();
                    if (lost.get(s))
                    {
                        statuses[first + i] = TransferStatus.failed(new PeerLostException("request " + (first + i)
                            + ": " + s.ownerLostMessage()));
                    }
                }
                final long end = System.nanoTime() + Math.min(timeout.toNanos(), Long.MAX_VALUE / 4);
                deadline = firstPart ? end : Math.max(deadline, end);
                submitted += n;
                return first;
            }
        }
        finally
        {
            for (final SegmentHandle s : acquired)
            {
                s.releaseUse();
            }
            for (int i = held.size() - 1; i >= 0; i--)
            {
                held.get(i).unlock();
            }
        }
    }

    private static String at(final int index)
    {
        return "request " + index + ": ";
    }

    /** The state of request {@code index} now. */
    public TransferStatus status(final int index)
    {
        synchronized (this)
        {
            Errors.checkArgument(index >= 0 && index < submitted, "index=" + index + " is outside the " + submitted
                + " submitted requests");
        }
        refreshOrThrow();
        synchronized (this)
        {
            return current(index);
        }
    }

    /** The states of every submitted request now, by index. */
    public List<TransferStatus> statuses()
    {
        refreshOrThrow();
        synchronized (this)
        {
            return snapshot();
        }
    }

    /** Whether every submitted request is final. */
    public boolean isDone()
    {
        refreshOrThrow();
        synchronized (this)
        {
            return finished == submitted;
        }
    }

    /**
     * Waits until every submitted request is final or {@code timeout} passes, and returns the
     * states: requests still running at the end are {@link TransferState#PENDING}. At the
     * batch's deadline the requests not started end as {@link TransferState#TIMEOUT}.
     */
    public List<TransferStatus> await(final Duration timeout)
    {
        Errors.checkArgument(timeout != null && !timeout.isNegative(), "timeout must be non-negative: " + timeout);
        final long end = System.nanoTime() + Math.min(timeout.toNanos(), Long.MAX_VALUE / 4);
        for (;;)
        {
            if (isDone())
            {
                return statuses();
            }
            final long left = end - System.nanoTime();
            if (left <= 0)
            {
                return statuses();
            }
            final Lock l = enterForDrain();
            if (l == null)
            {
                throw new ClosedException("TransferBatch");
            }
            try
            {
                peer.waitAll(Math.max(1, Math.min(left, PeerMonitor.CHECK_NANOS)));
            }
            finally
            {
                l.unlock();
            }
        }
    }

    /**
     * A future completed with the states once every request submitted so far is final (it
     * completes even when some failed or timed out; it is never completed exceptionally except by
     * closing the batch first).
     */
    public synchronized CompletableFuture<List<TransferStatus>> future()
    {
        if (future == null)
        {
            future = new CompletableFuture<>();
            if (finished == submitted && submitted > 0)
            {
                future.complete(snapshot());
            }
            else
            {
                BatchWatcher.watch(this);
            }
        }
        return future;
    }

    private void refreshOrThrow()
    {
        if (!refresh())
        {
            throw new ClosedException("TransferBatch");
        }
    }

    /** Reads the native states, applies peer loss and the deadline; false when closed. Watcher and waiters. */
    boolean refresh()
    {
        final Lock l = enterForDrain();
        if (l == null)
        {
            return false;
        }
        CompletableFuture<List<TransferStatus>> done = null;
        List<TransferStatus> result = null;
        List<SegmentHandle> release = List.of();
        try
        {
            synchronized (this)
            {
                if (submitted == 0 || finished == submitted)
                {
                    return true;
                }
                Errors.check(peer.states(0, submitted, nativeStates), "TransferBatch.states", peer::lastError);
                int nowFinished = 0;
                final Map<SegmentHandle, Boolean> lost = new IdentityHashMap<>();
                for (int i = 0; i < submitted; i++)
                {
                    if (nativeStates[i] == PENDING)
                    {
                        final SegmentHandle s = requests[i].segment();
                        if (statuses[i] == null && lost.computeIfAbsent(s, SegmentHandle::ownerLost))
                        {
                            statuses[i] = TransferStatus.failed(new PeerLostException("request " + i + ": "
                                + s.ownerLostMessage()));
                        }
                        continue;
                    }
                    nowFinished++;
                }
                if (!cancelled && System.nanoTime() - deadline >= 0 && nowFinished < submitted)
                {
                    cancelled = true;
                    peer.cancel();
                }
                finished = nowFinished;
                if (finished == submitted)
                {
                    release = finishLocked();
                    if (future != null && !future.isDone())
                    {
                        done = future;
                        result = snapshot();
                    }
                }
            }
        }
        finally
        {
            l.unlock();
        }
        release.forEach(SegmentHandle::releaseUse);
        if (done != null)
        {
            done.complete(result);
        }
        return true;
    }

    /**
     * Every request is final: let go of the local memory; returns the segments to release, which
     * the caller does after leaving this batch's monitor (releasing the last use may unmap, which
     * takes the transport's lock, whose closer may be waiting for this monitor).
     */
    private List<SegmentHandle> finishLocked()
    {
        final List<SegmentHandle> done = new ArrayList<>(segmentsInUse.keySet());
        segmentsInUse.clear();
        buffersInUse.clear();
        memoryInUse.clear();
        InFlightWork.batchFinished(this);
        return done;
    }

    private TransferStatus current(final int i)
    {
        if (statuses[i] != null)
        {
            return statuses[i];
        }
        switch (nativeStates[i])
        {
            case PENDING:
                return TransferStatus.pending();
            case COMPLETED:
                return TransferStatus.completed();
            case TIMED_OUT:
                return TransferStatus.timedOut();
            default:
                return TransferStatus.failed(Errors.toException(nativeStates[i], "request " + i, requests[i].toString()));
        }
    }

    private List<TransferStatus> snapshot()
    {
        final TransferStatus[] out = new TransferStatus[submitted];
        for (int i = 0; i < submitted; i++)
        {
            out[i] = current(i);
        }
        return Collections.unmodifiableList(Arrays.asList(out));
    }

    /** Whether requests still running may touch {@code r} (a te4j buffer, or registered memory). */
    synchronized boolean touches(final Object r)
    {
        return finished < submitted
            && (r == agent.transport() || buffersInUse.containsKey(r) || memoryInUse.containsKey(r));
    }

    /** Cancels and waits up to {@code nanos} for the running requests; true when none runs. */
    boolean drainFor(final long nanos)
    {
        final long end = System.nanoTime() + Math.max(0, nanos);
        synchronized (this)
        {
            if (finished == submitted)
            {
                return true;
            }
            cancelled = true;
            peer.cancel();
        }
        while (refresh() && !isDoneQuick())
        {
            final long left = end - System.nanoTime();
            if (left <= 0)
            {
                return false;
            }
            final Lock l = enterForDrain();
            if (l == null)
            {
                return true;
            }
            try
            {
                peer.waitAll(Math.min(left, PeerMonitor.CHECK_NANOS));
            }
            finally
            {
                l.unlock();
            }
        }
        return true;
    }

    private synchronized boolean isDoneQuick()
    {
        return finished == submitted;
    }

    @Override
    void release()
    {
        // Under the write lock: no refresh runs. Cancel, then give running requests a bounded time.
        final boolean idle;
        synchronized (this)
        {
            if (finished < submitted)
            {
                cancelled = true;
                peer.cancel();
            }
        }
        final long end = System.nanoTime() + GRACE_NANOS;
        boolean done;
        List<SegmentHandle> segments = List.of();
        for (;;)
        {
            synchronized (this)
            {
                if (submitted == 0 || finished == submitted)
                {
                    done = true;
                    break;
                }
                peer.states(0, submitted, nativeStates);
                int f = 0;
                for (int i = 0; i < submitted; i++)
                {
                    f += nativeStates[i] == PENDING ? 0 : 1;
                }
                finished = f;
                if (f == submitted)
                {
                    segments = finishLocked();
                    done = true;
                    break;
                }
            }
            final long left = end - System.nanoTime();
            if (left <= 0)
            {
                done = false;
                break;
            }
            peer.waitAll(Math.min(left, PeerMonitor.CHECK_NANOS));
        }
        idle = done;
        segments.forEach(SegmentHandle::releaseUse);
        synchronized (this)
        {
            if (!idle)
            {
                // Requests still run in native code: keep the native batch and the mappings alive.
                keepNative = true;
                org.slf4j.LoggerFactory.getLogger(TransferBatch.class).warn(
                    "TransferBatch closed with {} requests still running: its native memory and mappings are kept",
                    submitted - finished);
            }
            if (future != null && !future.isDone())
            {
                future.completeExceptionally(new ClosedException("TransferBatch (closed before it finished)"));
            }
        }
        if (!keepNative)
        {
            NativeApi.destroyObject(peer);
        }
        agent.batchClosed(this);
    }

    synchronized boolean isFutureDone()
    {
        return future == null || future.isDone();
    }

    synchronized void failFuture(final RuntimeException e)
    {
        if (future != null)
        {
            future.completeExceptionally(e);
        }
    }

    /** Parks briefly: the watcher's pace between looks at its batches. */
    static void pause(final long nanos)
    {
        LockSupport.parkNanos(nanos);
    }
}
