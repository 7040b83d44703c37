package io.github.te4j.rendezvous;

import java.time.Duration;
import java.util.List;

/**
 * A bounded wait of the handle exchange ran out: it says what it waited for and which ranks had
 * not arrived.
 *
 * @since 0.1
 */
public final class RendezvousTimeoutException extends RendezvousException
{
    private static final long serialVersionUID = 1L;

    /** What the wait was for. */
    private final String waitingFor;
    /** Ranks that had not arrived. */
    private final List<Integer> missingRanks;
    /** The limit that ran out. */
    private final Duration timeout;

    /**
     * A wait that ran out, naming the ranks that had not arrived.
     *
     * @param peer the other side waited on, or {@code null}
     * @param waitingFor what the wait was for, e.g. {@code "allGather #3"}
     * @param missingRanks the ranks that had not arrived when the wait ended
     * @param timeout the limit that ran out
     * @since 0.1
     */
    public RendezvousTimeoutException(final String peer, final String waitingFor, final List<Integer> missingRanks,
                                      final Duration timeout)
    {
        super(Code.TIMEOUT, peer, "timed out after " + timeout + " waiting for " + waitingFor
                + "; missing ranks " + missingRanks, null);
        this.waitingFor = waitingFor;
        this.missingRanks = List.copyOf(missingRanks);
        this.timeout = timeout;
    }

    /**
     * What was awaited.
     *
     * @return what the wait was for
     * @since 0.1
     */
    public String waitingFor()
    {
        return waitingFor;
    }

    /**
     * Who was missing.
     *
     * @return the ranks that had not arrived, ascending
     * @since 0.1
     */
    public List<Integer> missingRanks()
    {
        return missingRanks;
    }

    /**
     * How long the wait was.
     *
     * @return the limit that ran out
     * @since 0.1
     */
    public Duration timeout()
    {
        return timeout;
    }
}
