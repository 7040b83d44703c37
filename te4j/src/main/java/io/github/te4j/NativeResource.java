package io.github.te4j;

import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * Guards a native object against use after close from any thread: calls hold the read lock,
 * close takes the write lock, so native memory is never freed under a running call.
 */
abstract class NativeResource implements AutoCloseable
{
    private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
    private final String name;
    private boolean closed;

    NativeResource(final String name)
    {
        this.name = name;
    }

    /** Locks for a call; throws {@link ClosedException} if closed. Unlock in a finally block. */
    final Lock enter()
    {
        final Lock l = lock.readLock();
        l.lock();
        if (closed)
        {
            l.unlock();
            throw new ClosedException(name);
        }
        return l;
    }

    /** Unlocks a call entered with {@link #enter()}, {@link #enter2} or {@link #enter3}. */
    final void exit()
    {
        lock.readLock().unlock();
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
        final Lock l = lock.readLock();
        if (!l.tryLock())
        {
            l.lock();
        }
        if (closed)
        {
            l.unlock();
            return null;
        }
        return l;
    }

    /**
     * A read lock only if it is free right now and the resource is open, else null: for a child
     * being freed while its owner may be closing (the owner's close waits for the child's).
     */
    final Lock tryEnter()
    {
        final Lock l = lock.readLock();
        if (!l.tryLock())
        {
            return null;
        }
        if (closed)
        {
            l.unlock();
            return null;
        }
        return l;
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

    /** Whether close() has run. */
    public final boolean isClosed()
    {
        final Lock l = lock.readLock();
        l.lock();
        try
        {
            return closed;
        }
        finally
        {
            l.unlock();
        }
    }

    /** Idempotent: the first call releases, later calls do nothing. */
    @Override
    public final void close()
    {
        final Lock l = lock.writeLock();
        l.lock();
        try
        {
            if (closed)
            {
                return;
            }
            closed = true;
            release();
        }
        finally
        {
            l.unlock();
        }
    }

    /** Frees the native object; called once, under the write lock. */
    abstract void release();

    final String name()
    {
        return name;
    }
}
