package io.github.te4j.rendezvous;

import io.github.te4j.Te4jException;

/**
 * A handle exchange failed: a peer broke the protocol, was rejected, a wait ran out or a peer was
 * lost. Part of te4j's {@link Te4jException} family. {@link #peer()} names the other side when one
 * is known (a rank such as {@code "rank 2"}, a socket address or a file), {@link #reason()} says what
 * went wrong.
 *
 * @since 0.1
 */
public class RendezvousException extends Te4jException
{
    private static final long serialVersionUID = 1L;

    /** The other side, or null. */
    private final String peer;
    /** What went wrong. */
    private final String reason;

    /**
     * A failure of the exchange with {@code peer}, of code {@code SYSTEM_ERROR}.
     *
     * @param peer the other side (rank, address or file), or {@code null} when there is none
     * @param reason what went wrong
     * @since 0.1
     */
    public RendezvousException(final String peer, final String reason)
    {
        this(peer, reason, null);
    }

    /**
     * A failure of the exchange with {@code peer}, with its cause.
     *
     * @param peer the other side (rank, address or file), or {@code null} when there is none
     * @param reason what went wrong
     * @param cause the underlying failure, or {@code null}
     * @since 0.1
     */
    public RendezvousException(final String peer, final String reason, final Throwable cause)
    {
        this(Code.SYSTEM_ERROR, peer, reason, cause);
    }

    /**
     * For the subclasses: timeouts and lost peers carry te4j's matching {@link Code}.
     *
     * @param code the code: {@code TIMEOUT} or {@code PEER_LOST} for the subclasses
     * @param peer the other side (rank, socket address or file), or {@code null}
     * @param reason what went wrong
     * @param cause the underlying failure, or {@code null}
     * @since 0.1
     */
    protected RendezvousException(final Code code, final String peer, final String reason, final Throwable cause)
    {
        super(code, peer == null ? reason : peer + ": " + reason, cause);
        this.peer = peer;
        this.reason = reason;
    }

    /**
     * Who the failure was with.
     *
     * @return the other side (rank, socket address or file), or {@code null} when none applies
     * @since 0.1
     */
    public String peer()
    {
        return peer;
    }

    /**
     * What went wrong.
     *
     * @return what went wrong, without the peer prefix
     * @since 0.1
     */
    public String reason()
    {
        return reason;
    }
}
