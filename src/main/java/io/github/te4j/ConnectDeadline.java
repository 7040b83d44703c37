package io.github.te4j;

import io.github.te4j.exchange.Deadline;
import java.time.Duration;

/**
 * One deadline shared by the steps of {@link RdmaTransport#connect} and
 * {@link RdmaTransport#reconnect} (gather, connect, barrier), so the call as a whole keeps its
 * timeout however the time splits between the steps.
 */
final class ConnectDeadline
{
    private final long deadline;

    private ConnectDeadline(final long deadline)
    {
        this.deadline = deadline;
    }

    /** @return the deadline {@code timeout} from now; an absurdly long timeout saturates instead of overflowing */
    static ConnectDeadline after(final Duration timeout)
    {
        return new ConnectDeadline(Deadline.after(timeout).nanoTime());
    }

    /** Time left for the step {@code before}; the timeout exception once none is left. */
    Duration left(final String before)
    {
        final long nanos = deadline - System.nanoTime();
        if (nanos <= 0)
        {
            throw new Te4jTimeoutException("RdmaTransport.connect: the timeout passed before " + before);
        }
        return Duration.ofNanos(nanos);
    }
}
