package io.github.te4j;

import io.github.te4j.internal.NativeRdmaTransport;
import java.util.ArrayList;
import java.util.List;

/**
 * The contexts that copied an {@link RdmaTransport}'s device tables
 * ({@link CommContext#withRdma(RdmaTransport)}): filled again after a reconnect, drained before
 * the queue pairs are recreated or freed, and cleared when the transport closes. Its lock comes
 * last in the transport's lock order.
 */
final class AttachedContexts
{
    private final Object lock = new Object();
    private final List<CommContext> contexts = new ArrayList<>();

    /**
     * Fills {@code ctx}'s tables from {@code peer} and records it as a user of {@code owner}, under
     * the lock so that a close cannot clear the list in between.
     */
    void attach(final CommContext ctx, final RdmaTransport owner, final NativeRdmaTransport peer)
    {
        synchronized (lock)
        {
            final int status = peer.fillCommCtx(ctx.nativeCtx());
            ctx.commCtxChanged();
            Errors.check(status, "RdmaTransport.fillCommCtx", peer::lastError);
            if (!contexts.contains(ctx))
            {
                contexts.add(ctx);
            }
            ctx.rdmaAttached(owner);
        }
    }

    void detach(final CommContext ctx)
    {
        synchronized (lock)
        {
            contexts.remove(ctx);
        }
    }

    /** Fills every attached context's tables again (their addresses stay; rank, raddr and rkey may not). */
    void refill(final NativeRdmaTransport peer)
    {
        synchronized (lock)
        {
            for (final CommContext c : contexts)
            {
                peer.fillCommCtx(c.nativeCtx());
                c.commCtxChanged();
            }
        }
    }

    /**
     * Waits (bounded, {@link InFlightWork#DRAIN_NANOS}) for the operations queued on the attached
     * contexts: they copied the QP tables and poll the CQs, which recreating wipes and closing
     * frees. False when a stream did not drain in time.
     */
    boolean drain()
    {
        final List<CommContext> attached;
        synchronized (lock)
        {
            attached = new ArrayList<>(contexts);
        }
        boolean idle = true;
        for (final CommContext c : attached)
        {
            idle &= InFlightWork.awaitUsersOf(c);
        }
        return idle;
    }

    /**
     * Makes every context forget the tables before they are freed: later ops report "no route".
     * A listed context's native ctx is alive: CommContext.release detaches before freeing it.
     */
    void clear()
    {
        synchronized (lock)
        {
            for (final CommContext c : contexts)
            {
                NativeRdmaTransport.clearCommCtx(c.nativeCtx());
                c.commCtxChanged();
                c.rdmaAttached(null);
            }
            contexts.clear();
        }
    }
}
