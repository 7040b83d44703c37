package io.github.te4j;

import java.time.Duration;
import java.util.List;

/**
 * The argument checks of {@link RdmaTransport}'s public methods, made in Java before any native
 * call so that a bad call throws {@link IllegalArgumentException} with the rule it broke.
 */
final class RdmaArguments
{
    private RdmaArguments()
    {
    }

    static void checkInitialize(final int numRanks, final int qpsPerRank, final int ringWqebbs)
    {
        Errors.checkArgument(numRanks >= 1 && numRanks <= 64, "numRanks=" + numRanks + " must be in [1, 64]");
        Errors.checkArgument(qpsPerRank >= 1 && qpsPerRank <= 1024, "qpsPerRank=" + qpsPerRank
            + " must be in [1, 1024]");
        Errors.checkArgument(ringWqebbs == 0 || (ringWqebbs >= RdmaTransport.MIN_RING
            && ringWqebbs <= RdmaTransport.MAX_RING && Integer.bitCount(ringWqebbs) == 1), "ringWqebbs=" + ringWqebbs
            + " must be 0 or a power of two in [" + RdmaTransport.MIN_RING + ", " + RdmaTransport.MAX_RING + "]");
        final int ring = ringWqebbs == 0 ? RdmaTransport.DEFAULT_RING : ringWqebbs;
        final long slots = (long)numRanks * qpsPerRank * ring;
        final long cap = RdmaTransport.MAX_RING_SLOTS;
        Errors.checkArgument(slots <= cap, numRanks + " ranks x " + qpsPerRank + " QPs x " + ring
            + " ring slots = " + slots + " send-ring slots, over the cap of " + cap + " (about " + (cap * 128 >> 20)
            + " MiB of NIC control memory; fix: fewer queue pairs per rank or a smaller ring, or raise"
            + " -Dte4j.rdma.maxRingSlots)");
    }

    static void checkMemoryRange(final long address, final long bytes)
    {
        Errors.checkArgument(address != 0, "address is null");
        Errors.checkArgument(bytes > 0, "bytes=" + bytes + " must be positive");
        Errors.checkArgument(address + bytes > address, "address + bytes overflows");
    }

    static void checkTimeout(final Duration timeout)
    {
        Errors.checkArgument(timeout != null && !timeout.isNegative() && !timeout.isZero(), "timeout must be positive");
    }

    static void checkPeerTimeout(final Duration timeout)
    {
        Errors.checkArgument(timeout != null && timeout.compareTo(Duration.ofSeconds(1)) >= 0
            && timeout.compareTo(Duration.ofDays(1)) <= 0, "peer timeout " + timeout + " must be in [1 s, 1 day]");
    }

    /** The shape of connectPeers' arguments: a rank, one metadata entry per rank, a mask with that rank. */
    static void checkPeerList(final int localRank, final List<?> all, final long activeRanksMask,
        final int numRanks)
    {
        Errors.checkRank(localRank, numRanks);
        Errors.checkArgument(all != null && all.size() == numRanks,
            "metadata must hold one entry per rank: " + (all == null ? "null" : all.size() + " entries") + " for "
                + numRanks + " ranks");
        Errors.checkArgument(numRanks == 64 || (activeRanksMask >>> numRanks) == 0,
            "activeRanksMask 0x" + Long.toHexString(activeRanksMask) + " has bits past " + numRanks + " ranks");
        Errors.checkArgument((activeRanksMask & (1L << localRank)) != 0,
            "activeRanksMask must include own rank " + localRank);
    }

    static void checkQpIndex(final int qpIndex, final int total)
    {
        Errors.checkArgument(qpIndex >= 0 && qpIndex < total, "qpIndex=" + qpIndex + " outside [0, " + total + ")");
    }
}
