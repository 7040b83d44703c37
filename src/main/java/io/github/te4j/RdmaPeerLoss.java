package io.github.te4j;

/**
 * What the NIC's per-rank loss causes (te4j/rdma_api.h lostPeers: 0 alive, -1 closed, else the
 * errno that broke the connection) mean to a user: the mask of lost ranks and the text of the
 * {@link PeerLostException} that names one.
 */
final class RdmaPeerLoss
{
    private RdmaPeerLoss()
    {
    }

    /** @return bit r set for every rank r whose cause is not 0 */
    static long mask(final int[] causes)
    {
        long mask = 0;
        for (int r = 0; r < causes.length; r++)
        {
            mask |= causes[r] != 0 ? 1L << r : 0;
        }
        return mask;
    }

    /**
     * @param where each rank's NIC endpoint from the last connect (entries may be null or missing)
     * @return the exception for rank {@code r}, lost with {@code cause}, met while waiting for {@code waitingFor}
     */
    static PeerLostException lost(final int r, final int cause, final String[] where, final String waitingFor,
        final long peerTimeoutMillis)
    {
        return new PeerLostException("peer lost while waiting for " + waitingFor + ": rank " + r + " ("
            + (r < where.length && where[r] != null ? "NIC " + where[r] : "RDMA") + ") " + why(cause, peerTimeoutMillis)
            + " (fix: close the streams and contexts that include rank " + r + ", then recreateQueuePairs,"
            + " exchange metadata among the remaining ranks and connectPeers with rank " + r
            + "'s bit cleared, or exit)");
    }

    private static String why(final int cause, final long peerTimeoutMillis)
    {
        switch (cause)
        {
            case -1: return "closed its RDMA connection (its process exited or was killed, or it closed its transport)";
            case 104: return "reset its RDMA connection (its process was killed or its NIC closed)";
            case 110: return "did not answer within the peer timeout of " + peerTimeoutMillis
                + " ms (its host or the network is gone)";
            case 113: return "did not answer within the peer timeout of " + peerTimeoutMillis
                + " ms (no route to its host: its host or the network is gone)";
            case 71: return "answered out of protocol (connection dropped)";
            default: return "lost its RDMA connection (errno " + cause + ")";
        }
    }
}
