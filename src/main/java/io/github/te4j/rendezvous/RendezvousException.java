package io.github.te4j.rendezvous;

/**
 * A handle exchange failed: a peer broke the protocol, was rejected, a wait ran out or a peer was
 * lost. {@link #peer()} names the other side when one is known (a rank such as {@code "rank 2"},
 * a socket address or a file), {@link #reason()} says what went wrong.
 */
public class RendezvousException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** The other side, or null. */
    private final String peer;
    /** What went wrong. */
    private final String reason;

    /**
     * @param peer the other side (rank, address or file), or {@code null} when there is none
     * @param reason what went wrong
     */
    public RendezvousException(String peer, String reason) {
        this(peer, reason, null);
    }

    /**
     * @param peer the other side (rank, address or file), or {@code null} when there is none
     * @param reason what went wrong
     * @param cause the underlying failure, or {@code null}
     */
    public RendezvousException(String peer, String reason, Throwable cause) {
        super(peer == null ? reason : peer + ": " + reason, cause);
        this.peer = peer;
        this.reason = reason;
    }

    /** @return the other side (rank, socket address or file), or {@code null} when none applies */
    public String peer() {
        return peer;
    }

    /** @return what went wrong, without the peer prefix */
    public String reason() {
        return reason;
    }
}
