package io.github.te4j;

import io.github.te4j.exchange.Deadline;
import io.github.te4j.internal.NativeApi;
import io.github.te4j.internal.NativeTransferBatch;
import io.github.te4j.telemetry.BatchSubmitEvent;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;

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
 * with a {@link PeerLostException}, unless they completed before that was seen. {@link #cancel()}
 * stops the requests that have not started ({@link TransferState#CANCELLED}). For the same
 * requests moved again and again, prepare a {@link TransferList} instead.
 *
 * <p>Requests to segments opened over RDMA ({@link SegmentHandle#isRdma()}) become one RDMA WRITE
 * or READ work request each, posted by a thread of the batch (many in flight, up to the send
 * ring); an error CQE fails its request with the syndrome, and (RC semantics) the requests after
 * it on the same queue pair with the flush syndrome, until the ranks reconnect.
 *
 * @since 0.1
 */
public final class TransferBatch extends NativeResource
{
    /**
     * The largest capacity.
     *
     * @since 0.1
     */
    public static final int MAX_CAPACITY = 1 << 20;

    /** How long a close, or a wait past the deadline, gives requests already running. */
    static final long GRACE_NANOS = 10_000_000_000L;

    private static final int COMPLETED = 1;
    private static final int TIMED_OUT = 2;
    private static final int PENDING = 0;

    private static final AtomicLong IDS = new AtomicLong();
    /**
     * A list submit's descriptors, lent to one submit at a time and kept across batches: a batch
     * is often allocated per step, and arrays made for its first submit would cost that submit
     * more than its checks. Kept only up to {@link #SPARE_MAX} requests.
     */
    private static final AtomicReference<TransferDescriptors> SPARE = new AtomicReference<>();
    private static final int SPARE_MAX = 1 << 16;

    private final TransferAgent agent;
    private final long id = IDS.incrementAndGet();
    private final BatchTelemetry telemetry;
    /** The one native batch every request goes to, whatever its route (mapped or RDMA). */
    private final NativeTransferBatch peer;
    private final BatchRequests staging;
    private final BatchValidation validation;
    private final int capacity;
    /** Per request: its segment (its addresses and length stay in the staging, by batch index). */
    private final SegmentHandle[] segmentOf;
    private final Object submitLock = new Object();
    private final TransferStatus[] statuses;
    private final int[] nativeStates;
    /** Per request: its RDMA completion word; allocated when the batch gets its RDMA route. */
    private int[] syndromes;
    /** The RdmaTransport attached to the native batch (its RDMA route), or null. */
    private RdmaTransport rdmaTransport;
    private final Map<SegmentHandle, Boolean> segmentsInUse = new IdentityHashMap<>();
    private final Map<DeviceBuffer, Boolean> buffersInUse = new IdentityHashMap<>();
    private final Map<RegisteredMemory, Boolean> memoryInUse = new IdentityHashMap<>();
    private int submitted;
    private int finished;
    private long deadline;
    private boolean cancelled;
    /** {@link #cancel()} came before the deadline did: requests it stopped are CANCELLED, not TIMEOUT. */
    private boolean cancelledByUser;
    private boolean keepNative;
    private CompletableFuture<List<TransferStatus>> future;
    /** Its completion is decided (it may still be on its way, {@link #settle}); under the monitor. */
    private boolean futureSettled;

    TransferBatch(final TransferAgent agent, final Platform platform, final int device, final int capacity)
    {
        super("TransferBatch");
        this.agent = agent;
        this.telemetry = new BatchTelemetry(agent, id);
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
        try
        {
            this.staging = new BatchRequests(p, capacity);
        }
        catch (final RuntimeException e)
        {
            NativeApi.destroyObject(p);
            throw e;
        }
        this.segmentOf = new SegmentHandle[capacity];
        this.validation = new BatchValidation(agent, staging, segmentOf);
        this.statuses = new TransferStatus[capacity];
        this.nativeStates = new int[capacity];
    }

    /**
     * The most requests this batch holds, over all its submits.
     *
     * @return the capacity given to {@link TransferAgent#allocateBatch(int)}
     * @since 0.1
     */
    public int capacity()
    {
        return capacity;
    }

    /**
     * The number of requests submitted so far.
     *
     * @return the number of requests, the next submit's first index
     * @since 0.1
     */
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
     * @since 0.1
     */
    public int submit(final List<TransferRequest> part, final Duration timeout)
    {
        Errors.checkArgument(part != null, "requests is null");
        Errors.checkArgument(timeout != null && !timeout.isNegative(), "timeout must be non-negative: " + timeout);
        final int n = part.size();
        Errors.checkArgument(n >= 1, "a submit needs at least one request");
        return submitLocked(part, null, timeout, null, null);
    }

    /**
     * Checks and submits the requests of {@code part} as requests [size(), size() + part.size()):
     * the same checks and errors as {@link #submit(List, Duration)}, without an object per
     * request. {@code part} may be cleared and reused once this returns.
     *
     * @param part the requests, 1 or more, within the remaining capacity
     * @param timeout how long they may take; the batch's deadline becomes the later of this and its own
     * @return the batch index of the part's first request
     * @since 0.1
     */
    public int submit(final TransferDescriptors part, final Duration timeout)
    {
        Errors.checkArgument(part != null, "requests is null");
        Errors.checkArgument(timeout != null && !timeout.isNegative(), "timeout must be non-negative: " + timeout);
        Errors.checkArgument(part.size() >= 1, "a submit needs at least one request");
        return submitLocked(null, part, timeout, null, null);
    }

    /**
     * Submits a notification slot's publication for a NIC whose responder orders the slot before
     * its sequence word only through an atomic (docs/MLX5.md, "Notifications"), as requests
     * [size(), size() + 2): {@code slot} WRITEs the slot's bytes; {@code word} names the slot's
     * 8-byte sequence word at the target and, as its local side, where the word's old value
     * lands. Posted as {@code slot}'s WRITE, then a fenced 8-byte compare-and-swap of the word
     * from {@code expected} to {@code sequence}, on one queue pair, in that order. Both must
     * use one registered memory and one segment reached over RDMA, and the word must be 8-byte
     * aligned at both ends. Once both completed, the caller compares the old value with
     * {@code expected}: the swap happened only where they are equal.
     */
    int submitPublication(final TransferRequest slot, final TransferRequest word, final long expected,
        final long sequence, final Duration timeout)
    {
        Errors.checkArgument(slot != null && word != null && timeout != null && !timeout.isNegative(),
            "a publication needs its two requests and a non-negative timeout");
        Errors.checkArgument(slot.opcode() == TransferOpcode.WRITE && word.opcode() == TransferOpcode.WRITE
            && word.length() == 8 && slot.length() <= Integer.MAX_VALUE && slot.local() == word.local()
            && slot.segment() == word.segment() && slot.segment().isRdma(),
            "a publication is a WRITE and an 8-byte word of one memory and one segment reached over RDMA");
        final long wordAddress = word.segment().addressOf(word.remoteOffset(), 8);
        Errors.checkArgument(wordAddress > 0 && (wordAddress & 7) == 0
            && ((word.local().address() + word.localOffset()) & 7) == 0,
            "a publication's sequence word must be 8-byte aligned at both ends");
        return submitLocked(List.of(slot, word), null, timeout, null, new long[] {expected, sequence});
    }

    /**
     * Cancels the batch: requests that have not started end as {@link TransferState#CANCELLED}
     * and never touch memory; requests already copying finish ({@link TransferState#COMPLETED},
     * or {@link TransferState#FAILED} as they would have); requests already final keep their
     * state. Returns at once (await the batch for the outcome); later submits are refused.
     * Idempotent, and a no-op once every request is final; after the deadline has cancelled the
     * batch, the requests it stopped stay {@link TransferState#TIMEOUT}.
     *
     * @since 0.1
     */
    public void cancel()
    {
        final Lock l = enter();
        try
        {
            synchronized (this)
            {
                if (cancelled)
                {
                    return;
                }
                cancelled = true;
                cancelledByUser = true;
                if (finished < submitted)
                {
                    cancelNative();
                }
            }
        }
        finally
        {
            l.unlock();
        }
    }

    /** Why a submit is refused once the batch is cancelled; under the monitor. */
    private String refusal()
    {
        return cancelledByUser ? "this batch was cancelled: allocate a new batch"
            : "this batch's deadline has passed: allocate a new batch";
    }

    /**
     * {@link #submit(List, Duration)} with a notification for the agent of the segment every
     * request names: delivered there after every byte of this part has landed, in submit order
     * with this agent's other notifications to it (docs/BATCH.md, "Notifications"). When the
     * receiver's queue from this agent is full, the submit waits for room until {@code timeout}
     * and then fails with {@link Te4jTimeoutException}, nothing of the part submitted. A part
     * that does not complete (a request failed or timed out, the batch closed before it finished)
     * delivers nothing; closing the batch once it finished loses nothing.
     *
     * @param part the requests, 1 or more, within the remaining capacity, all to one segment
     * @param notification at most {@link Notification#MAX_BYTES} bytes (copied)
     * @param timeout how long they may take, including the wait for room; not negative
     * @return the batch index of the part's first request
     * @throws IllegalArgumentException when an argument is null or too long, {@code timeout} is negative, the
     *     part is empty, exceeds the remaining capacity or names more than one segment, a request is invalid
     *     (named by index), or the batch was cancelled
     * @throws IndexOutOfBoundsException when a request's range falls outside its memory or segment
     * @throws Te4jTimeoutException when the receiver's queue stays full until {@code timeout}; nothing is
     *     submitted
     * @throws ClosedException when this batch, or memory or a segment a request names, is closed
     * @since 0.1
     */
    public int submit(final List<TransferRequest> part, final byte[] notification, final Duration timeout)
    {
        Notification.check(notification);
        Errors.checkArgument(part != null, "requests is null");
        Errors.checkArgument(timeout != null && !timeout.isNegative(), "timeout must be non-negative: " + timeout);
        Errors.checkArgument(part.size() >= 1, "a submit needs at least one request");
        SegmentHandle target = null;
        for (int i = 0; i < part.size(); i++)
        {
            final TransferRequest r = part.get(i);
            Errors.checkArgument(r != null, at(i) + "is null");
            if (target != null && r.segment() != target)
            {
                throw new IllegalArgumentException(at(i) + "names segment '" + r.segment().segmentName()
                    + "', an earlier one '" + target.segmentName() + "': a part with a notification names one segment,"
                    + " whose agent receives it");
            }
            target = r.segment();
        }
        return agent.notificationOutbox().submit(this, target, notification, timeout, part.size(),
            (t, gate) -> submitLocked(part, null, t, gate, null));
    }

    /**
     * {@link #submit(TransferDescriptors, Duration)} with a notification, as
     * {@link #submit(List, byte[], Duration)}.
     *
     * @param part the requests, 1 or more, within the remaining capacity, all to one segment
     * @param notification at most {@link Notification#MAX_BYTES} bytes (copied)
     * @param timeout how long they may take, including the wait for room; not negative
     * @return the batch index of the part's first request
     * @throws IllegalArgumentException when an argument is null or too long, {@code timeout} is negative, the
     *     part is empty, exceeds the remaining capacity or names more than one segment, a request is invalid
     *     (named by index), or the batch was cancelled
     * @throws IndexOutOfBoundsException when a request's range falls outside its memory or segment
     * @throws Te4jTimeoutException when the receiver's queue stays full until {@code timeout}; nothing is
     *     submitted
     * @throws ClosedException when this batch, or memory or a segment a request names, is closed
     * @since 0.1
     */
    public int submit(final TransferDescriptors part, final byte[] notification, final Duration timeout)
    {
        Notification.check(notification);
        Errors.checkArgument(part != null, "requests is null");
        Errors.checkArgument(timeout != null && !timeout.isNegative(), "timeout must be non-negative: " + timeout);
        Errors.checkArgument(part.size() >= 1, "a submit needs at least one request");
        Errors.checkArgument(part.segmentCount() == 1, "the part names " + part.segmentCount() + " segments: a part"
            + " with a notification names one segment, whose agent receives it");
        return agent.notificationOutbox().submit(this, part.segment(0), notification, timeout, part.size(),
            (t, gate) -> submitLocked(null, part, t, gate, null));
    }

    /**
     * How requests [first, first + n) ended: 0 while one is still pending, 1 when every one
     * completed, -1 when one did not (failed, timed out, or still pending when this batch
     * closed). A batch closed after its requests were seen final keeps their outcome.
     */
    int partOutcome(final int first, final int n)
    {
        final boolean open = refresh();
        synchronized (this)
        {
            int outcome = 1;
            for (int i = first; i < first + n; i++)
            {
                final TransferState s = stateOf(i);
                if (s == TransferState.PENDING)
                {
                    return open ? 0 : -1;
                }
                if (s != TransferState.COMPLETED)
                {
                    outcome = -1;
                }
            }
            return outcome;
        }
    }

    /**
     * Submits {@code list}, or else {@code descriptors}, under the agent's and this batch's locks.
     * {@code gate}, when not null, runs once every request passed its checks and before anything
     * of the part is handed to native code (a notification's ring position, which may wait for
     * room); it returns the part's timeout from then on. Every conversion that could fail (the
     * timeout's) is done before native code takes the part.
     */
    private int submitLocked(final List<TransferRequest> list, final TransferDescriptors descriptors,
        final Duration timeout, final Supplier<Duration> gate, final long[] publication)
    {
        final Lock la = agent.enterForSubmit();
        try
        {
            final Lock lb = enter();
            try
            {
                // One submit at a time: the checks write the part's slots of the per-request arrays.
                synchronized (submitLock)
                {
                    if (descriptors != null)
                    {
                        return submitChecked(descriptors, timeout, gate, publication);
                    }
                    final int n = list.size();
                    // Checked before the list is copied, in submitChecked's order: the deadline, then capacity.
                    final int held;
                    synchronized (this)
                    {
                        Errors.checkArgument(!cancelled, refusal());
                        held = submitted;
                    }
                    if (n > capacity - held)
                    {
                        throw new IllegalArgumentException("the batch holds " + held + " of " + capacity + " requests: "
                            + n + " more are over its capacity");
                    }
                    TransferDescriptors d = SPARE.getAndSet(null);
                    if (d == null)
                    {
                        d = new TransferDescriptors(Math.min(n, capacity));
                    }
                    try
                    {
                        for (int i = 0; i < n; i++)
                        {
                            d.add(list.get(i));
                        }
                        return submitChecked(d, timeout, gate, publication);
                    }
                    finally
                    {
                        d.clear();  // holds no memory or segment past the submit
                        if (d.room() <= SPARE_MAX)
                        {
                            SPARE.set(d);
                        }
                    }
                }
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

    private int submitChecked(final TransferDescriptors part, final Duration checkedTimeout,
        final Supplier<Duration> gate, final long[] publication)
    {
        final BatchSubmitEvent event = new BatchSubmitEvent();
        event.begin();
        final int first;
        final int n = part.size();
        synchronized (this)
        {
            first = submitted;
            Errors.checkArgument(!cancelled, refusal());
            if (n > capacity - first)
            {
                throw new IllegalArgumentException("the batch holds " + first + " of " + capacity + " requests: " + n
                    + " more are over its capacity");
            }
        }
        validation.check(part, first);
        final RdmaTransport rdma = validation.rdma();
        final List<DeviceBuffer> buffers = validation.buffers();
        final int ns = part.segmentCount();
        // Held while native code takes the addresses (and before this batch's monitor, which a
        // closing buffer's drain takes): a buffer or segment closed meanwhile waits for them.
        // The part's timeout in saturated nanoseconds, before native code takes anything: from
        // then on nothing may throw before Java's state records the part.
        final long timeoutNanos = Deadline.toNanos(gate == null ? checkedTimeout : gate.get());
        final List<Lock> held = new ArrayList<>();
        final List<SegmentHandle> acquired = new ArrayList<>();
        try
        {
            held.add(agent.transport().enter());  // the segments' mappings belong to it
            if (rdma != null)
            {
                held.add(rdma.enter());  // its queue pairs stay while the requests are posted
            }
            for (final DeviceBuffer b : buffers)
            {
                held.add(b.enter());
            }
            for (int k = 0; k < ns; k++)
            {
                final SegmentHandle s = part.segment(k);
                s.acquire();
                acquired.add(s);
            }
            synchronized (this)
            {
                Errors.checkArgument(!cancelled, refusal());
                Errors.checkArgument(submitted == first, "another thread submitted to this batch at the same time");
                Errors.checkArgument(n <= capacity - submitted, "the batch holds " + submitted + " of "
                    + capacity + " requests: " + n + " more are over its capacity");
                final boolean firstPart = submitted == 0;
                if (firstPart || finished == submitted)
                {
                    InFlightWork.batchStarted(this);
                }
                if (rdma != null && rdmaTransport != rdma)
                {
                    try
                    {
                        attachRdma(rdma, first);
                    }
                    catch (final RuntimeException e)
                    {
                        if (firstPart || finished == submitted)
                        {
                            InFlightWork.batchFinished(this);
                        }
                        throw e;
                    }
                }
                boolean[] lost = null;  // by segment id, once one is lost
                for (int k = 0; k < ns; k++)
                {
                    if (part.segment(k).ownerLost())
                    {
                        lost = lost == null ? new boolean[ns] : lost;
                        lost[k] = true;
                    }
                }
                if (lost != null)
                {
                    markLost(part, first, lost);
                }
                final long end = System.nanoTime() + timeoutNanos;  // saturated: cannot overflow
                // A publication whose owner is known lost is an ordinary part: its requests are final here.
                final int status = publication == null || lost != null
                    ? peer.submit(first, n, timeoutNanos)
                    : peer.submitPublication(first, publication[0], publication[1], timeoutNanos);
                if (status < 0)
                {
                    if (firstPart || finished == submitted)
                    {
                        InFlightWork.batchFinished(this);
                    }
                    throw Errors.toException(status, "TransferBatch.submit(requests " + first + ".." + (first + n - 1)
                        + ")", peer.lastError());
                }
                // Native code runs the part: Java's count and deadline first, then the bookkeeping,
                // none of which can throw.
                deadline = firstPart ? end : Math.max(deadline, end);
                submitted += n;
                for (int k = 0; k < ns; k++)
                {
                    final SegmentHandle s = part.segment(k);
                    if (segmentsInUse.putIfAbsent(s, Boolean.TRUE) == null)
                    {
                        acquired.remove(s);  // this batch keeps the use until it finishes
                    }
                }
                for (final DeviceBuffer b : buffers)
                {
                    buffersInUse.put(b, Boolean.TRUE);
                }
                for (int k = 0; k < part.memoryCount(); k++)
                {
                    memoryInUse.put(part.memory(k), Boolean.TRUE);
                }
                for (int i = 0; lost != null && i < n; i++)
                {
                    final SegmentHandle s = segmentOf[first + i];
                    if (lost[part.segmentId(i)] && statuses[first + i] == null)
                    {
                        statuses[first + i] = TransferStatus.failed(new PeerLostException("request " + (first + i)
                            + ": " + s.ownerLostMessage()));
                    }
                }
                telemetry.submitted(event, firstPart, first, n, staging);
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

    /**
     * Gives the native batch its RDMA route before the first part that uses it; under this batch's
     * monitor. A batch has one route over RDMA: a part over another transport is refused.
     */
    private void attachRdma(final RdmaTransport rdma, final int first)
    {
        if (rdmaTransport != null)
        {
            throw new IllegalArgumentException("requests " + first + "..: their segments are reached over another"
                + " RdmaTransport than this batch's earlier requests");
        }
        rdma.attachTo(peer);
        syndromes = new int[capacity];
        rdmaTransport = rdma;
    }

    /**
     * Requests of the part to a segment over RDMA whose owner is already lost are final at submit
     * and never posted (a mapped segment stays mapped: its requests run, and fail in Java).
     * Under this batch's monitor, before the part is submitted.
     */
    private void markLost(final TransferDescriptors part, final int first, final boolean[] lost)
    {
        for (int i = 0; i < part.size(); i++)
        {
            if (lost[part.segmentId(i)] && segmentOf[first + i].isRdma())
            {
                staging.markPeerLost(first + i);
            }
        }
    }

    /** Fills nativeStates[0, submitted) (and the RDMA completion words) from the native batch; under the monitor. */
    private int readNativeStates()
    {
        final int st = staging.readStates(peer, submitted, nativeStates);
        if (st < 0 || syndromes == null)
        {
            return st;
        }
        return staging.readSyndromes(peer, submitted, syndromes);
    }

    private String nativeError()
    {
        return peer.lastError();
    }

    private void cancelNative()
    {
        peer.cancel();
    }

    /** Waits for the native batch, about {@code nanos}. */
    private void waitNative(final long nanos)
    {
        peer.waitAll(nanos);
    }

    private String opcodeName(final int i)
    {
        return staging.opcode(i) == TransferOpcode.READ.nativeCode() ? "READ" : "WRITE";
    }

    /** Request i for a message: what it moves, between which addresses (its segment's offset where mapped). */
    private String describe(final int i)
    {
        final SegmentHandle s = segmentOf[i];
        final long remote = staging.remote(i);
        final long offset = s.isRdma() ? -1 : s.offsetOfAddress(remote);
        return opcodeName(i) + " " + staging.length(i) + " B local 0x" + Long.toHexString(staging.local(i))
            + " <-> '" + s.segmentName() + "'" + (offset >= 0 ? "+" + offset : " at 0x" + Long.toHexString(remote));
    }

    private static String at(final int index)
    {
        return BatchValidation.at(index);
    }

    /**
     * The state of request {@code index} now.
     *
     * @param index a submitted request's index, in [0, size())
     * @return its state, with the cause of a failure
     * @throws IllegalArgumentException when {@code index} is outside the submitted requests
     * @throws ClosedException when this batch is closed
     * @since 0.1
     */
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

    /**
     * The states of every submitted request now, by index.
     *
     * @return the states, indexed like the requests
     * @throws ClosedException when this batch is closed
     * @since 0.1
     */
    public List<TransferStatus> statuses()
    {
        refreshOrThrow();
        synchronized (this)
        {
            return snapshot();
        }
    }

    /**
     * Writes the state of every submitted request into {@code out} by index, without a status
     * object each ({@link #status(int)} has a failure's cause).
     *
     * @param out at least {@link #size()} long
     * @return the number of requests written (those submitted when it looked)
     * @since 0.1
     */
    public int states(final TransferState[] out)
    {
        Errors.checkArgument(out != null, "out is null");
        refreshOrThrow();
        synchronized (this)
        {
            Errors.checkArgument(out.length >= submitted, "out holds " + out.length + " states, the batch "
                + submitted + " requests");
            for (int i = 0; i < submitted; i++)
            {
                out[i] = stateOf(i);
            }
            return submitted;
        }
    }

    /**
     * Waits like {@link #await(Duration)} without building the list of states.
     *
     * @param timeout how long to wait; not negative
     * @return whether every submitted request is final
     * @throws IllegalArgumentException when {@code timeout} is null or negative
     * @throws ClosedException when this batch is closed
     * @since 0.1
     */
    public boolean awaitDone(final Duration timeout)
    {
        Errors.checkArgument(timeout != null && !timeout.isNegative(), "timeout must be non-negative: " + timeout);
        final Deadline end = Deadline.after(timeout);
        for (;;)
        {
            if (isDone())
            {
                return true;
            }
            final long left = end.nanosLeft();
            if (left <= 0)
            {
                return false;
            }
            final Lock l = enterForDrain();
            if (l == null)
            {
                throw new ClosedException("TransferBatch");
            }
            try
            {
                waitNative(Math.max(1, Math.min(left, PeerMonitor.CHECK_NANOS)));
            }
            finally
            {
                l.unlock();
            }
        }
    }

    /**
     * Whether every submitted request is final.
     *
     * @return true when no submitted request is pending
     * @throws ClosedException when this batch is closed
     * @since 0.1
     */
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
     *
     * @param timeout how long to wait; not negative
     * @return the states, indexed like the requests
     * @throws IllegalArgumentException when {@code timeout} is null or negative
     * @throws ClosedException when this batch is closed
     * @since 0.1
     */
    public List<TransferStatus> await(final Duration timeout)
    {
        awaitDone(timeout);
        return statuses();
    }

    /**
     * A future completed with the states once every request submitted so far is final (it
     * completes even when some failed or timed out; it is never completed exceptionally except by
     * closing the batch first). With nothing submitted it is complete at once, with no states.
     *
     * <p>Dependent actions run on a thread of their own when the requests finish, and on the
     * closing thread, after the batch is released, when a close completes it exceptionally;
     * never inside a te4j lock or drain. They may close this batch, its agent, transport or engine.
     *
     * @return the future; the same one on every call
     * @since 0.1
     */
    public synchronized CompletableFuture<List<TransferStatus>> future()
    {
        if (future == null)
        {
            future = new CompletableFuture<>();
            if (finished == submitted)
            {
                futureSettled = true;
                future.complete(snapshot());  // nothing depends on it yet: no action runs here
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
                Errors.check(readNativeStates(), "TransferBatch.states", this::nativeError);
                int nowFinished = 0;
                final Map<SegmentHandle, Boolean> lost = new IdentityHashMap<>();
                for (int i = 0; i < submitted; i++)
                {
                    if (nativeStates[i] == PENDING)
                    {
                        final SegmentHandle s = segmentOf[i];
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
                    cancelNative();
                }
                finished = nowFinished;
                if (finished == submitted)
                {
                    release = finishLocked();
                    if (future != null && !futureSettled)
                    {
                        futureSettled = true;
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
            settle(done, result, null);
        }
        return true;
    }

    /**
     * Completes this batch's future off the calling thread: the caller may be the watcher (whose
     * other batches must not wait for an action), or inside a close or a drain holding another
     * resource's call, and an action that closed that resource on this thread would wait for itself.
     */
    private static void settle(final CompletableFuture<List<TransferStatus>> f, final List<TransferStatus> result,
        final RuntimeException failure)
    {
        CompletableFuture.runAsync(() ->
        {
            if (failure == null)
            {
                f.complete(result);
            }
            else
            {
                f.completeExceptionally(failure);
            }
        });
    }

    /**
     * Every request is final: let go of the local memory; returns the segments to release, which
     * the caller does after leaving this batch's monitor (releasing the last use may unmap, which
     * takes the transport's lock, whose closer may be waiting for this monitor).
     */
    private List<SegmentHandle> finishLocked()
    {
        if (telemetry.wantsCompletion())
        {
            final int[] by = new int[TransferState.values().length];
            for (int i = 0; i < submitted; i++)
            {
                by[stateOf(i).ordinal()]++;
            }
            telemetry.completed(by, submitted);
        }
        final List<SegmentHandle> done = new ArrayList<>(segmentsInUse.keySet());
        segmentsInUse.clear();
        buffersInUse.clear();
        memoryInUse.clear();
        InFlightWork.batchFinished(this);
        return done;
    }

    private TransferState stateOf(final int i)
    {
        if (statuses[i] != null)
        {
            return statuses[i].state();
        }
        final int s = nativeStates[i];
        return s == PENDING ? TransferState.PENDING : s == COMPLETED ? TransferState.COMPLETED
            : s == TIMED_OUT ? (cancelledByUser ? TransferState.CANCELLED : TransferState.TIMEOUT) : TransferState.FAILED;
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
                return cancelledByUser ? TransferStatus.cancelled() : TransferStatus.timedOut();
            default:
                return TransferStatus.failed(failure(i));
        }
    }

    /** The cause of request i's native failure; RDMA ones name the syndrome, or the owner's loss. */
    private RuntimeException failure(final int i)
    {
        final SegmentHandle s = segmentOf[i];
        if (!s.isRdma() || staging.route(i) == BatchRequests.ROUTE_PEER_LOST)
        {
            return Errors.toException(nativeStates[i], "request " + i, describe(i));
        }
        final String what = "request " + i + " (RDMA " + opcodeName(i) + " to rank " + s.rdmaRank() + ")";
        if (s.ownerLost())
        {
            return new PeerLostException(what + ": " + s.ownerLostMessage()
                + (syndromes[i] != 0 ? "; its completion: " + RdmaSyndrome.describe(syndromes[i]) : ""));
        }
        if (syndromes[i] != 0)
        {
            return Errors.toException(nativeStates[i], what, "error CQE " + RdmaSyndrome.describe(syndromes[i]) + "; "
                + describe(i));
        }
        return Errors.toException(nativeStates[i], what, describe(i));
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
            && (r == agent.transport() || (r == rdmaTransport && r != null) || buffersInUse.containsKey(r)
            || memoryInUse.containsKey(r));
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
            cancelNative();
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
                waitNative(Math.min(left, PeerMonitor.CHECK_NANOS));
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
                cancelNative();
            }
        }
        final long end = System.nanoTime() + closeBudget(GRACE_NANOS);
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
                readNativeStates();
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
            waitNative(Math.min(left, PeerMonitor.CHECK_NANOS));
        }
        idle = done;
        segments.forEach(SegmentHandle::releaseUse);
        CompletableFuture<List<TransferStatus>> unfinished = null;
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
            if (future != null && !futureSettled)
            {
                futureSettled = true;
                unfinished = future;
            }
        }
        staging.close();  // the descriptor slots are the native batch's, the state words Java's
        if (!keepNative)
        {
            NativeApi.destroyObject(peer);
        }
        agent.batchClosed(this);
        if (unfinished != null)
        {
            // Done when close returns. Its actions run here, outside every lock; a close they
            // make of this batch or of what is closing it returns at once (NativeResource).
            unfinished.completeExceptionally(new ClosedException("TransferBatch (closed before it finished)"));
        }
    }

    synchronized boolean isFutureDone()
    {
        return future == null || futureSettled;
    }

    synchronized void failFuture(final RuntimeException e)
    {
        if (future != null && !futureSettled)
        {
            futureSettled = true;
            settle(future, null, e);
        }
    }

    /** Parks briefly: the watcher's pace between looks at its batches. */
    static void pause(final long nanos)
    {
        LockSupport.parkNanos(nanos);
    }
}
