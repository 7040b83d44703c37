package io.github.te4j;

import io.github.te4j.internal.NativeApi;
import io.github.te4j.internal.NativeP2pTransport;
import io.github.te4j.exchange.Deadline;
import io.github.te4j.exchange.HandleExchange;
import java.io.ByteArrayOutputStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.locks.Lock;

/**
 * The device API's P2pTransport: symmetric buffers, exported handles and imported peer tables, over
 * NVLink/PCIe between GPUs ({@link Platform#CUDA}) or shared memory between processes
 * ({@link Platform#HOST}). One instance per {@link TransferEngine}
 * ({@link TransferEngine#getOrCreateP2pTransport(int)}).
 *
 * <p>The usual sequence on every rank: {@link #allocateBuffer(long)} (same size everywhere),
 * {@link #exportHandle(DeviceBuffer)}, all-gather the handles, {@link #importPeerHandles}; or all of
 * that at once with {@link #connect(DeviceBuffer, int, HandleExchange, Duration)}.
 *
 * @since 0.1
 */
public final class P2pTransport extends NativeResource
{
    private final TransferEngine engine;
    private final NativeP2pTransport peer;
    private final int numRanks;
    private final List<DeviceBuffer> buffers = new ArrayList<>();
    private final List<CommContext> contexts = new ArrayList<>();
    private volatile boolean keepNative;

    P2pTransport(final TransferEngine engine, final int numRanks)
    {
        super("P2pTransport");
        this.engine = engine;
        this.numRanks = numRanks;
        final NativeP2pTransport p = NativeP2pTransport.create(engine.platform().nativeId(), engine.device(), numRanks);
        if (p == null || p.isNull())
        {
            throw new Te4jException(Te4jException.Code.OUT_OF_MEMORY, "P2pTransport.create returned null");
        }
        if (p.status() != 0)
        {
            final Te4jException e = Errors.toException(p.status(), "P2pTransport.create(" + engine.platform()
                + ", device " + engine.device() + ")", p.lastError());
            NativeApi.destroyObject(p);
            throw e;
        }
        this.peer = p;
    }

    /**
     * The platform of this transport: its engine's.
     *
     * @return the platform the buffers of this transport live on
     * @since 0.1
     */
    public Platform platform()
    {
        return engine.platform();
    }

    /**
     * The CUDA device of this transport (0 on the host platform).
     *
     * @return the device ordinal the buffers are allocated on
     * @since 0.1
     */
    public int device()
    {
        return engine.device();
    }

    /**
     * Number of ranks this transport was made for.
     *
     * @return the number of ranks given to {@link TransferEngine#getOrCreateP2pTransport(int)}
     * @since 0.1
     */
    public int numRanks()
    {
        return numRanks;
    }

    /**
     * Allocates {@code bytes} of zeroed platform memory, exportable to peers.
     *
     * @param bytes the size in bytes, positive
     * @return the new buffer, owned by this transport (close it, or the transport, to free it)
     * @throws IllegalArgumentException when {@code bytes} is not positive
     * @throws ClosedException when this transport is closed
     * @throws Te4jException with {@code OUT_OF_MEMORY} or {@code CUDA_ERROR} when the allocation fails
     * @since 0.1
     */
    public DeviceBuffer allocateBuffer(final long bytes)
    {
        Errors.checkArgument(bytes > 0, "bytes=" + bytes + " must be positive");
        final Lock l = enter();
        try
        {
            final long[] out = new long[1];
            Errors.check(peer.allocateBuffer(bytes, out), "allocateBuffer(" + bytes + ")", peer::lastError);
            final DeviceBuffer b = new DeviceBuffer(this, out[0], bytes, false);
            synchronized (buffers)
            {
                buffers.add(b);
            }
            LiveMemory.bufferCreated(b);
            return b;
        }
        finally
        {
            l.unlock();
        }
    }

    /**
     * Registers device memory allocated elsewhere (for example with the JavaCPP Presets for CUDA's
     * {@code cudaMalloc}): it must be a whole {@code cudaMalloc} allocation or lie inside one;
     * pool ({@code cudaMallocAsync}) and managed memory are refused. CUDA only.
     *
     * @param address the device address of the memory
     * @param bytes its size in bytes, positive
     * @return a buffer over that memory; closing it unregisters the memory and does not free it
     * @throws IllegalArgumentException when {@code address} is 0, {@code bytes} is not positive, or the
     *     platform is not CUDA
     * @throws ClosedException when this transport is closed
     * @throws Te4jException when CUDA refuses the memory (pool, managed, or not a {@code cudaMalloc}
     *     allocation)
     * @since 0.1
     */
    public DeviceBuffer registerBuffer(final long address, final long bytes)
    {
        Errors.checkArgument(address != 0, "address is null");
        Errors.checkArgument(bytes > 0, "bytes=" + bytes + " must be positive");
        Errors.checkArgument(platform() == Platform.CUDA,
            "registerBuffer is for CUDA memory allocated elsewhere; on the host platform use allocateBuffer");
        final Lock l = enter();
        try
        {
            Errors.check(peer.registerBuffer(address, bytes), "registerBuffer", peer::lastError);
            final DeviceBuffer b = new DeviceBuffer(this, address, bytes, true);
            synchronized (buffers)
            {
                buffers.add(b);
            }
            LiveMemory.bufferCreated(b);
            return b;
        }
        finally
        {
            l.unlock();
        }
    }

    /** The native peer, for callers in this package that hold {@link #enter()} around each use. */
    NativeP2pTransport nativePeer()
    {
        return peer;
    }

    TransferEngine engine()
    {
        return engine;
    }

    /**
     * Exports {@code buffer} (whole) as a handle that peers on this host can import.
     *
     * @param buffer a buffer of this transport
     * @return the handle, whose bytes ({@link IpcHandle#toBytes()}) the other ranks import
     * @throws IllegalArgumentException when {@code buffer} is null or another transport's
     * @throws ClosedException when this transport or {@code buffer} is closed
     * @throws Te4jException when the native export fails
     * @since 0.1
     */
    public IpcHandle exportHandle(final DeviceBuffer buffer)
    {
        checkOwn(buffer);
        final Lock l = enter();
        try
        {
            final byte[] out = new byte[IpcHandle.MAX_BYTES];
            final int n = Errors.check(peer.exportHandleBytes(buffer.address(), out, out.length), "exportHandle",
                peer::lastError);
            return IpcHandle.fromBytes(Arrays.copyOf(out, n));
        }
        finally
        {
            l.unlock();
        }
    }

    /**
     * Maps the peers' buffers and builds the peer tables for {@code local}.
     *
     * @param local            this rank's buffer (same size on every rank)
     * @param rank             this rank, in [0, numRanks)
     * @param handles          one handle per rank (own entry and inactive ranks may be null)
     * @param activeRanksMask  bit r set when rank r takes part (numRanks bits at most)
     * @return the window of {@code local}, connected to the active ranks
     * @throws IllegalArgumentException when {@code local} is null or another transport's, {@code rank} is
     *     outside [0, numRanks), {@code handles} does not hold one entry per rank, or a mask has bits past
     *     numRanks or leaves out this rank
     * @throws BadHandleException when the handle of a rank to map is null, of another platform or host, or of
     *     a buffer of another size
     * @throws ClosedException when this transport or {@code local} is closed
     * @throws Te4jException when mapping a peer's buffer fails (e.g. {@code CUDA_ERROR}, {@code SYSTEM_ERROR})
     * @since 0.1
     */
    public CommContext importPeerHandles(final DeviceBuffer local, final int rank, final List<IpcHandle> handles,
        final long activeRanksMask)
    {
        return importPeerHandles(local, rank, handles, activeRanksMask, activeRanksMask);
    }

    /**
     * {@link #importPeerHandles(DeviceBuffer, int, List, long)} that maps only the ranks of
     * {@code p2pRanksMask} (a subset of the active ranks; own rank implied): the other active
     * ranks get P2P entry 0 ({@code available[r] == 0}), so operations to them take the RDMA route
     * once {@link CommContext#withRdma(RdmaTransport)} is called, even where P2P would work. Their
     * handles are not read (null is fine).
     *
     * @param local this rank's buffer (same size on every rank)
     * @param rank this rank, in [0, numRanks)
     * @param handles one handle per rank; entries of this rank and of ranks not in {@code p2pRanksMask} may be
     *     null
     * @param activeRanksMask bit r set when rank r takes part (numRanks bits at most)
     * @param p2pRanksMask the active ranks to map over P2P
     * @return the window of {@code local}, connected to the active ranks
     * @throws IllegalArgumentException when {@code local} is null or another transport's, {@code rank} is
     *     outside [0, numRanks), {@code handles} does not hold one entry per rank, or a mask has bits past
     *     numRanks or leaves out this rank
     * @throws IllegalArgumentException also when {@code p2pRanksMask} has ranks outside {@code
     *     activeRanksMask}
     * @throws BadHandleException when the handle of a rank to map is null, of another platform or host, or of
     *     a buffer of another size
     * @throws ClosedException when this transport or {@code local} is closed
     * @throws Te4jException when mapping a peer's buffer fails (e.g. {@code CUDA_ERROR}, {@code SYSTEM_ERROR})
     * @since 0.1
     */
    public CommContext importPeerHandles(final DeviceBuffer local, final int rank, final List<IpcHandle> handles,
        final long activeRanksMask, final long p2pRanksMask)
    {
        checkOwn(local);
        Errors.checkRank(rank, numRanks);
        Errors.checkArgument(handles != null && handles.size() == numRanks,
            "handles must hold one entry per rank: " + (handles == null ? "null" : handles.size() + " entries")
                + " for " + numRanks + " ranks");
        Errors.checkArgument(numRanks == 64 || (activeRanksMask >>> numRanks) == 0,
            "activeRanksMask 0x" + Long.toHexString(activeRanksMask) + " has bits past " + numRanks + " ranks");
        Errors.checkArgument((activeRanksMask & (1L << rank)) != 0, "activeRanksMask must include own rank " + rank);
        Errors.checkArgument((p2pRanksMask & ~activeRanksMask) == 0, "p2pRanksMask 0x" + Long.toHexString(p2pRanksMask)
            + " has ranks outside activeRanksMask 0x" + Long.toHexString(activeRanksMask));
        final long mapped = p2pRanksMask | (1L << rank);
        final int[] lengths = new int[numRanks];
        final ByteArrayOutputStream packed = new ByteArrayOutputStream();
        for (int r = 0; r < numRanks; r++)
        {
            if (r == rank || (mapped & (1L << r)) == 0)
            {
                continue;
            }
            final IpcHandle h = handles.get(r);
            if (h == null)
            {
                throw new BadHandleException("handle of active rank " + r + " is null");
            }
            if (h.platform() != platform())
            {
                throw new BadHandleException("rank " + r + " exported a " + h.platform() + " handle, this transport is "
                    + platform());
            }
            if (!h.isFromThisHost())
            {
                throw new BadHandleException("rank " + r + "'s handle comes from another host: P2P needs all ranks"
                    + " on one host (fix: use RDMA between hosts)");
            }
            if (h.bufferSize() != local.size())
            {
                throw new BadHandleException("rank " + r + " exported " + h.bufferSize() + " B, this rank's buffer is "
                    + local.size() + " B (symmetric buffers must have the same size)");
            }
            final byte[] bytes = h.toBytes();
            lengths[r] = bytes.length;
            packed.writeBytes(bytes);
        }
        final byte[] all = packed.toByteArray();
        final Lock l = enter();
        try
        {
            final Lock lb = local.enter();
            try
            {
                final int window = Errors.check(
                    peer.importPeerHandleBytes(local.address(), rank, numRanks, all, lengths, numRanks, mapped),
                    "importPeerHandles(rank " + rank + " of " + numRanks + ")", peer::lastError);
                final CommContext ctx = new CommContext(this, peer, window, local, rank, numRanks, activeRanksMask,
                    mapped);
                ctx.watchPeers(PeerMonitor.of(handles, rank, mapped));
                synchronized (contexts)
                {
                    contexts.add(ctx);
                }
                return ctx;
            }
            finally
            {
                lb.unlock();
            }
        }
        finally
        {
            l.unlock();
        }
    }

    /**
     * {@link #importPeerHandles(DeviceBuffer, int, List, long)} from the handles' bytes as they
     * came from the other ranks ({@link IpcHandle#toBytes()}; own entry and inactive ranks may be
     * null): each is decoded by the native decoder, which names what is wrong in a
     * {@link BadHandleException}.
     *
     * @param local this rank's buffer (same size on every rank)
     * @param rank this rank, in [0, numRanks)
     * @param handles one encoded handle per rank
     * @param activeRanksMask bit r set when rank r takes part (numRanks bits at most)
     * @return the window of {@code local}, connected to the active ranks
     * @throws BadHandleException when a handle's bytes do not decode, naming the rank
     * @throws IllegalArgumentException when {@code local} is null or another transport's, {@code rank} is
     *     outside [0, numRanks), {@code handles} does not hold one entry per rank, or a mask has bits past
     *     numRanks or leaves out this rank
     * @throws BadHandleException when the handle of a rank to map is null, of another platform or host, or of
     *     a buffer of another size
     * @throws ClosedException when this transport or {@code local} is closed
     * @throws Te4jException when mapping a peer's buffer fails (e.g. {@code CUDA_ERROR}, {@code SYSTEM_ERROR})
     * @since 0.1
     */
    public CommContext importPeerHandleBytes(final DeviceBuffer local, final int rank, final List<byte[]> handles,
        final long activeRanksMask)
    {
        Errors.checkArgument(handles != null, "handles is null");
        final List<IpcHandle> decoded = new ArrayList<>(handles.size());
        for (int r = 0; r < handles.size(); r++)
        {
            final byte[] b = handles.get(r);
            final boolean read = r != rank && (activeRanksMask & (1L << r)) != 0 && b != null;
            try
            {
                decoded.add(read ? IpcHandle.fromBytes(b) : null);
            }
            catch (final BadHandleException e)
            {
                throw new BadHandleException("handle of rank " + r + ": " + e.getMessage());
            }
        }
        return importPeerHandles(local, rank, decoded, activeRanksMask);
    }

    /**
     * Export, all-gather through {@code exchange}, import, barrier: the whole handshake for one
     * buffer, within {@code timeout} as a whole. Every rank must call this with a buffer of the
     * same size.
     *
     * @param local this rank's buffer from this transport, the same size on every rank
     * @param numActive ranks 0 to numActive - 1 take part; in [1, numRanks]
     * @param exchange the handle exchange of the job: its world size is {@link #numRanks()}
     * @param timeout the bound of the whole call; positive
     * @return the connected window of {@code local}
     * @throws IllegalArgumentException when an argument is null or not of this transport, {@code timeout} is
     *     not positive, or the exchange has another world size
     * @throws BadHandleException when a peer's handle is of another platform or host, or of a buffer of
     *     another size
     * @throws io.github.te4j.rendezvous.RendezvousTimeoutException when the ranks do not all exchange and meet at the barrier in time
     * @throws PeerLostException when a rank leaves the exchange
     * @throws ClosedException when this transport or {@code local} is closed
     * @since 0.1
     */
    public CommContext connect(final DeviceBuffer local, final int numActive, final HandleExchange exchange,
        final Duration timeout)
    {
        Errors.checkArgument(numActive >= 1 && numActive <= numRanks, "numActive=" + numActive + " must be in [1, "
            + numRanks + "]");
        final Deadline deadline = Deadline.after(checkTimeout(timeout));
        final List<IpcHandle> handles = exchangeHandles(local, exchange, deadline);
        final long mask = numActive >= 64 ? -1L : (1L << numActive) - 1;
        final CommContext ctx = importPeerHandles(local, exchange.rank(), handles, mask);
        barrierOrClose(ctx, exchange, deadline);
        return ctx;
    }

    /** Exports {@code local} and all-gathers every rank's handle through {@code exchange}. */
    private List<IpcHandle> exchangeHandles(final DeviceBuffer local, final HandleExchange exchange,
        final Deadline deadline)
    {
        checkOwn(local);
        Errors.checkArgument(exchange != null, "exchange is null");
        Errors.checkArgument(exchange.worldSize() == numRanks,
            "exchange has " + exchange.worldSize() + " ranks, this transport " + numRanks);
        final IpcHandle mine = exportHandle(local);
        final List<IpcHandle> handles = new ArrayList<>();
        for (final byte[] bytes : exchange.allGather(mine.toBytes(), deadline.left()))
        {
            handles.add(IpcHandle.fromBytes(bytes));
        }
        return handles;
    }

    /**
     * Nobody may free its buffer before every peer has mapped it: the barrier, with what is left
     * of the call's deadline. A rank that fails it keeps no half-made context.
     */
    private static void barrierOrClose(final CommContext ctx, final HandleExchange exchange, final Deadline deadline)
    {
        try
        {
            exchange.barrier(deadline.left());
        }
        catch (final RuntimeException e)
        {
            ctx.close();
            throw e;
        }
    }

    private static Duration checkTimeout(final Duration timeout)
    {
        Errors.checkArgument(timeout != null, "timeout is null");
        Errors.checkArgument(!timeout.isNegative() && !timeout.isZero(), "timeout must be positive: " + timeout);
        return timeout;
    }

    /**
     * {@link #connect(DeviceBuffer, HandleExchange, Duration)} that maps only the ranks of
     * {@code p2pRanksMask} over P2P (see {@link #importPeerHandles(DeviceBuffer, int, List, long, long)}):
     * e.g. {@code 1L << rank} to send everything to the other ranks over RDMA.
     *
     * @param local this rank's buffer from this transport, the same size on every rank
     * @param exchange the handle exchange of the job: its world size is {@link #numRanks()}
     * @param timeout the bound of the whole call; positive
     * @param p2pRanksMask the ranks to map over P2P; the others are reached over RDMA
     * @return the connected window of {@code local}
     * @throws IllegalArgumentException when an argument is null or not of this transport, {@code timeout} is
     *     not positive, or the exchange has another world size
     * @throws BadHandleException when a peer's handle is of another platform or host, or of a buffer of
     *     another size
     * @throws io.github.te4j.rendezvous.RendezvousTimeoutException when the ranks do not all exchange and meet at the barrier in time
     * @throws PeerLostException when a rank leaves the exchange
     * @throws ClosedException when this transport or {@code local} is closed
     * @since 0.1
     */
    public CommContext connect(final DeviceBuffer local, final HandleExchange exchange, final Duration timeout,
        final long p2pRanksMask)
    {
        final Deadline deadline = Deadline.after(checkTimeout(timeout));
        final List<IpcHandle> handles = exchangeHandles(local, exchange, deadline);
        final long mask = numRanks == 64 ? -1L : (1L << numRanks) - 1;
        final CommContext ctx = importPeerHandles(local, exchange.rank(), handles, mask, p2pRanksMask & mask);
        barrierOrClose(ctx, exchange, deadline);
        return ctx;
    }

    /**
     * Same as {@link #connect(DeviceBuffer, int, HandleExchange, Duration)} with all ranks active.
     *
     * @param local this rank's buffer from this transport, the same size on every rank
     * @param exchange the handle exchange of the job: its world size is {@link #numRanks()}
     * @param timeout the bound of the whole call; positive
     * @return the connected window of {@code local}
     * @throws IllegalArgumentException when an argument is null or not of this transport, {@code timeout} is
     *     not positive, or the exchange has another world size
     * @throws BadHandleException when a peer's handle is of another platform or host, or of a buffer of
     *     another size
     * @throws io.github.te4j.rendezvous.RendezvousTimeoutException when the ranks do not all exchange and meet at the barrier in time
     * @throws PeerLostException when a rank leaves the exchange
     * @throws ClosedException when this transport or {@code local} is closed
     * @since 0.1
     */
    public CommContext connect(final DeviceBuffer local, final HandleExchange exchange, final Duration timeout)
    {
        return connect(local, numRanks, exchange, timeout);
    }

    private void checkOwn(final DeviceBuffer buffer)
    {
        Errors.checkArgument(buffer != null, "buffer is null");
        Errors.checkArgument(buffer.owner() == this, buffer + " belongs to another transport");
        buffer.checkOpen();
    }

    /** Frees {@code buffer}'s memory, unless {@code mayFree} is false (a view of it stayed in use): then it is kept. */
    void freeBufferInternal(final DeviceBuffer buffer, final boolean mayFree)
    {
        final List<CommContext> dependent = new ArrayList<>();
        synchronized (contexts)
        {
            for (final CommContext c : contexts)
            {
                if (c.localBuffer() == buffer)
                {
                    dependent.add(c);
                }
            }
        }
        dependent.forEach(CommContext::close);
        // Streams may still have operations queued that read or write this buffer.
        final boolean idle = InFlightWork.drainUsersOf(buffer);
        // Every RDMA NIC of the process (any engine may hold a raw registration of it) must stop
        // writing into memory before it is freed.
        LiveMemory.bufferFreeing(buffer);
        synchronized (buffers)
        {
            buffers.remove(buffer);
        }
        if (!idle || !mayFree)
        {
            keepNativeMemory();
            return;
        }
        // Not enter(): a thread closing this transport holds its lock and waits for this buffer's.
        final Lock l = tryEnter();
        if (l == null)
        {
            return;  // closed or closing: the transport frees every segment it still has
        }
        try
        {
            Errors.check(peer.freeBuffer(buffer.address()), "freeBuffer", peer::lastError);
        }
        finally
        {
            l.unlock();
        }
    }

    /** A child could not be drained: the native transport (all its memory) must outlive it. */
    void keepNativeMemory()
    {
        keepNative = true;
    }

    void contextClosed(final CommContext ctx)
    {
        synchronized (contexts)
        {
            contexts.remove(ctx);
        }
    }

    @Override
    void release()
    {
        // Transfer batches that copy into this transport's segment mappings stop first.
        if (!InFlightWork.drainBatchesUsing(this))
        {
            keepNativeMemory();
        }
        // Children first: contexts unmap peers, buffers free memory; then the transport itself.
        final List<CommContext> cs;
        synchronized (contexts)
        {
            cs = new ArrayList<>(contexts);
        }
        cs.forEach(CommContext::close);
        final List<DeviceBuffer> bs;
        synchronized (buffers)
        {
            bs = new ArrayList<>(buffers);
        }
        for (final DeviceBuffer b : bs)
        {
            // Close first: it waits for calls still using the buffer and drains streams.
            b.close();
            LiveMemory.bufferFreeing(b);
            if (!keepNative)
            {
                peer.freeBuffer(b.address());
            }
        }
        if (!keepNative)
        {
            NativeApi.destroyObject(peer);
        }
        engine.transportClosed(this);
    }
}
