package io.github.te4j;

import io.github.te4j.exchange.Deadline;
import io.github.te4j.internal.NativeApi;
import io.github.te4j.internal.NativeTransferList;
import io.github.te4j.telemetry.ListPostEvent;
import io.github.te4j.telemetry.ListPrepareEvent;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Lock;
import org.bytedeco.javacpp.IntPointer;

/**
 * READ and WRITE requests prepared once ({@link TransferAgent#prepareList(TransferDescriptors)})
 * and posted many times, whole ({@link #post(Duration)}) or as a range of their indices
 * ({@link #post(int, int, Duration)}): the reusable descriptor list of NIXL's
 * {@code prepXferDlist}/{@code makeXferReq}, for serving systems that move the same blocks at
 * every step.
 *
 * <p>Prepare checks every request as a batch submit does (the same errors, naming the request's
 * list index), resolves its addresses and hands them to native code once; on CUDA the copies
 * and their chunks are copied to device memory then. A post's host work does not grow with the
 * number of requests: it checks that the memory and segments the list names are still usable
 * (once each, not per request), then launches one kernel over the device-resident descriptors
 * (CUDA) or queues one part on the batch worker (host platform). Its requests turn final together
 * when the post ends, and their states are only read when asked.
 *
 * <p>The bytes are read when a post runs: change the source between posts and the next post
 * moves the new bytes. One post of a list runs at a time: post again once the last post is
 * done (await or cancel it); a list per independent stream of work runs them side by side.
 *
 * <p>Memory unregistered (or its buffer closed) after prepare, a segment closed, or a segment
 * whose owner was lost fails the next post with an exception naming it; the list holds its
 * segments' mappings until it is closed, and unregistering memory or closing a buffer waits for
 * a post in flight (cancelled first, bounded), so no post ever touches freed memory.
 *
 * <p>Routes: the host platform (segments mapped into this process) and CUDA (peers' memory
 * mapped through CUDA IPC, this device). Segments opened over RDMA ({@link SegmentHandle#isRdma()})
 * are refused at prepare: submit those requests in a {@link TransferBatch}.
 *
 * @since 0.1
 */
public final class TransferList extends NativeResource
{
    private static final AtomicLong IDS = new AtomicLong();
    /** Asks whether a recording wants ListPost events (the setting is the event type's, not the object's). */
    private static final ListPostEvent POST_PROBE = new ListPostEvent();

    private final TransferAgent agent;
    private final NativeTransferList peer;
    private final int size;
    private final long id;
    /** Bytes of requests [0, i): a range's bytes without a loop (telemetry). */
    private final long[] prefixBytes;
    private final RegisteredMemory[] memories;
    private final DeviceBuffer[] buffers;
    private final SegmentHandle[] segments;
    /** The states of a post read back (only for one that skipped requests), reused under this. */
    private IntPointer stateScratch;
    private TransferPost current;   // the last post, guarded by this
    private boolean inFlight;       // the last post may still run, guarded by this
    private long posts;             // guarded by this
    private boolean keepNative;     // closed while a post ran on: the native list and mappings stay

    private TransferList(final TransferAgent agent, final NativeTransferList peer, final int size,
        final long[] prefixBytes, final RegisteredMemory[] memories, final DeviceBuffer[] buffers,
        final SegmentHandle[] segments, final long id)
    {
        super("TransferList");
        this.agent = agent;
        this.peer = peer;
        this.size = size;
        this.prefixBytes = prefixBytes;
        this.memories = memories;
        this.buffers = buffers;
        this.segments = segments;
        this.id = id;
    }

    /**
     * Checks {@code d}'s requests and prepares them as a list of {@code agent} (the agent's lock
     * is held by the caller). The segments are acquired: their mappings stay until the list closes.
     */
    static TransferList prepare(final TransferAgent agent, final TransferDescriptors d)
    {
        final ListPrepareEvent event = new ListPrepareEvent();
        event.begin();
        final int n = d.size();
        final int nm = d.memoryCount();
        final int ns = d.segmentCount();
        final String[] memoryProblems = new String[nm];
        final long[] memoryAddress = new long[nm];
        final long[] memorySize = new long[nm];
        final List<DeviceBuffer> bufferList = new ArrayList<>();
        for (int k = 0; k < nm; k++)
        {
            final RegisteredMemory m = d.memory(k);
            memoryProblems[k] = m.agent() != agent ? m + " is registered with another agent"
                : !m.isRegistered() ? m + " is not registered (unregistered, or its buffer closed)" : null;
            memoryAddress[k] = m.address();
            memorySize[k] = m.size();
            if (m.buffer() != null && !bufferList.contains(m.buffer()))
            {
                bufferList.add(m.buffer());
            }
        }
        final byte[] segmentProblems = new byte[ns];  // 1: another agent's, 2: closed, 3: over RDMA
        for (int k = 0; k < ns; k++)
        {
            final SegmentHandle s = d.segment(k);
            segmentProblems[k] = (byte) (s.agent() != agent ? 1 : s.isClosed() ? 2 : s.isRdma() ? 3 : 0);
        }
        final long[] prefix = new long[n + 1];
        final DescriptorStaging staging = new DescriptorStaging(n);
        try
        {
            for (int i = 0; i < n; i++)
            {
                final byte op = d.opcode(i);
                final int mi = d.memoryId(i);
                final int si = d.segmentId(i);
                // Messages are built only for a request that fails: this loop runs for every request.
                if (op < 0 || mi < 0 || si < 0)
                {
                    throw new IllegalArgumentException(at(i) + (op == TransferDescriptors.NULL_REQUEST ? "is null"
                        : op == TransferDescriptors.NULL_OPCODE ? "opcode is null" : mi < 0 ? "local memory is null"
                        : "segment is null"));
                }
                if (memoryProblems[mi] != null)
                {
                    throw new IllegalArgumentException(at(i) + memoryProblems[mi]);
                }
                if (segmentProblems[si] != 0)
                {
                    throw segmentProblem(i, d.segment(si), segmentProblems[si]);
                }
                final long length = d.length(i);
                if (length < 1 || length > TransferRequest.MAX_LENGTH)
                {
                    throw new IllegalArgumentException(at(i) + "length=" + length + " must be in [1, 2^40]");
                }
                final long lo = d.localOffset(i);
                final long msize = memorySize[mi];
                if (lo < 0 || lo > msize || length > msize - lo)
                {
                    throw new IndexOutOfBoundsException(at(i) + "local: offset=" + lo + " length=" + length
                        + " is outside [0, " + msize + ") of " + d.memory(mi));
                }
                final long ro = d.remoteOffset(i);
                final SegmentHandle s = d.segment(si);
                final long address = s.addressOf(ro, length);
                if (address < 0)
                {
                    throw new IndexOutOfBoundsException(at(i) + s.describeMiss(ro, length));
                }
                staging.put(i, op, memoryAddress[mi] + lo, address, length);
                prefix[i + 1] = prefix[i] + length;
            }
            final RegisteredMemory[] memories = new RegisteredMemory[nm];
            for (int k = 0; k < nm; k++)
            {
                memories[k] = d.memory(k);
            }
            final SegmentHandle[] segments = new SegmentHandle[ns];
            for (int k = 0; k < ns; k++)
            {
                segments[k] = d.segment(k);
            }
            final DeviceBuffer[] buffers = bufferList.toArray(new DeviceBuffer[0]);
            final TransferList list = create(agent, staging, n, prefix, memories, buffers, segments);
            if (event.shouldCommit())
            {
                event.agent = agent.segmentName();
                event.platform = agent.platform().name();
                event.listId = list.id;
                event.requests = n;
                event.bytes = prefix[n];
                event.commit();
            }
            return list;
        }
        finally
        {
            staging.close();  // native code copied the descriptors
        }
    }

    /** Hands the checked descriptors to native code while the memory and mappings they name cannot go. */
    private static TransferList create(final TransferAgent agent, final DescriptorStaging staging, final int n,
        final long[] prefix, final RegisteredMemory[] memories, final DeviceBuffer[] buffers,
        final SegmentHandle[] segments)
    {
        final List<Lock> held = new ArrayList<>();
        final List<SegmentHandle> acquired = new ArrayList<>();
        boolean made = false;
        try
        {
            held.add(agent.transport().enter());
            for (final DeviceBuffer b : buffers)
            {
                held.add(b.enter());
            }
            for (final SegmentHandle s : segments)
            {
                s.acquire();
                acquired.add(s);
            }
            for (int k = 0; k < memories.length; k++)
            {
                if (!memories[k].isRegistered())
                {
                    throw new IllegalArgumentException(memories[k] + " was unregistered while the list was prepared");
                }
            }
            for (final SegmentHandle s : segments)
            {
                if (s.ownerLost())
                {
                    throw new PeerLostException("TransferList: " + s.ownerLostMessage());
                }
            }
            final NativeTransferList p = NativeTransferList.create(agent.platform().nativeId(), agent.device(), n,
                staging.opcodes, staging.local, staging.remote, staging.lengths);
            if (p == null || p.isNull())
            {
                throw new Te4jException(Te4jException.Code.OUT_OF_MEMORY, "TransferList.create returned null");
            }
            if (p.status() != 0)
            {
                final Te4jException e = Errors.toException(p.status(), "TransferList.create(" + agent.platform()
                    + ", " + n + " requests)", p.lastError());
                NativeApi.destroyObject(p);
                throw e;
            }
            made = true;
            return new TransferList(agent, p, n, prefix, memories, buffers, segments, IDS.incrementAndGet());
        }
        finally
        {
            if (!made)
            {
                acquired.forEach(SegmentHandle::releaseUse);
            }
            for (int i = held.size() - 1; i >= 0; i--)
            {
                held.get(i).unlock();
            }
        }
    }

    private static RuntimeException segmentProblem(final int i, final SegmentHandle s, final byte problem)
    {
        if (problem == 1)
        {
            return new IllegalArgumentException(at(i) + s + " was opened by another agent");
        }
        if (problem == 2)
        {
            return new ClosedException(at(i) + s + " (closed)");
        }
        return new IllegalArgumentException(at(i) + s + " is reached over RDMA: a transfer list runs on mapped"
            + " segments only (host platform, CUDA); submit these requests in a TransferBatch");
    }

    private static String at(final int index)
    {
        return "request " + index + ": ";
    }

    /**
     * The number of requests; a post names a range of [0, size()).
     *
     * @return the number of requests
     * @since 0.1
     */
    public int size()
    {
        return size;
    }

    /**
     * {@link #post(int, int, Duration)} of every request.
     *
     * @param timeout how long the post may take; not negative
     * @return the post
     * @throws IllegalArgumentException when {@code timeout} is null or negative
     * @throws IllegalStateException when the list's previous post has not ended, or memory it names was
     *     unregistered
     * @throws ClosedException when the list, its agent, or a segment it names is closed
     * @throws PeerLostException when the owner of a segment the list names is lost
     * @since 0.1
     */
    public TransferPost post(final Duration timeout)
    {
        return post(0, size, timeout);
    }

    /**
     * Starts requests [from, to) of the list. Their source bytes are read as the post runs.
     *
     * @param timeout how long the post may take: once it has passed, its requests not started end
     *     as {@link TransferState#TIMEOUT} and never touch memory (running ones finish)
     * @param from the first list index to post
     * @param to one past the last list index to post
     * @return the post: its states, wait and future, and cancel
     * @throws IllegalStateException when the list's previous post has not ended, or memory the
     *     list names was unregistered (or its buffer closed) since prepare
     * @throws ClosedException when the list, its agent, or a segment it names is closed
     * @throws PeerLostException when the owner of a segment the list names is lost
     * @throws IllegalArgumentException when [from, to) is empty or not inside the list, or {@code timeout} is
     *     null or negative
     * @since 0.1
     */
    public TransferPost post(final int from, final int to, final Duration timeout)
    {
        // Messages are built only for a refusal: a post's cost stays a few loads on the good path.
        if (from < 0 || from >= to || to > size)
        {
            throw new IllegalArgumentException("range [" + from + ", " + to + ") must be non-empty and inside the list's "
                + size + " requests");
        }
        TransferPost.checkTimeout(timeout);
        // An event object only while a recording wants it: it lives until the post ends.
        final ListPostEvent event = POST_PROBE.isEnabled() ? new ListPostEvent() : null;
        if (event != null)
        {
            event.begin();
        }
        final Lock la = agent.enterForSubmit();
        try
        {
            final Lock l = enter();
            try
            {
                return postEntered(from, to, timeout, event);
            }
            finally
            {
                l.unlock();
            }
        }
        finally
        {
            la.unlock();
        }
    }

    private TransferPost postEntered(final int from, final int to, final Duration timeout, final ListPostEvent event)
    {
        final Lock lt = agent.transport().enter();  // the mappings' owner stays open
        Lock[] held = null;
        try
        {
            checkMemories();  // first: a closed buffer is named as such, not refused by its lock
            held = buffers.length == 0 ? null : NativeResource.enterAll(buffers);
            synchronized (this)
            {
                if (current != null && !current.isSettled())
                {
                    settleLocked(current, false);
                    if (!current.isSettled())
                    {
                        throw new IllegalStateException("the list's previous post (requests [" + current.from() + ", "
                            + current.to() + ")) has not ended: await it, or cancel and await it, first");
                    }
                }
                // In flight before the checks: an unregister that the checks miss drains this post.
                inFlight = true;
                InFlightWork.listPosted(this);
                try
                {
                    checkLive();
                    final int st = peer.post(from, to);
                    if (st < 0)  // the message is built only for a failure: a post must not cost a string
                    {
                        throw Errors.toException(st, "TransferList.post([" + from + ", " + to + "))", peer.lastError());
                    }
                }
                catch (final RuntimeException e)
                {
                    inFlight = false;
                    InFlightWork.listEnded(this);
                    throw e;
                }
                final long deadline = System.nanoTime() + Deadline.toNanos(timeout);
                current = new TransferPost(this, ++posts, from, to, deadline, event);
                return current;
            }
        }
        finally
        {
            if (held != null)
            {
                NativeResource.exitAll(held);
            }
            lt.unlock();
        }
    }

    private void checkMemories()
    {
        for (final RegisteredMemory m : memories)
        {
            if (!m.isRegistered())
            {
                throw new IllegalStateException("TransferList: " + m + " was unregistered (or its buffer closed) after"
                    + " the list was prepared: prepare a new list");
            }
        }
    }

    /** Whether what the list names is still there: once per memory and segment, never per request. */
    private void checkLive()
    {
        checkMemories();
        for (final SegmentHandle s : segments)
        {
            if (s.isClosed())
            {
                throw new ClosedException("TransferList: " + s + " was closed after the list was prepared");
            }
            if (s.ownerLost())
            {
                throw new PeerLostException("TransferList: " + s.ownerLostMessage());
            }
        }
    }

    /**
     * Looks at {@code p}'s native post when it is the list's current one: settles it once it has
     * ended, cancels it once its deadline has passed. Under this monitor.
     */
    private void settleLocked(final TransferPost p, final boolean closing)
    {
        if (p != current || p.isSettled())
        {
            return;
        }
        final int st = peer.poll();
        if (st < 0)
        {
            throw Errors.toException(st, "TransferList.poll", peer.lastError());
        }
        if (st == 0)
        {
            if (!p.isCancelRequested() && System.nanoTime() - p.deadline() >= 0)
            {
                p.requestCancel(TransferState.TIMEOUT);
                Errors.check(peer.cancel(), "TransferList.cancel", peer::lastError);
            }
            return;
        }
        final int skipped = peer.skipped();
        if (skipped < 0)
        {
            throw Errors.toException(skipped, "TransferList.skipped", peer.lastError());
        }
        int[] states = null;
        if (skipped > 0)
        {
            // Read now: the next post of these requests rewrites their state words.
            final int count = p.size();
            if (stateScratch == null || stateScratch.capacity() < count)
            {
                if (stateScratch != null)
                {
                    stateScratch.close();
                }
                stateScratch = new IntPointer(Math.max(count, 1));
            }
            Errors.check(peer.states(p.from(), count, stateScratch), "TransferList.states", peer::lastError);
            states = new int[count];
            stateScratch.get(states, 0, count);
        }
        p.settle(skipped, states, closing);
        inFlight = false;
        InFlightWork.listEnded(this);
    }

    /** The post's native state, looked at; false when the list is closed (its posts were settled then). */
    boolean refresh(final TransferPost p)
    {
        if (p.isSettled())
        {
            return true;
        }
        final Lock l = enterForDrain();
        if (l == null)
        {
            return false;
        }
        try
        {
            synchronized (this)
            {
                settleLocked(p, false);
            }
        }
        finally
        {
            l.unlock();
        }
        p.completeFutureIfSettled();
        return true;
    }

    /** Waits for the post's native end, at most about {@code nanos}; false when the list is closed. */
    boolean waitNative(final TransferPost p, final long nanos)
    {
        final Lock l = enterForDrain();
        if (l == null)
        {
            return false;
        }
        try
        {
            peer.waitAll(nanos);
            return true;
        }
        finally
        {
            l.unlock();
        }
    }

    /** {@link TransferPost#cancel()}: only while {@code p} is the post in flight. */
    void cancel(final TransferPost p)
    {
        final Lock l = enterForDrain();
        if (l == null)
        {
            return;
        }
        try
        {
            synchronized (this)
            {
                if (p != current || p.isSettled() || p.isCancelRequested())
                {
                    return;
                }
                p.requestCancel(TransferState.CANCELLED);
                Errors.check(peer.cancel(), "TransferList.cancel", peer::lastError);
            }
        }
        finally
        {
            l.unlock();
        }
    }

    /** Bytes of list requests [from, to). */
    long bytesOf(final int from, final int to)
    {
        return prefixBytes[to] - prefixBytes[from];
    }

    TransferAgent agent()
    {
        return agent;
    }

    long id()
    {
        return id;
    }

    /** Whether a post still running may touch {@code r} (a te4j buffer, registered memory, or the transport). */
    synchronized boolean touches(final Object r)
    {
        if (!inFlight)
        {
            return false;
        }
        if (r == agent.transport())
        {
            return true;
        }
        for (final RegisteredMemory m : memories)
        {
            if (m == r || (m.buffer() != null && m.buffer() == r))
            {
                return true;
            }
        }
        return false;
    }

    /** Cancels the post in flight and waits up to {@code nanos} for it to end; true when none runs. */
    boolean drainFor(final long nanos)
    {
        final long end = System.nanoTime() + Math.max(0, nanos);
        final TransferPost p;
        synchronized (this)
        {
            if (!inFlight || current == null)
            {
                return true;
            }
            p = current;
            if (!p.isCancelRequested())
            {
                p.requestCancel(TransferState.TIMEOUT);
                peer.cancel();
            }
        }
        while (refresh(p) && !p.isSettled())
        {
            final long left = end - System.nanoTime();
            if (left <= 0)
            {
                return false;
            }
            if (!waitNative(p, Math.min(left, PeerMonitor.CHECK_NANOS)))
            {
                return true;
            }
        }
        return true;
    }

    @Override
    void release()
    {
        // Under the write lock: no post, wait or refresh runs. Cancel, then a bounded wait.
        final TransferPost p;
        boolean ended = true;
        synchronized (this)
        {
            p = inFlight ? current : null;
            if (p != null && !p.isSettled())
            {
                if (!p.isCancelRequested())
                {
                    p.requestCancel(TransferState.CANCELLED);
                    peer.cancel();
                }
                ended = peer.waitAll(TransferBatch.GRACE_NANOS) == 0;
                if (ended)
                {
                    settleLocked(p, true);
                }
                else
                {
                    // The post still runs in native code: keep the native list and the mappings alive.
                    keepNative = true;
                    org.slf4j.LoggerFactory.getLogger(TransferList.class).warn(
                        "TransferList closed with a post of {} requests still running: its native memory and mappings"
                            + " are kept", p.size());
                    p.abandon();
                }
            }
            if (stateScratch != null)
            {
                stateScratch.close();
            }
        }
        if (p != null)
        {
            p.completeFutureIfSettled();
        }
        if (!keepNative)
        {
            NativeApi.destroyObject(peer);
            for (final SegmentHandle s : segments)
            {
                s.releaseUse();
            }
        }
        agent.listClosed(this);
    }

    @Override
    public String toString()
    {
        return "TransferList[" + size + " requests, " + agent.platform() + "]";
    }

    /** The platform's name for telemetry. */
    String platformName()
    {
        return agent.platform().name();
    }
}
