package io.github.te4j;

import io.github.te4j.internal.NativeApi;
import io.github.te4j.internal.NativeCommCtx;
import io.github.te4j.internal.NativeModuleApi;
import io.github.te4j.internal.NativeP2pTransport;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Lock;
import org.bytedeco.javacpp.BytePointer;

/**
 * A symmetric window: this rank's buffer plus the peer tables that reach every other rank's
 * buffer of the same size, and the device-side {@code CommCtx} that operations hand to kernels.
 * Data in a window is addressed by byte offset; every offset is checked against the window size.
 *
 * @since 0.1
 */
public final class CommContext extends NativeResource
{
    private final P2pTransport transport;
    private final NativeP2pTransport transportPeer;
    private final int window;
    private final DeviceBuffer local;
    private final int rank;
    private final int numRanks;
    private final long activeRanksMask;
    private final long p2pRanksMask;
    private final NativeCommCtx ctx;
    private final AtomicInteger commCtxVersion = new AtomicInteger();
    /** The native context's RDMA ranks (bit r), read again after every change of it. */
    private volatile long rdmaRanksMask;
    private volatile RdmaTransport rdma;
    private volatile PeerMonitor peers;

    CommContext(final P2pTransport transport, final NativeP2pTransport transportPeer, final int window,
        final DeviceBuffer local, final int rank, final int numRanks, final long activeRanksMask,
        final long p2pRanksMask)
    {
        super("CommContext(window " + window + ", rank " + rank + ")");
        this.transport = transport;
        this.transportPeer = transportPeer;
        this.window = window;
        this.local = local;
        this.rank = rank;
        this.numRanks = numRanks;
        this.activeRanksMask = activeRanksMask;
        this.p2pRanksMask = p2pRanksMask;
        this.ctx = NativeApi.newCommCtx();
        final int status = transportPeer.makeCommCtx(window, ctx);
        if (status < 0)
        {
            final String msg = transportPeer.lastError();
            NativeApi.deleteCommCtx(ctx);
            transportPeer.closeWindow(window);
            throw Errors.toException(status, "makeCommCtx", msg);
        }
        LiveMemory.mappingsCreated(this, peerMappings());
    }

    /**
     * The ranges where this window maps other processes' buffers (not this process's own
     * buffers, which LiveMemory knows as buffers): a raw RDMA registration of one is withdrawn
     * when this window unmaps it.
     */
    private List<long[]> peerMappings()
    {
        final List<long[]> out = new ArrayList<>();
        final long table = transportPeer.peerPtrsTablePtr(window);
        if (table == 0 || numRanks <= 0)
        {
            return out;
        }
        // A direct buffer, not a JavaCPP allocation: those open /proc/self/statm for their
        // memory accounting and keep it open, one fd more than the caller had.
        final ByteBuffer host = ByteBuffer.allocateDirect(8 * numRanks).order(ByteOrder.nativeOrder());
        if (NativeApi.copyMemory(transport.platform().nativeId(), transport.device(), new BytePointer(host).address(),
            table, 8L * numRanks) != 0)
        {
            return out;
        }
        for (int r = 0; r < numRanks; r++)
        {
            final long p = host.getLong(8 * r);
            if (p != 0 && r != rank && !LiveMemory.insideLiveBuffer(p))
            {
                out.add(new long[] {p, local.size()});
            }
        }
        return out;
    }

    /**
     * This rank.
     *
     * @return this rank, in [0, numRanks)
     * @since 0.1
     */
    public int rank()
    {
        return rank;
    }

    /**
     * Ranks of the window, active or not.
     *
     * @return the number of ranks the transport was made for
     * @since 0.1
     */
    public int numRanks()
    {
        return numRanks;
    }

    /**
     * Bit r set when rank r takes part.
     *
     * @return the mask of active ranks
     * @since 0.1
     */
    public long activeRanksMask()
    {
        return activeRanksMask;
    }

    /**
     * Whether {@code r} is an active rank of this window.
     *
     * @param r a rank; any value
     * @return true when {@code r} is in [0, numRanks) and active
     * @since 0.1
     */
    public boolean isActive(final int r)
    {
        return r >= 0 && r < numRanks && (activeRanksMask & (1L << r)) != 0;
    }

    /**
     * Ranks imported over P2P (bit r); the others are reached over RDMA once {@link #withRdma} is called.
     *
     * @return the mask of ranks mapped over P2P
     * @since 0.1
     */
    public long p2pRanksMask()
    {
        return p2pRanksMask;
    }

    /**
     * Whether operations to {@code r} go over RDMA: an active rank whose route, decided natively when
     * this context was connected (no P2P mapping, RDMA tables attached), is RDMA.
     *
     * @param r a rank; any value
     * @return true when operations to {@code r} take the RDMA route
     * @since 0.1
     */
    public boolean routesOverRdma(final int r)
    {
        return isActive(r) && (rdmaRanksMask & (1L << r)) != 0;
    }

    /**
     * The RDMA transport attached with {@link #withRdma}, or null.
     *
     * @return the attached transport, or null
     * @since 0.1
     */
    public RdmaTransport rdma()
    {
        return rdma;
    }

    /**
     * Adds the RDMA tables of {@code transport} to this context, so operations reach every
     * active rank without a P2P mapping over RDMA (the software NIC or an mlx5 NIC). The
     * transport must be connected, for the same ranks, with this window's buffer registered at
     * this rank (the same start address; the same size or less). Call it before enqueuing
     * operations with this context (operations already enqueued keep the tables they copied).
     * Returns this context.
     *
     * @param transport a connected RDMA transport of the same platform, device and ranks, with this window's
     *     buffer registered
     * @return this context
     * @throws IllegalArgumentException when {@code transport} is null, on another platform or device, for
     *     other ranks, connected as another rank, or has another registration
     * @throws ClosedException when this context is closed
     * @since 0.1
     */
    public CommContext withRdma(final RdmaTransport transport)
    {
        Errors.checkArgument(transport != null, "transport is null");
        Errors.checkArgument(transport.platform() == platform() && transport.device() == local.device(),
            transport + " is on " + transport.platform() + ":" + transport.device() + ", this context on "
                + platform() + ":" + local.device());
        Errors.checkArgument(transport.numRanks() == numRanks,
            transport + " is for " + transport.numRanks() + " ranks, this context for " + numRanks);
        Errors.checkArgument(transport.localRank() == rank,
            transport + " is connected as rank " + transport.localRank() + ", this context is rank " + rank
                + " (fix: connect the transport first)");
        Errors.checkArgument(transport.registeredAddress() == local.address()
                && transport.registeredBytes() <= local.size(),
            "the RDMA registration (0x" + Long.toHexString(transport.registeredAddress()) + ", "
                + transport.registeredBytes() + " B) is not this window's buffer " + local);
        final Lock l = enter();
        try
        {
            transport.attach(this);
            return this;
        }
        finally
        {
            l.unlock();
        }
    }

    /** Set and cleared by RdmaTransport under its contexts lock (the native tables with it). */
    void rdmaAttached(final RdmaTransport transport)
    {
        rdma = transport;
    }

    /**
     * The local buffer of the window.
     *
     * @return this rank's buffer of the window
     * @since 0.1
     */
    public DeviceBuffer localBuffer()
    {
        return local;
    }

    /**
     * Window size in bytes (the same on every rank).
     *
     * @return the size of the local buffer
     * @since 0.1
     */
    public long size()
    {
        return local.size();
    }

    /**
     * The platform of this window: its transport's.
     *
     * @return the platform of the window's buffers
     * @since 0.1
     */
    public Platform platform()
    {
        return transport.platform();
    }

    /**
     * Whether every active peer is mapped (P2P-reachable).
     *
     * @return true when no active peer needs the RDMA route
     * @throws ClosedException when this context is closed
     * @since 0.1
     */
    public boolean allPeersAccessible()
    {
        final Lock l = enter();
        try
        {
            return transportPeer.allPeersAccessible(window);
        }
        finally
        {
            l.unlock();
        }
    }

    /**
     * Really touches every active peer's buffer; throws naming the first that fails.
     *
     * @since 0.1
     */
    public void verifyPeerAccess()
    {
        final Lock l = enter();
        try
        {
            Errors.check(transportPeer.verifyPeerAccess(window), "verifyPeerAccess", transportPeer::lastError);
        }
        finally
        {
            l.unlock();
        }
    }

    /**
     * Platform address of the int[numRanks] availability table (for users' own kernels).
     *
     * @return the table's address (valid while this context is open)
     * @throws ClosedException when this context is closed
     * @since 0.1
     */
    public long availableTablePtr()
    {
        final Lock l = enter();
        try
        {
            return transportPeer.availableTablePtr(window);
        }
        finally
        {
            l.unlock();
        }
    }

    /**
     * Platform address of the void*[numRanks] peer pointer table (for users' own kernels).
     *
     * @return the table's address (valid while this context is open)
     * @throws ClosedException when this context is closed
     * @since 0.1
     */
    public long peerPtrsTablePtr()
    {
        final Lock l = enter();
        try
        {
            return transportPeer.peerPtrsTablePtr(window);
        }
        finally
        {
            l.unlock();
        }
    }

    /** Set once by the import: the peer processes whose loss fails blocked waits on this window. */
    void watchPeers(final PeerMonitor monitor)
    {
        peers = monitor;
    }

    /**
     * Throws {@link PeerLostException} when a peer of this window is gone: a P2P peer's process
     * (PeerMonitor), or a rank reached over RDMA whose connection broke (the RDMA transport).
     */
    void checkPeers(final String waitingFor)
    {
        final PeerMonitor m = peers;
        if (m != null)
        {
            m.check(waitingFor);
        }
        final RdmaTransport r = rdma;
        if (r != null)
        {
            r.checkPeers(this, waitingFor);
        }
    }

    NativeCommCtx nativeCtx()
    {
        return ctx;
    }

    /**
     * Counts the changes to the native {@code CommCtx} after it was made (RDMA tables filled,
     * filled again, cleared): a launch copies the bytes again only when this moved.
     */
    int commCtxVersion()
    {
        return commCtxVersion.get();
    }

    /** Called after every native change of the {@code CommCtx} (see {@link #commCtxVersion()}). */
    void commCtxChanged()
    {
        rdmaRanksMask = NativeApi.commCtxRdmaRanks(ctx);
        commCtxVersion.incrementAndGet();
    }

    /**
     * Bytes of the C++ {@code mooncake::device::CommCtx} a kernel receives by value
     * ({@code sizeof(CommCtx)} as libte4j was built).
     *
     * @return {@code sizeof(CommCtx)} in bytes
     * @since 0.1
     */
    public static long commCtxSize()
    {
        return CommCtxLayout.SIZE;
    }

    /**
     * The offsets of CommCtx's fields as libte4j was built, "size=N align=A p2p=O ibgda=O
     * rank=O p2p.size=N ibgda.size=N": for checking a kernel compiled elsewhere against it.
     *
     * @return the layout text
     * @since 0.1
     */
    public static String commCtxLayout()
    {
        return CommCtxLayout.TEXT;
    }

    /**
     * A copy of this context's {@code CommCtx}: the bytes to pass by value to a kernel launched
     * by the caller's own launcher (e.g. the JavaCPP Presets' {@code cuLaunchKernel}). The tables
     * it points to stay valid while this context is open.
     *
     * @return a new array of {@link #commCtxSize()} bytes
     * @throws ClosedException when this context is closed
     * @since 0.1
     */
    public byte[] commCtxBytes()
    {
        final Lock l = enter();
        try
        {
            return commCtxBytesEntered();
        }
        finally
        {
            l.unlock();
        }
    }

    /** {@link #commCtxBytes()} for a caller that has entered this context. */
    byte[] commCtxBytesEntered()
    {
        final byte[] out = new byte[(int) CommCtxLayout.SIZE];
        Errors.check(NativeModuleApi.copyCommCtx(ctx, out, out.length), "copyCommCtx", NativeModuleApi::moduleLastError);
        return out;
    }

    /** Writes this context's {@code CommCtx} to native memory at {@code address}, for a caller that has entered it. */
    void writeCommCtxEntered(final long address)
    {
        Errors.check(NativeModuleApi.copyCommCtx(ctx, address, CommCtxLayout.SIZE), "copyCommCtx",
            NativeModuleApi::moduleLastError);
    }

    /**
     * {@link #commCtxBytes()} in native memory: a new {@code BytePointer} of
     * {@link #commCtxSize()} bytes owned by the caller (free it with {@code close()} or leave it
     * to the garbage collector), e.g. for a {@code kernelParams} entry of {@code cuLaunchKernel}.
     *
     * @return a new pointer the caller owns
     * @throws ClosedException when this context is closed
     * @since 0.1
     */
    public BytePointer commCtxPointer()
    {
        final Lock l = enter();
        try
        {
            final BytePointer p = new BytePointer(CommCtxLayout.SIZE);
            Errors.check(NativeModuleApi.copyCommCtx(ctx, p, CommCtxLayout.SIZE), "copyCommCtx",
                NativeModuleApi::moduleLastError);
            return p;
        }
        finally
        {
            l.unlock();
        }
    }

    /** The layout, read once from libte4j. */
    private static final class CommCtxLayout
    {
        static final long SIZE;
        static final String TEXT;

        static
        {
            NativeLibrary.ensureAvailable();
            SIZE = NativeModuleApi.commCtxSize();
            TEXT = NativeModuleApi.commCtxLayout();
        }

        private CommCtxLayout()
        {
        }
    }

    @Override
    void release()
    {
        // Operations still queued on a stream hold this window's tables and peer mappings.
        if (!InFlightWork.drainUsersOf(this))
        {
            transport.keepNativeMemory();
            transport.contextClosed(this);
            return;
        }
        final RdmaTransport r = rdma;
        if (r != null)
        {
            r.detach(this);
        }
        // Every NIC of the process stops touching the peer mappings before they are unmapped.
        LiveMemory.mappingsFreeing(this);
        transportPeer.closeWindow(window);
        NativeApi.deleteCommCtx(ctx);
        transport.contextClosed(this);
    }

    @Override
    public String toString()
    {
        return "CommContext[rank " + rank + "/" + numRanks + ", " + local + "]";
    }
}
