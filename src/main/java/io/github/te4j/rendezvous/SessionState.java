package io.github.te4j.rendezvous;

import io.github.te4j.Te4jException;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Whether a rendezvous is closed and the failure that made it unusable: written by the collectives
 * and by close(), read by rank 0's connection threads, which must refuse late joiners and stop
 * quietly once the instance is closing.
 */
final class SessionState
{
    private final AtomicBoolean closed = new AtomicBoolean();
    private volatile Te4jException failure;

    boolean closed()
    {
        return closed.get();
    }

    /** @return true for the one caller that closes, false when already closed */
    boolean close()
    {
        return closed.compareAndSet(false, true);
    }

    /** @return the failure that ended the session, or null while it is usable */
    Te4jException failure()
    {
        return failure;
    }

    void fail(final Te4jException e)
    {
        failure = e;
    }
}
