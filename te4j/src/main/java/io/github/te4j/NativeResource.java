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
