package io.github.te4j;

/**
 * A peer rank disappeared: its process exited or was killed, its connection ended, or it left
 * the handle exchange while it was still needed. Thrown by transports and streams (the next
 * {@code synchronize}, a connect) and by every {@link io.github.te4j.exchange.HandleExchange}
 * (the embedded rendezvous, the file exchange, etcd): one class, whichever layer noticed.
 *
 * @since 0.1
 */
public class PeerLostException extends Te4jException
{
    private static final long serialVersionUID = 1L;

    /** The lost rank, or -1 when the layer that noticed does not know it. */
    private final int rank;

    /** What was seen. */
    private final String reason;

    /**
     * A loss whose rank is not known: {@link #rank()} is -1, and the reason is the message.
     *
     * @param message what was seen
     * @since 0.1
     */
    public PeerLostException(final String message)
    {
        // no cause given: leave it unset, so callers may still initCause() it
        super(Code.PEER_LOST, message);
        this.rank = -1;
        this.reason = message;
    }

    /**
     * A loss whose rank is not known, with the error that revealed it.
     *
     * @param message what was seen
     * @param cause the error that revealed the loss
     * @since 0.1
     */
    public PeerLostException(final String message, final Throwable cause)
    {
        this(-1, message, cause);
    }

    /**
     * The loss of a known rank; the message is "rank N: reason".
     *
     * @param rank the lost rank, or -1 when unknown (then the message is the reason alone)
     * @param reason how it was lost
     * @since 0.1
     */
    public PeerLostException(final int rank, final String reason)
    {
        super(Code.PEER_LOST, rank < 0 ? reason : "rank " + rank + ": " + reason);
        this.rank = rank;
        this.reason = reason;
    }

    private PeerLostException(final int rank, final String reason, final Throwable cause)
    {
        super(Code.PEER_LOST, rank < 0 ? reason : "rank " + rank + ": " + reason, cause);
        this.rank = rank;
        this.reason = reason;
    }

    /**
     * The rank that was lost.
     *
     * @return the lost rank, or -1 when unknown
     * @since 0.1
     */
    public int rank()
    {
        return rank;
    }

    /**
     * What was seen, without the rank prefix of the message.
     *
     * @return how the rank was lost
     * @since 0.1
     */
    public String reason()
    {
        return reason;
    }
}
