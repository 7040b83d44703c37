package io.github.te4j;

import io.github.te4j.internal.NativeApi;
import io.github.te4j.internal.NativeCommCtx;
import io.github.te4j.internal.NativeP2pTransport;
import java.util.concurrent.locks.Lock;

/**
 * A symmetric window: this rank's buffer plus the peer tables that reach every other rank's
 * buffer of the same size, and the device-side {@code CommCtx} that operations hand to kernels.
 * Data in a window is addressed by byte offset; every offset is checked against the window size.
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
    private final NativeCommCtx ctx;

    CommContext(final P2pTransport transport, final NativeP2pTransport transportPeer, final int window,
        final DeviceBuffer local, final int rank, final int numRanks, final long activeRanksMask)
    {
        super("CommContext(window " + window + ", rank " + rank + ")");
        this.transport = transport;
        this.transportPeer = transportPeer;
        this.window = window;
        this.local = local;
        this.rank = rank;
        this.numRanks = numRanks;
        this.activeRanksMask = activeRanksMask;
        this.ctx = NativeApi.newCommCtx();
        final int status = transportPeer.makeCommCtx(window, ctx);
        if (status < 0)
        {
            final String msg = transportPeer.lastError();
            NativeApi.deleteCommCtx(ctx);
            transportPeer.closeWindow(window);
            throw Errors.toException(status, "makeCommCtx", msg);
        }
    }

    /** This rank. */
    public int rank()
    {
        return rank;
    }

    public int numRanks()
    {
        return numRanks;
    }

    /** Bit r set when rank r takes part. */
    public long activeRanksMask()
    {
        return activeRanksMask;
    }

    /** Whether {@code r} is an active rank of this window. */
    public boolean isActive(final int r)
    {
        return r >= 0 && r < numRanks && (activeRanksMask & (1L << r)) != 0;
    }

    /** The local buffer of the window. */
    public DeviceBuffer localBuffer()
    {
        return local;
    }

    /** Window size in bytes (the same on every rank). */
    public long size()
    {
        return local.size();
    }

    public Platform platform()
    {
        return transport.platform();
    }

    /** Whether every active peer is mapped (P2P-reachable). */
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

    /** Really touches every active peer's buffer; throws naming the first that fails. */
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

    /** Platform address of the int[numRanks] availability table (for users' own kernels). */
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

    /** Platform address of the void*[numRanks] peer pointer table (for users' own kernels). */
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

    NativeCommCtx nativeCtx()
    {
        return ctx;
    }

    @Override
    void release()
    {
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
