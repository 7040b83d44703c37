package io.github.te4j.rendezvous;

/** A rank's connection ended (EOF, reset, dropped after a protocol error, or it closed) while it was still needed. */
public final class PeerLostException extends RendezvousException {
    private static final long serialVersionUID = 1L;

    /** The lost rank. */
    private final int rank;

    /**
     * @param rank the rank that was lost
     * @param reason how it was lost
     */
    public PeerLostException(int rank, String reason) {
        super(Code.PEER_LOST, "rank " + rank, reason, null);
        this.rank = rank;
    }

    /** @return the rank that was lost */
    public int rank() {
        return rank;
    }
}
