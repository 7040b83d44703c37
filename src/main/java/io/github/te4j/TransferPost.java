package io.github.te4j;

import io.github.te4j.exchange.Deadline;
import io.github.te4j.telemetry.ListPostEvent;
import java.time.Duration;
import java.util.AbstractList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * One post of a {@link TransferList} ({@link TransferList#post(int, int, Duration)}): requests
 * [{@link #from()}, {@link #to()}) of the list, indexed here from 0 ({@link #status(int)} of
 * index i is list request from() + i). The same status surface as a {@link TransferBatch}:
 * {@link #await(Duration)}, {@link #awaitDone(Duration)}, {@link #states(TransferState[])},
 * {@link #future()}, and {@link #cancel()}.
 *
 * <p>A post's requests turn final together, when the post ends: until then each is
 * {@link TransferState#PENDING}. Then each is {@link TransferState#COMPLETED}, or, if it had not
 * started when the post was stopped, {@link TransferState#CANCELLED} ({@link #cancel()}, or the
 * list closed under it) or {@link TransferState#TIMEOUT} (its deadline passed, or memory it
 * uses was being unregistered or closed); a request that was copying when the post was stopped
 * finishes and is COMPLETED. Every copy is all or nothing. No request of a list fails alone (the
 * checks that could fail one are made at prepare and at post).
 *
 * @since 0.1
 */
public final class TransferPost
{
    private final TransferList list;
    private final long number;
    private final int from;
    private final int to;
    private final long deadline;
    private final ListPostEvent event;  // null unless recording wants it
    // Guarded by this.
    private boolean settled;
    private int skipped;
    private int[] nativeStates;     // read back only when something was skipped
    private TransferState stopReason;  // what a skipped request reads as
    private CompletableFuture<List<TransferStatus>> future;

    TransferPost(final TransferList list, final long number, final int from, final int to, final long deadline,
        final ListPostEvent event)
    {
        this.list = list;
        this.number = number;
        this.from = from;
        this.to = to;
        this.deadline = deadline;
        this.event = event;
    }

    /**
     * The list it posted.
     *
     * @return the list
     * @since 0.1
     */
    public TransferList list()
    {
        return list;
    }

    /**
     * The first list index posted.
     *
     * @return the index in the list of this post's first request
     * @since 0.1
     */
    public int from()
    {
        return from;
    }

    /**
     * One past the last list index posted.
     *
     * @return the exclusive end of the posted range in the list
     * @since 0.1
     */
    public int to()
    {
        return to;
    }

    /**
     * The number of requests posted: indices [0, size()) here.
     *
     * @return to() - from()
     * @since 0.1
     */
    public int size()
    {
        return to - from;
    }

    /** A timeout's check whose message is built only when it fails (posts and waits run per step). */
    static void checkTimeout(final Duration timeout)
    {
        if (timeout == null || timeout.isNegative())
        {
            throw new IllegalArgumentException("timeout must be non-negative: " + timeout);
        }
    }

    long deadline()
    {
        return deadline;
    }

    /**
     * Whether every request is final (the post has ended).
     *
     * @return true when the post has ended
     * @throws ClosedException when the list is closed
     * @since 0.1
     */
    public boolean isDone()
    {
        if (!list.refresh(this))
        {
            throw new ClosedException("TransferList");
        }
        return isSettled();
    }

    /**
     * Waits until the post has ended or {@code timeout} passes; at the post's deadline the
     * requests not started end as {@link TransferState#TIMEOUT}.
     *
     * @param timeout how long to wait; not negative
     * @return whether every request is final
     * @throws IllegalArgumentException when {@code timeout} is null or negative
     * @throws ClosedException when the list is closed
     * @since 0.1
     */
    public boolean awaitDone(final Duration timeout)
    {
        checkTimeout(timeout);
        final long end = System.nanoTime() + Deadline.toNanos(timeout);
        for (;;)
        {
            if (isDone())
            {
                return true;
            }
            final long now = System.nanoTime();
            final long left = end - now;
            if (left <= 0)
            {
                return false;
            }
            // Wake at the deadline too: the refresh above cancels the post then.
            final long toDeadline = deadline - now;
            final long slice = Math.min(left, Math.min(PeerMonitor.CHECK_NANOS, Math.max(1, toDeadline)));
            if (!list.waitNative(this, Math.max(1, slice)))
            {
                throw new ClosedException("TransferList");
            }
        }
    }

    /**
     * {@link #awaitDone(Duration)}, then the states: those still running are {@link TransferState#PENDING}.
     *
     * @param timeout how long to wait; not negative
     * @return the states, by index in this post
     * @throws IllegalArgumentException when {@code timeout} is null or negative
     * @throws ClosedException when the list is closed
     * @since 0.1
     */
    public List<TransferStatus> await(final Duration timeout)
    {
        awaitDone(timeout);
        return statuses();
    }

    /**
     * The state of request {@code index} (list request from() + index) now.
     *
     * @param index the request's index in this post, in [0, size())
     * @return its state, with the cause of a failure
     * @throws IllegalArgumentException when {@code index} is outside the post
     * @since 0.1
     */
    public TransferStatus status(final int index)
    {
        if (index < 0 || index >= size())
        {
            throw new IllegalArgumentException("index=" + index + " is outside the post's " + size() + " requests");
        }
        list.refresh(this);
        synchronized (this)
        {
            return statusOf(index);
        }
    }

    /**
     * The states of every request now, by index: a view built without an object per request.
     * Once the post has ended it never changes.
     *
     * @return the states, by index in this post
     * @since 0.1
     */
    public List<TransferStatus> statuses()
    {
        list.refresh(this);
        synchronized (this)
        {
            return snapshot();
        }
    }

    /**
     * Writes every request's state into {@code out} by index.
     *
     * @param out at least {@link #size()} long
     * @return {@link #size()}
     * @throws IllegalArgumentException when {@code out} is null or shorter than {@link #size()}
     * @since 0.1
     */
    public int states(final TransferState[] out)
    {
        Errors.checkArgument(out != null, "out is null");
        if (out.length < size())
        {
            throw new IllegalArgumentException("out holds " + out.length + " states, the post " + size() + " requests");
        }
        list.refresh(this);
        synchronized (this)
        {
            for (int i = 0; i < size(); i++)
            {
                out[i] = statusOf(i).state();
            }
        }
        return size();
    }

    /**
     * Cancels the post: its requests that have not started end as {@link TransferState#CANCELLED}
     * and never touch memory; those copying finish. Returns at once (await the post for the
     * outcome). A no-op once the post has ended, or after its deadline already stopped it.
     *
     * @since 0.1
     */
    public void cancel()
    {
        list.cancel(this);
    }

    /**
     * A future completed with the states once the post has ended (also when requests were
     * cancelled or timed out); completed exceptionally only when the list is closed while the
     * post still runs in native code past the close's bounded wait.
     *
     * @return the future; the same one on every call
     * @since 0.1
     */
    public synchronized CompletableFuture<List<TransferStatus>> future()
    {
        if (future == null)
        {
            future = new CompletableFuture<>();
            if (settled)
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

    synchronized boolean isSettled()
    {
        return settled;
    }

    synchronized boolean isCancelRequested()
    {
        return stopReason != null;
    }

    /** The first reason to stop wins: a deadline after a cancel keeps the requests CANCELLED. */
    synchronized void requestCancel(final TransferState reason)
    {
        if (stopReason == null)
        {
            stopReason = reason;
        }
    }

    /** The post ended: {@code skipped} requests never started; their states when some did. */
    void settle(final int skippedCount, final int[] states, final boolean closing)
    {
        synchronized (this)
        {
            settled = true;
            skipped = skippedCount;
            nativeStates = states;
            if (skippedCount > 0 && stopReason == null)
            {
                stopReason = TransferState.TIMEOUT;  // not asked for here: a drain
            }
        }
        if (event != null && event.shouldCommit())
        {
            event.agent = list.agent().segmentName();
            event.platform = list.platformName();
            event.listId = list.id();
            event.post = number;
            event.from = from;
            event.to = to;
            event.bytes = list.bytesOf(from, to);
            event.skipped = skippedCount;
            event.outcome = skippedCount == 0 ? "COMPLETED" : closing ? "CLOSED" : stopReason.name();
            event.commit();
        }
    }

    /** The list closed while the native post still ran: its future fails, its states stay PENDING. */
    void abandon()
    {
        final CompletableFuture<List<TransferStatus>> f;
        synchronized (this)
        {
            f = future;
        }
        if (f != null)
        {
            f.completeExceptionally(new ClosedException("TransferList (closed while the post still ran)"));
        }
    }

    void completeFutureIfSettled()
    {
        final CompletableFuture<List<TransferStatus>> f;
        final List<TransferStatus> result;
        synchronized (this)
        {
            if (!settled || future == null || future.isDone())
            {
                return;
            }
            f = future;
            result = snapshot();
        }
        f.complete(result);
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

    /** For the watcher: looks at the post and completes the future; false once there is nothing more to do. */
    boolean watch()
    {
        if (!list.refresh(this))
        {
            abandon();
            return false;
        }
        completeFutureIfSettled();
        return !isFutureDone();
    }

    private TransferStatus statusOf(final int i)
    {
        if (!settled)
        {
            return TransferStatus.pending();
        }
        if (skipped == 0)
        {
            return TransferStatus.completed();
        }
        final int s = nativeStates[i];
        if (s == 1)
        {
            return TransferStatus.completed();
        }
        if (s == 2)
        {
            return stopReason == TransferState.CANCELLED ? TransferStatus.cancelled() : TransferStatus.timedOut();
        }
        return TransferStatus.failed(Errors.toException(s, "list request " + (from + i), "post " + number));
    }

    /** An immutable view of the states as they are now (the post's outcome never changes once settled). */
    private List<TransferStatus> snapshot()
    {
        final boolean done = settled;
        final int n = size();
        if (done)
        {
            return new AbstractList<TransferStatus>()
            {
                @Override
                public TransferStatus get(final int i)
                {
                    java.util.Objects.checkIndex(i, n);
                    synchronized (TransferPost.this)
                    {
                        return statusOf(i);
                    }
                }

                @Override
                public int size()
                {
                    return n;
                }
            };
        }
        return java.util.Collections.nCopies(n, TransferStatus.pending());
    }

    @Override
    public String toString()
    {
        return "TransferPost[" + number + " of " + list + ", requests [" + from + ", " + to + ")]";
    }
}
