package io.github.te4j;

import io.github.te4j.exchange.Deadline;
import io.github.te4j.internal.NativeApi;
import io.github.te4j.internal.NativeOpStream;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.Lock;
import org.bytedeco.javacpp.Pointer;

/**
 * An ordered queue of transfer operations: puts, signals, waits. On CUDA it is a non-blocking
 * CUDA stream (te4j's own, or one made elsewhere, e.g. with the JavaCPP Presets for CUDA); on the
 * host platform an executor thread. Calls return once the operation is enqueued; errors that
 * happen later (a wait that timed out, a device fault) are thrown by the next
 * {@link #synchronize(Duration)}.
 *
 * <p>Signals are release-ordered 32-bit atomic adds on the destination rank's word, on every
 * route; {@link #waitSignal} waits until the local word is {@code >=} the expected value
 * (wrap-around aware). {@link #putWithSignal} signals once for the whole put, after all of its
 * data (every block) is visible.
 *
 * @since 0.1
 */
public final class OpStream extends NativeResource
{
    /**
     * Default blocks per put on CUDA (0: te4j's choice, sized from the message).
     *
     * @since 0.1
     */
    public static final int DEFAULT_BLOCKS = 0;

    private final TransferEngine engine;
    private final NativeOpStream peer;
    private final long handle;  // the stream's handle does not change while it is open
    private volatile int blocks = DEFAULT_BLOCKS;
    private volatile int threads = 0;
    /** Windows and buffers that enqueued operations may still touch (see InFlightWork). */
    private final Set<NativeResource> touched = ConcurrentHashMap.newKeySet();
    /** The window and source of the latest op, both in {@link #touched} while set (see touch). */
    private volatile CommContext lastCtx;
    private volatile DeviceBuffer lastSrc;
    /** First error found while draining for a free; thrown by the next synchronize. */
    private volatile Te4jException deferred;
    /** Users' kernels launched since the last synchronize, named in its errors (a few at most). */
    private final Set<String> userKernels = ConcurrentHashMap.newKeySet();
    /** The objects of the latest user kernel launch, all tracked while set (see userKernelLaunched). */
    private volatile String lastKernelName;
    private volatile NativeResource lastKernelModule;
    private volatile NativeResource[] lastKernelUsed;

    OpStream(final TransferEngine engine, final NativeOpStream peer)
    {
        super("OpStream");
        this.engine = engine;
        if (peer == null || peer.isNull())
        {
            throw new Te4jException(Te4jException.Code.OUT_OF_MEMORY, "OpStream.create returned null");
        }
        if (peer.status() != 0)
        {
            final Te4jException e = Errors.toException(peer.status(), "OpStream.create(" + engine.platform() + ")",
                peer.lastError());
            NativeApi.destroyObject(peer);
            throw e;
        }
        this.peer = peer;
        this.handle = peer.nativeHandle();
        InFlightWork.opened(this);
    }

    /**
     * The platform this stream runs on: its engine's.
     *
     * @return the platform of the engine that created this stream
     * @since 0.1
     */
    public Platform platform()
    {
        return engine.platform();
    }

    /**
     * The CUDA stream handle ({@code cudaStream_t}) or 0 on the host platform.
     *
     * @return the {@code cudaStream_t} as an address, or 0 on the host platform
     * @throws ClosedException when this stream is closed
     * @since 0.1
     */
    public long nativeHandle()
    {
        final Lock l = enter();
        try
        {
            return peer.nativeHandle();
        }
        finally
        {
            l.unlock();
        }
    }

    /**
     * Launch shape of puts on CUDA: {@code blocks} (0 = te4j's choice) of {@code threads} (0 = te4j's
     * choice, else a multiple of 32 up to 1024). Ignored on the host platform.
     *
     * @param blocks blocks per put, in [0, 65535]; 0 lets te4j size it from the message
     * @param threads threads per block: 0 (te4j's choice) or a multiple of 32 up to 1024
     * @return this stream, for chaining
     * @throws IllegalArgumentException when {@code blocks} or {@code threads} is outside those ranges
     * @since 0.1
     */
    public OpStream launchShape(final int blocks, final int threads)
    {
        Errors.checkArgument(blocks >= 0 && blocks <= 65535, "blocks=" + blocks + " outside [0, 65535]");
        Errors.checkArgument(threads == 0 || (threads > 0 && threads % 32 == 0 && threads <= 1024),
            "threads=" + threads + " must be 0 or a multiple of 32 up to 1024");
        this.blocks = blocks;
        this.threads = threads;
        return this;
    }

    /**
     * Copies {@code bytes} from {@code src} at {@code srcOffset} to rank {@code dstRank}'s window at
     * {@code dstOffset}. The source and destination must not overlap, also not through two
     * mappings of the same memory (a window's own buffer reached through a peer mapping of it,
     * or two ranks' windows that are one segment): the copy runs in chunks, in parallel on CUDA,
     * so overlapping bytes end up unspecified. te4j cannot see that two addresses are one
     * memory, so it does not refuse such a put.
     *
     * @param ctx the window (connected context) that names the destination ranks
     * @param dstRank the destination rank, active in {@code ctx}
     * @param dstOffset the byte offset in the destination rank's window
     * @param src the source buffer, on this stream's platform and device; over RDMA it must be the window's
     *     own buffer
     * @param srcOffset the byte offset in {@code src}
     * @param bytes how many bytes to copy, positive
     * @throws IllegalArgumentException when an argument is null, {@code dstRank} is not an active rank of
     *     {@code ctx}, {@code bytes} is not positive, or {@code ctx} or {@code src} is on another platform or
     *     device
     * @throws IndexOutOfBoundsException when a range falls outside the window or the source buffer
     * @throws ClosedException when this stream or a buffer or window it is handed is closed
     * @throws Te4jException when the native enqueue fails (its {@link Te4jException#code()} says why); errors
     *     of the copy itself come from the next {@link #synchronize(Duration)}
     * @since 0.1
     */
    public void put(final CommContext ctx, final int dstRank, final long dstOffset, final DeviceBuffer src,
        final long srcOffset, final long bytes)
    {
        checkPut(ctx, dstRank, dstOffset, src, srcOffset, bytes);
        enter3(this, ctx, src);
        try
        {
            touch(ctx, src);
            ok(peer.put(ctx.nativeCtx().address(), dstRank, ctx.localBuffer().address() + dstOffset,
                src.address() + srcOffset, bytes, blocks, threads), "put");
        }
        finally
        {
            exit3(this, ctx, src);
        }
    }

    /**
     * {@link #put} with the source in the window's own buffer.
     *
     * @param ctx the window; its own buffer is the source
     * @param dstRank the destination rank, active in {@code ctx}
     * @param dstOffset the byte offset in the destination rank's window
     * @param srcOffset the byte offset of the source in this rank's window
     * @param bytes how many bytes to copy, positive
     * @throws IllegalArgumentException as {@link #put(CommContext, int, long, DeviceBuffer, long, long)} does
     * @throws IndexOutOfBoundsException when a range falls outside the window
     * @throws ClosedException when this stream or a buffer or window it is handed is closed
     * @since 0.1
     */
    public void put(final CommContext ctx, final int dstRank, final long dstOffset, final long srcOffset,
        final long bytes)
    {
        // Checked here: the window's buffer is read off ctx before the 6-argument form checks it.
        Errors.checkArgument(ctx != null, "ctx is null");
        put(ctx, dstRank, dstOffset, ctx.localBuffer(), srcOffset, bytes);
    }

    /**
     * {@link #put}, then adds {@code value} to the 32-bit word at {@code signalOffset} of rank
     * {@code dstRank}'s window, release-ordered after all of the put's data: once per operation.
     *
     * @param ctx the window (connected context) that names the destination ranks
     * @param dstRank the destination rank, active in {@code ctx}
     * @param dstOffset the byte offset in the destination rank's window
     * @param src the source buffer, on this stream's platform and device; over RDMA it must be the window's
     *     own buffer
     * @param srcOffset the byte offset in {@code src}
     * @param bytes how many bytes to copy, positive
     * @param signalOffset the byte offset of the signal word in the window: 4-byte aligned, outside the put's
     *     data
     * @param value what is added to the signal word
     * @throws IllegalArgumentException as {@link #put(CommContext, int, long, DeviceBuffer, long, long)} does,
     *     or when {@code signalOffset} is not 4-byte aligned
     * @throws IndexOutOfBoundsException when a range or the signal word falls outside the window or the source
     *     buffer
     * @throws ClosedException when this stream or a buffer or window it is handed is closed
     * @throws Te4jException when the native enqueue fails
     * @since 0.1
     */
    public void putWithSignal(final CommContext ctx, final int dstRank, final long dstOffset, final DeviceBuffer src,
        final long srcOffset, final long bytes, final long signalOffset, final int value)
    {
        checkPut(ctx, dstRank, dstOffset, src, srcOffset, bytes);
        checkWord(ctx, signalOffset);
        enter3(this, ctx, src);
        try
        {
            touch(ctx, src);
            final long base = ctx.localBuffer().address();
            ok(peer.putWithSignal(ctx.nativeCtx().address(), dstRank, base + dstOffset, src.address() + srcOffset,
                bytes, base + signalOffset, value, blocks, threads), "putWithSignal");
        }
        finally
        {
            exit3(this, ctx, src);
        }
    }

    /**
     * Release-ordered 32-bit atomic add of {@code value} on rank {@code dstRank}'s word at {@code signalOffset}.
     *
     * @param ctx the window that names the destination ranks
     * @param dstRank the destination rank, active in {@code ctx}
     * @param signalOffset the byte offset of the word in the window, 4-byte aligned
     * @param value what is added
     * @throws IllegalArgumentException when {@code ctx} is null or on another platform, {@code dstRank} is not
     *     active in it, or {@code signalOffset} is not 4-byte aligned
     * @throws IndexOutOfBoundsException when the word falls outside the window
     * @throws ClosedException when this stream or a buffer or window it is handed is closed
     * @throws Te4jException when the native enqueue fails
     * @since 0.1
     */
    public void signal(final CommContext ctx, final int dstRank, final long signalOffset, final int value)
    {
        checkRemote(ctx, dstRank);
        checkWord(ctx, signalOffset);
        enter2(this, ctx);
        try
        {
            touch(ctx, null);
            ok(peer.signal(ctx.nativeCtx().address(), dstRank, ctx.localBuffer().address() + signalOffset, value), "signal");
        }
        finally
        {
            exit2(this, ctx);
        }
    }

    /**
     * The device API's mc_red_add: the same release-ordered atomic add, on any 32-bit word of the window.
     *
     * @param ctx the window that names the destination ranks
     * @param dstRank the destination rank, active in {@code ctx}
     * @param offset the byte offset of the word in the window, 4-byte aligned
     * @param value what is added
     * @throws IllegalArgumentException when {@code ctx} is null or on another platform, {@code dstRank} is not
     *     active in it, or {@code offset} is not 4-byte aligned
     * @throws IndexOutOfBoundsException when the word falls outside the window
     * @throws ClosedException when this stream or a buffer or window it is handed is closed
     * @throws Te4jException when the native enqueue fails
     * @since 0.1
     */
    public void redAdd(final CommContext ctx, final int dstRank, final long offset, final int value)
    {
        checkRemote(ctx, dstRank);
        checkWord(ctx, offset);
        enter2(this, ctx);
        try
        {
            touch(ctx, null);
            ok(peer.redAdd(ctx.nativeCtx().address(), dstRank, ctx.localBuffer().address() + offset, value), "redAdd");
        }
        finally
        {
            exit2(this, ctx);
        }
    }

    /**
     * Enqueues a wait until this rank's word at {@code signalOffset} is {@code >= expected}
     * (wrap-around aware). If it does not happen within {@code timeout}, the next
     * {@link #synchronize(Duration)} throws {@link Te4jTimeoutException}.
     *
     * @param ctx the window that holds the word
     * @param signalOffset the byte offset of this rank's word in the window, 4-byte aligned
     * @param expected the value the word must reach
     * @param timeout how long the wait may take once it runs; positive
     * @throws IllegalArgumentException when {@code ctx} or {@code timeout} is null, {@code timeout} is not
     *     positive, or {@code signalOffset} is not 4-byte aligned
     * @throws IndexOutOfBoundsException when the word falls outside the window
     * @throws ClosedException when this stream or a buffer or window it is handed is closed
     * @throws Te4jException when the native enqueue fails
     * @since 0.1
     */
    public void waitSignal(final CommContext ctx, final long signalOffset, final int expected, final Duration timeout)
    {
        Errors.checkArgument(ctx != null, "ctx is null");
        checkWord(ctx, signalOffset);
        final long ns = checkTimeout(timeout);
        enter2(this, ctx);
        try
        {
            touch(ctx, null);
            ok(peer.waitSignal(ctx.localBuffer().address() + signalOffset, expected, ns), "waitSignal");
        }
        finally
        {
            exit2(this, ctx);
        }
    }

    /**
     * Waits for everything enqueued; throws the first error recorded since the last call.
     *
     * @param timeout how long to wait for the enqueued work; positive
     * @throws IllegalArgumentException when {@code timeout} is null or not positive
     * @throws Te4jTimeoutException when work is still running after {@code timeout}, or an enqueued {@link
     *     #waitSignal} timed out
     * @throws PeerLostException when an operation failed because its peer is gone (the operation's error is
     *     the cause)
     * @throws Te4jException for the first other error recorded since the last call (e.g. {@code DEVICE_FAULT},
     *     {@code REMOTE_ERROR}, {@code CUDA_ERROR})
     * @throws ClosedException when this stream is closed
     * @since 0.1
     */
    public void synchronize(final Duration timeout)
    {
        final long ns = checkTimeout(timeout);
        final Lock l = enter();
        try
        {
            // In slices, so that a lost peer fails the wait early (PeerMonitor).
            final String[] message = new String[1];
            final int status = SlicedWait.run(peer, ns, () -> checkPeers("synchronize"), message);
            final String kernels = takeUserKernels();
            if (status == SlicedWait.STILL_RUNNING)
            {
                throw new Te4jTimeoutException("synchronize failed: TIMEOUT: work still running on the stream after "
                    + ns / 1_000_000 + " ms (each waitSignal is bounded by its own timeout)" + kernels);
            }
            final Te4jException first = deferred;
            deferred = null;
            if (first != null)
            {
                throw first;
            }
            if (status < 0)
            {
                // An operation that failed because its peer is gone (an RDMA error CQE, a timeout)
                // is reported as the lost peer, with the operation's error as the cause.
                final Te4jException e = Errors.toException(status, "synchronize", withRdmaDiagnostics(message[0]) + kernels);
                try
                {
                    checkPeers("synchronize");
                }
                catch (final PeerLostException lost)
                {
                    lost.initCause(e);
                    throw lost;
                }
                throw e;
            }
        }
        finally
        {
            l.unlock();
        }
    }

    /**
     * Starts capturing the operations enqueued from now on into a CUDA graph (CUDA only).
     *
     * @since 0.1
     */
    public void beginCapture()
    {
        final Lock l = enter();
        try
        {
            Errors.check(peer.beginCapture(), "beginCapture", peer::lastError);
        }
        finally
        {
            l.unlock();
        }
    }

    /**
     * Ends the capture; the graph replays the captured operations on this stream.
     *
     * @return the captured graph; close it when done
     * @throws Te4jException when no capture is running or CUDA fails to build the graph
     * @throws ClosedException when this stream is closed
     * @since 0.1
     */
    public CapturedGraph endCapture()
    {
        final Lock l = enter();
        try
        {
            final long[] out = new long[1];
            Errors.check(peer.endCapture(out), "endCapture", peer::lastError);
            return new CapturedGraph(this, out[0]);
        }
        finally
        {
            l.unlock();
        }
    }

    void launchGraph(final long graph)
    {
        final Lock l = enter();
        try
        {
            ok(peer.launchGraph(graph), "launchGraph");
        }
        finally
        {
            l.unlock();
        }
    }

    void destroyGraph(final long graph)
    {
        if (isClosed())
        {
            return;
        }
        final Lock l = enter();
        try
        {
            peer.destroyGraph(graph);
        }
        finally
        {
            l.unlock();
        }
    }

    /** {@link #nativeHandle()} for a caller that has entered this stream. */
    long nativeHandleEntered()
    {
        return handle;
    }

    /** The CUDA device of this stream (0 on the host platform). */
    int device()
    {
        return engine.device();
    }

    /**
     * Records a user kernel enqueued on this stream: the resources it was handed are tracked
     * like an operation's, and its name is given by the next synchronize's error.
     */
    void userKernelLaunched(final String kernel, final NativeResource module, final NativeResource[] used)
    {
        // A loop launching the same kernel with the same objects finds them tracked already.
        if (used == lastKernelUsed && module == lastKernelModule && kernel == lastKernelName)
        {
            return;
        }
        // contains() first: it reads without the lock an add() of a present key takes.
        if (!touched.contains(module))
        {
            touched.add(module);
        }
        for (final NativeResource r : used)
        {
            if (!touched.contains(r))
            {
                touched.add(r);
            }
        }
        if (!userKernels.contains(kernel) && userKernels.size() < 8)
        {
            userKernels.add(kernel);
        }
        lastKernelUsed = used;
        lastKernelModule = module;
        lastKernelName = kernel;
    }

    private void forgetLastKernel()
    {
        lastKernelName = null;
        lastKernelModule = null;
        lastKernelUsed = null;
    }

    private String takeUserKernels()
    {
        forgetLastKernel();
        if (userKernels.isEmpty())
        {
            return "";
        }
        final String names = String.join(", ", userKernels);
        userKernels.clear();
        return "; user kernels launched on this stream since the last synchronize: " + names;
    }

    /** Throws the exception of a failed native call; no allocation when it succeeded. */
    private void ok(final int status, final String operation)
    {
        if (status < 0)
        {
            throw Errors.toException(status, operation, peer.lastError());
        }
    }

    // The checks below run on every enqueue: messages are built only when a check fails, so the
    // hot path allocates nothing (building them eagerly cost microseconds per op).

    private void checkRemote(final CommContext ctx, final int dstRank)
    {
        if (ctx == null)
        {
            throw new IllegalArgumentException("ctx is null");
        }
        Errors.checkRank(dstRank, ctx.numRanks());
        if (!ctx.isActive(dstRank))
        {
            throw new IllegalArgumentException("rank " + dstRank + " is not active in " + ctx);
        }
        if (ctx.platform() != platform())
        {
            throw new IllegalArgumentException(ctx + " is " + ctx.platform() + ", this stream is " + platform());
        }
    }

    private void checkPut(final CommContext ctx, final int dstRank, final long dstOffset, final DeviceBuffer src,
        final long srcOffset, final long bytes)
    {
        checkRemote(ctx, dstRank);
        if (src == null)
        {
            throw new IllegalArgumentException("src is null");
        }
        if (src.platform() != platform() || src.device() != engine.device())
        {
            throw new IllegalArgumentException(src + " is not on this stream's device");
        }
        if (bytes <= 0)
        {
            throw new IllegalArgumentException("bytes=" + bytes + " must be positive");
        }
        Errors.checkRange("put destination", dstOffset, bytes, ctx.size());
        Errors.checkRange("put source", srcOffset, bytes, src.size());
        // The RDMA route reads the source with the window's local key: it must lie in the window.
        if (src != ctx.localBuffer() && ctx.routesOverRdma(dstRank))
        {
            throw new IllegalArgumentException("rank " + dstRank + " is reached over RDMA: the source must be the"
                + " window's own buffer " + ctx.localBuffer() + ", not " + src);
        }
    }

    private static void checkWord(final CommContext ctx, final long offset)
    {
        if ((offset & 3) != 0)
        {
            throw new IllegalArgumentException("signal offset " + offset + " is not 4-byte aligned");
        }
        Errors.checkRange("signal word", offset, 4, ctx.size());
    }

    private static long checkTimeout(final Duration timeout)
    {
        if (timeout == null)
        {
            throw new IllegalArgumentException("timeout is null");
        }
        if (timeout.isNegative() || timeout.isZero())
        {
            throw new IllegalArgumentException("timeout " + timeout + " must be positive");
        }
        return Deadline.toNanos(timeout);
    }

    /** Wraps a CUDA stream made elsewhere (e.g. a JavaCPP Presets {@code CUstream_st}); not owned. */
    static NativeOpStream wrap(final int device, final Pointer cudaStream)
    {
        return NativeOpStream.wrapCuda(device, cudaStream.address());
    }

    private void touch(final CommContext ctx, final DeviceBuffer src)
    {
        // Back-to-back ops on one window and source: the set already holds them (forget clears
        // these before it removes either), so the three lookups are skipped.
        if (ctx == lastCtx && (src == null || src == lastSrc))
        {
            return;
        }
        touchOne(ctx);
        touchOne(ctx.localBuffer());
        if (src != null)
        {
            touchOne(src);
            lastSrc = src;
        }
        lastCtx = ctx;
    }

    /** An add of a present key still locks its bin in ConcurrentHashMap: the lock-free lookup first. */
    private void touchOne(final NativeResource r)
    {
        if (!touched.contains(r))
        {
            touched.add(r);
        }
    }

    /** Stops tracking {@code r} (it is being freed, or kept alive as a leak). */
    void forget(final NativeResource r)
    {
        forgetLastKernel();
        if (lastCtx == r || lastSrc == r || (lastCtx != null && lastCtx.localBuffer() == r))
        {
            lastCtx = null;
            lastSrc = null;
        }
        touched.remove(r);
    }

    /** Set when a drain ran out its bound with work still running; cleared once a drain completes. */
    private volatile boolean stuck;

    /** Whether enqueued operations may still touch {@code r}. */
    boolean touches(final NativeResource r)
    {
        return touched.contains(r);
    }

    /**
     * The message of a failed operation with what the RDMA transports of the windows it used
     * report (mlx5: QP states the firmware gives where they are not what te4j expects, the
     * device's async events): a wait that timed out without an error completion is otherwise
     * unexplained. Runs on the failure path only.
     */
    private String withRdmaDiagnostics(final String message)
    {
        final StringBuilder b = new StringBuilder(message == null ? "" : message);
        for (final NativeResource r : touched)
        {
            final RdmaTransport t = r instanceof CommContext ? ((CommContext)r).rdma() : null;
            if (t == null)
            {
                continue;
            }
            try
            {
                final String d = t.diagnostics().strip();
                if (!d.isEmpty())
                {
                    b.append("; RDMA transport of window ").append(r.name()).append(" reports: ")
                        .append(d.replace("\n", "; "));
                }
            }
            catch (final ClosedException closed)
            {
                // Closed meanwhile: nothing left to ask.
            }
        }
        return b.toString();
    }

    /** Fails with PeerLostException when a window this stream works on has lost a peer. */
    private void checkPeers(final String waitingFor)
    {
        for (final NativeResource r : touched)
        {
            if (r instanceof CommContext)
            {
                ((CommContext)r).checkPeers(waitingFor + " of " + name() + " (window " + r.name() + ")");
            }
        }
    }

    /**
     * Waits until no enqueued operation can touch {@code r} any more (called before r is freed);
     * an operation error met on the way is kept for the next {@link #synchronize}. False when work
     * is still running after {@code timeoutNs} or a peer was lost meanwhile. A stream that
     * already ran out a drain's bound and still runs is not waited for again (it is stuck, e.g.
     * on a wait nobody releases): freeing several of its resources costs one bound, not one each.
     */
    boolean drainFor(final NativeResource r, final long timeoutNs)
    {
        final Lock l = enterForDrain();
        if (l == null)
        {
            return true;
        }
        try
        {
            final String[] message = new String[1];
            final int status;
            try
            {
                status = SlicedWait.run(peer, stuck ? 1 : Math.max(1, timeoutNs), () -> checkPeers("a free"),
                    message);
            }
            catch (final PeerLostException e)
            {
                return false;
            }
            if (status == SlicedWait.STILL_RUNNING)
            {
                stuck = true;
                return false;
            }
            stuck = false;
            if (status < 0 && deferred == null)
            {
                deferred = Errors.toException(status, "synchronize", withRdmaDiagnostics(message[0]));
            }
            return true;
        }
        finally
        {
            l.unlock();
        }
    }

    @Override
    void release()
    {
        // Drain first so that no kernel still reads tables that the transport frees next.
        try
        {
            // A stuck stream already cost one drain bound: closing it does not wait another; inside
            // a larger close (the engine's) it waits only what is left of that close's bound.
            final long bound = stuck ? 1 : Math.max(1, closeBudget(InFlightWork.DRAIN_NANOS));
            SlicedWait.run(peer, bound, () -> checkPeers("close"), new String[1]);
        }
        catch (final PeerLostException e)
        {
            // Waits on a lost peer would only run out their timeouts: destroying abandons them.
        }
        InFlightWork.closed(this);
        NativeApi.destroyObject(peer);
        engine.streamClosed(this);
    }
}
