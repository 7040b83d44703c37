package io.github.te4j.rendezvous;

import io.github.te4j.exchange.Deadline;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * Deadlines on System.nanoTime(): every wait of the rendezvous has one for the whole call, checked
 * before every read, so a peer that drips bytes cannot stretch it.
 */
final class Deadlines
{
    private Deadlines()
    {
    }

    /** @return the deadline on System.nanoTime() of a call given {@code timeout} */
    static long deadlineOf(final Duration timeout)
    {
        BuilderChecks.notNull(timeout, "timeout");
        if (timeout.isNegative() || timeout.isZero())
        {
            throw new IllegalArgumentException("timeout must be positive: " + timeout);
        }
        return Deadline.after(timeout).nanoTime();
    }

    /**
     * @return the milliseconds left before {@code deadline}, rounded up and at least 1, or 0 once
     *         it passed: a 0 passed to connect() or setSoTimeout() would mean "wait forever"
     */
    static int millisLeft(final long deadline)
    {
        final long left = deadline - System.nanoTime();
        if (left <= 0)
        {
            return 0;
        }
        return (int) Math.max(1, Math.min(Integer.MAX_VALUE, TimeUnit.NANOSECONDS.toMillis(left) + 1));
    }
}
