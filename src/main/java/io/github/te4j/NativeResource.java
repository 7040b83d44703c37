package io.github.te4j;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.LockSupport;

/**
 * Guards a native object against use after close from any thread: every call counts itself in
 * on one state word and out again, and close waits for the count to reach zero before it frees,
 * so native memory is never freed under a running call.
 *
 * <p>One atomic add in and one out is what a call costs (the per-op paths enter three or four
 * resources). The word also carries the close phases: {@code CLOSING} (no new calls; calls
 * already inside finish), {@code CLOSED} (release() runs) and {@code RELEASED}.
 */
abstract class NativeResource implements AutoCloseable
{
    private static final int CLOSING = 1 << 30;
    private static final int CLOSED = 1 << 29;
    private static final int RELEASED = 1 << 28;
    private static final int CALLS = RELEASED - 1;
    private static final VarHandle STATE;
    /**
     * How long one close may wait, however many children it closes and drains: the outermost
     * close on a thread sets the deadline, every wait inside takes only what is left of it.
     */
    static final long CLOSE_NANOS = 10_000_000_000L;
    private static final ThreadLocal<long[]> CLOSE_DEADLINE = new ThreadLocal<>();

    static
    {
        try
        {
            STATE = MethodHandles.lookup().findVarHandle(NativeResource.class, "state", int.class);
        }
        catch (final ReflectiveOperationException e)
        {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final String name;
    private final Lock entered = new Entered();
    @SuppressWarnings("unused")  // accessed through STATE
    private volatile int state;
    /**
     * The thread running {@link #release()}: what it reaches from inside (a child's close, a
     * drain, a completion callback) must not wait for this release to end, which waits for it.
     */
    private volatile Thread releasing;

    NativeResource(final String name)
    {
        this.name = name;
    }

    /** Enters a call; throws {@link ClosedException} if closed or closing. Unlock in a finally block. */
    final Lock enter()
    {
        final int before = (int) STATE.getAndAdd(this, 1);
        if ((before & (CLOSING | CLOSED)) != 0)
        {
            STATE.getAndAdd(this, -1);
            throw new ClosedException(name);
        }
        return entered;
    }

    /** Leaves a call entered with {@link #enter()}, {@link #enter2} or {@link #enter3}. */
    final void exit()
    {
        STATE.getAndAdd(this, -1);
    }

    /**
     * {@link #enter()} of two resources in the order given, without the arrays of {@link #enterAll}
     * (per-op paths: a varargs call allocates two arrays that the JIT does not remove). If the
     * second is closed, the first is unlocked before {@link ClosedException} propagates. Exit
     * with {@link #exit2}.
     */
    static void enter2(final NativeResource a, final NativeResource b)
    {
        a.enter();
        try
        {
            b.enter();
        }
        catch (final RuntimeException e)
        {
            a.exit();
            throw e;
        }
    }

    /** {@link #enter2} of three resources; exit with {@link #exit3}. */
    static void enter3(final NativeResource a, final NativeResource b, final NativeResource c)
    {
        enter2(a, b);
        try
        {
            c.enter();
        }
        catch (final RuntimeException e)
        {
            exit2(a, b);
            throw e;
        }
    }

    /**
     * {@link #enter()} of every resource of an array, in order, without allocating; if one is
     * closed, those already entered are left before {@link ClosedException} propagates. Exit
     * with {@link #exitEach} and the same array.
     */
    static void enterEach(final NativeResource[] resources)
    {
        int taken = 0;
        try
        {
            for (; taken < resources.length; taken++)
            {
                resources[taken].enter();
            }
        }
        catch (final RuntimeException e)
        {
            while (--taken >= 0)
            {
                resources[taken].exit();
            }
            throw e;
        }
    }

    /** Leaves what {@link #enterEach} entered, in reverse order. */
    static void exitEach(final NativeResource[] resources)
    {
        for (int i = resources.length - 1; i >= 0; i--)
        {
            resources[i].exit();
        }
    }

    /** Releases what {@link #enter2} took, in reverse order. */
    static void exit2(final NativeResource a, final NativeResource b)
    {
        b.exit();
        a.exit();
    }

    /** Releases what {@link #enter3} took, in reverse order. */
    static void exit3(final NativeResource a, final NativeResource b, final NativeResource c)
    {
        c.exit();
        b.exit();
        a.exit();
    }

    /**
     * Like {@link #enter()} for internal draining: does not queue behind a thread waiting to close
     * (which may itself wait for the caller), and returns null instead of throwing when closed.
     */
    final Lock enterForDrain()
    {
        final Lock l = enterUnlessClosed();
        if (l == null)
        {
            awaitReleased();
        }
        return l;
    }

    /**
     * A read lock only if it is free right now and the resource is open, else null: for a child
     * being freed while its owner may be closing (the owner's close waits for the child's).
     */
    final Lock tryEnter()
    {
        return enterUnlessClosed();
    }

    /** Enters while close() waits for the calls inside (CLOSING); null once release() may run. */
    private Lock enterUnlessClosed()
    {
        int s = state;
        while ((s & CLOSED) == 0)
        {
            final int seen = (int) STATE.compareAndExchange(this, s, s + 1);
            if (seen == s)
            {
                return entered;
            }
            s = seen;
        }
        return null;
    }

    /**
     * Locks several resources for one call, in the order given; if one is closed, the locks
     * already taken are released before {@link ClosedException} propagates.
     */
    static Lock[] enterAll(final NativeResource... resources)
    {
        final Lock[] locks = new Lock[resources.length];
        int taken = 0;
        try
        {
            for (; taken < resources.length; taken++)
            {
                locks[taken] = resources[taken].enter();
            }
            return locks;
        }
        catch (final RuntimeException e)
        {
            while (--taken >= 0)
            {
                locks[taken].unlock();
            }
            throw e;
        }
    }

    /** Releases locks from {@link #enterAll}, in reverse order. */
    static void exitAll(final Lock[] locks)
    {
        for (int i = locks.length - 1; i >= 0; i--)
        {
            locks[i].unlock();
        }
    }

    /**
     * Whether close() has begun: no new call gets in.
     *
     * @return true once {@code close()} was called on any thread
     * @since 0.1
     */
    public final boolean isClosed()
    {
        return (state & (CLOSING | CLOSED)) != 0;
    }

    /**
     * Idempotent: the first call waits for the calls inside to leave, then releases; a later or
     * concurrent call returns once that release has finished, except on the thread running the
     * release (a child's close or a callback reached from inside it), where it returns at once.
     */
    @Override
    public final void close()
    {
        final int before = (int) STATE.getAndBitwiseOr(this, CLOSING);
        if ((before & CLOSING) != 0)
        {
            awaitReleased();
            return;
        }
        int s = state;
        for (int spins = 0; ; spins++)
        {
            if ((s & CALLS) == 0)
            {
                final int seen = (int) STATE.compareAndExchange(this, s, s | CLOSED);
                if (seen == s)
                {
                    break;
                }
                s = seen;
                continue;
            }
            backOff(spins);
            s = state;
        }
        releasing = Thread.currentThread();
        final boolean outermost = CLOSE_DEADLINE.get() == null;
        if (outermost)
        {
            CLOSE_DEADLINE.set(new long[] {System.nanoTime() + CLOSE_NANOS});
        }
        try
        {
            release();
        }
        finally
        {
            if (outermost)
            {
                CLOSE_DEADLINE.remove();
            }
            STATE.getAndBitwiseOr(this, RELEASED);
            releasing = null;
        }
    }

    /**
     * The time a wait may take: {@code budgetNanos}, and inside a close no more than what is left
     * of the outermost close's deadline (a wait that gets none keeps its native memory, logged,
     * as when its own bound runs out).
     */
    static long closeBudget(final long budgetNanos)
    {
        final long[] deadline = CLOSE_DEADLINE.get();
        return deadline == null ? budgetNanos : Math.max(0, Math.min(budgetNanos, deadline[0] - System.nanoTime()));
    }

    /**
     * Waits until release() has finished, except on the thread running it: that thread reaches
     * here only from inside its own release (a close or drain of this resource from a child or a
     * callback), and waiting would never end. It goes on as if the release were done, which is
     * what the caller asked for: no new call gets in.
     */
    private void awaitReleased()
    {
        if (releasing == Thread.currentThread())
        {
            return;
        }
        for (int spins = 0; (state & RELEASED) == 0; spins++)
        {
            backOff(spins);
        }
    }

    /** Spins a little, then parks for growing slices up to a millisecond (a close waits on calls in flight). */
    private static void backOff(final int spins)
    {
        if (spins < 100)
        {
            Thread.onSpinWait();
        }
        else
        {
            LockSupport.parkNanos(TimeUnit.MICROSECONDS.toNanos(Math.min(1000, 10L << Math.min(6, (spins - 100) / 16))));
        }
    }

    /** Frees the native object; called once, after every call has left. */
    abstract void release();

    /** The token {@link #enter()} returns: its unlock() leaves the call. */
    private final class Entered implements Lock
    {
        @Override
        public void unlock()
        {
            exit();
        }

        @Override
        public void lock()
        {
            throw new UnsupportedOperationException("enter() the resource instead");
        }

        @Override
        public void lockInterruptibly()
        {
            throw new UnsupportedOperationException("enter() the resource instead");
        }

        @Override
        public boolean tryLock()
        {
            throw new UnsupportedOperationException("enter() the resource instead");
        }

        @Override
        public boolean tryLock(final long time, final TimeUnit unit)
        {
            throw new UnsupportedOperationException("enter() the resource instead");
        }

        @Override
        public Condition newCondition()
        {
            throw new UnsupportedOperationException("enter() the resource instead");
        }
    }

    final String name()
    {
        return name;
    }
}
