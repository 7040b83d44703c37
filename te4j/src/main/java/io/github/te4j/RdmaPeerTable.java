package io.github.te4j;

import java.util.Arrays;
import java.util.List;

/**
 * What {@link RdmaTransport#connectPeers} hands the native side: the active ranks' metadata,
 * checked for agreement with this rank's (same shape and backend, one software NIC per rank, a
 * NIC key where one is needed) and laid out as one array per field. Inactive ranks stay zero.
 */
final class RdmaPeerTable
{
    final long[] addrs;
    final int[] keys;
    final int[] lids;
    final long[] prefixes;
    final long[] ifids;
    /** Every rank's QP numbers, numRanks x qpsPerRank each. */
    final int[] qpns;
    /** Every rank's NIC key, {@link RdmaMetadata#KEY_BYTES} each (zeros for hardware NICs). */
    final byte[] nicKeys;
    /** Where each active rank's NIC is, for messages. */
    final String[] where;

    RdmaPeerTable(final int numRanks, final int qpsPerRank, final List<RdmaMetadata> all, final long activeRanksMask,
        final RdmaMetadata mine)
    {
        final int total = numRanks * qpsPerRank;
        addrs = new long[numRanks];
        keys = new int[numRanks];
        lids = new int[numRanks];
        prefixes = new long[numRanks];
        ifids = new long[numRanks];
        qpns = new int[numRanks * total];
        nicKeys = new byte[numRanks * RdmaMetadata.KEY_BYTES];
        where = new String[numRanks];
        for (int r = 0; r < numRanks; r++)
        {
            if ((activeRanksMask & (1L << r)) == 0)
            {
                continue;
            }
            final RdmaMetadata m = all.get(r);
            if (m == null)
            {
                throw new BadHandleException("RDMA metadata of active rank " + r + " is null");
            }
            if (m.numRanks() != numRanks || m.qpsPerRank() != qpsPerRank)
            {
                throw new BadHandleException("rank " + r + " has " + m.numRanks() + " ranks x " + m.qpsPerRank()
                    + " QPs, this rank " + numRanks + " x " + qpsPerRank);
            }
            if (m.backend() != mine.backend() || m.isRoce() != mine.isRoce())
            {
                throw new BadHandleException("rank " + r + " uses " + m + ", this rank " + mine
                    + " (every rank needs the same backend)");
            }
            where[r] = m.endpoint();
            for (int o = 0; o < r; o++)
            {
                // Each software NIC listens on its own port: two ranks at one endpoint are one rank twice.
                if (m.backend() == RdmaTransport.BACKEND_SOFT && where[r].equals(where[o]))
                {
                    throw new BadHandleException("ranks " + o + " and " + r + " name the same software NIC "
                        + where[r] + " (a duplicated or misordered metadata list)");
                }
            }
            addrs[r] = m.raddr();
            keys[r] = m.rkey();
            lids[r] = m.lid();
            prefixes[r] = m.subnetPrefix();
            ifids[r] = m.interfaceId();
            System.arraycopy(m.qpns(), 0, qpns, r * total, total);
            final byte[] key = m.authKey();
            if (m.backend() == RdmaTransport.BACKEND_SOFT && key.length != RdmaMetadata.KEY_BYTES)
            {
                throw new BadHandleException("rank " + r + "'s metadata has no NIC key: its NIC would refuse the"
                    + " connection (fix: use the metadata that rank's localMetadata() made)");
            }
            System.arraycopy(key, 0, nicKeys, r * RdmaMetadata.KEY_BYTES, key.length);
        }
    }

    /**
     * The list's own entry must be this rank's current metadata: a stale one (from before
     * {@link RdmaTransport#recreateQueuePairs}) or another rank's (a misordered list) would connect
     * the peers' QPs to QPs this rank does not have.
     */
    static void checkOwn(final int localRank, final RdmaMetadata given, final RdmaMetadata own)
    {
        if (!Arrays.equals(given.qpns(), own.qpns()) || given.lid() != own.lid()
            || given.interfaceId() != own.interfaceId() || given.subnetPrefix() != own.subnetPrefix()
            || given.raddr() != own.raddr() || given.rkey() != own.rkey()
            || !Arrays.equals(given.authKey(), own.authKey()))
        {
            throw new BadHandleException("metadata entry " + localRank + " is not this rank's current metadata "
                + own + " but " + given + " (a misordered list, or metadata from before recreateQueuePairs)");
        }
    }
}
