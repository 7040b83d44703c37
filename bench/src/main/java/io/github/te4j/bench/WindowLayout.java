package io.github.te4j.bench;

/**
 * Where things sit in each rank's symmetric window:
 * <pre>
 *   0      control words, one per 128-byte line: ping-pong signal, raw flag, handshake, rate signal,
 *          all-to-all signal, stream ping-pong signal, all-to-all start line
 *   4 KiB  source: the rank's pattern, written once (every message is a prefix of it)
 *   dst    destination: poisoned before each case, verified after it; then a poisoned guard
 *   ll     the LL ping-pong's slot (8 KiB: 8 bytes per 4 of payload, up to LL_MAX_BYTES); zero
 *          at the start and never poisoned (its flags only grow)
 *   a2a    all-to-all (only when the run has such cases): N source blocks (block d goes to rank d),
 *          then N destination slots (slot s receives from rank s), each slot followed by a guard
 * </pre>
 */
public final class WindowLayout
{
    /** te4j ping-pong signal word. */
    public static final long PING_PONG_SIGNAL = 0;
    /** Raw flag word of the baseline ping-pong. */
    public static final long RAW_FLAG = 128;
    /** Handshake word before each timed ping-pong. */
    public static final long READY = 256;
    /** Signal word of the putWithSignal rate cases. */
    public static final long RATE_SIGNAL = 384;
    /** Signal word of the all-to-all: every other rank adds 1 per block it delivered here. */
    public static final long ALLTOALL_SIGNAL = 512;
    /** Signal word of the OpStream ping-pong on the host platform (its own: the native loop counts its word exactly). */
    public static final long STREAM_PING_PONG_SIGNAL = 640;
    /** The all-to-all's start line: before a timed te4j sample every rank adds 1 here on every other rank. */
    public static final long ALLTOALL_START = 768;
    /** Largest message of the LL ping-pong (its slot takes twice that). */
    public static final long LL_MAX_BYTES = 4096;
    /** Bytes after a message that must still hold the poison (no overrun). */
    public static final int GUARD = 64;

    private static final long PAGE = 4096;

    private final long maxBytes;
    private final long dst;
    private final long ll;
    private final int ranks;
    private final long blockStride;
    private final long a2aSrc;
    private final long a2aDst;
    private final long total;

    /** A layout for messages up to {@code maxBytes}, without all-to-all regions. */
    public WindowLayout(final long maxBytes)
    {
        this(maxBytes, 0, 0);
    }

    /**
     * A layout for pair messages up to {@code maxBytes} and, when {@code maxBlockBytes > 0},
     * all-to-all blocks up to {@code maxBlockBytes} among {@code ranks} ranks.
     */
    public WindowLayout(final long maxBytes, final int ranks, final long maxBlockBytes)
    {
        if (maxBlockBytes > 0 && ranks < 2)
        {
            throw new IllegalArgumentException("an all-to-all needs 2 or more ranks, got " + ranks);
        }
        this.maxBytes = maxBytes;
        final long region = pages(maxBytes + GUARD);
        this.dst = PAGE + region;
        this.ranks = maxBlockBytes > 0 ? ranks : 0;
        // Page-aligned blocks and slots: each slot's guard ends before the next slot starts.
        this.blockStride = maxBlockBytes > 0 ? pages(maxBlockBytes + GUARD) : 0;
        this.ll = dst + region;
        this.a2aSrc = ll + 2 * LL_MAX_BYTES;
        this.a2aDst = a2aSrc + this.ranks * blockStride;
        this.total = a2aDst + this.ranks * blockStride;
    }

    private static long pages(final long bytes)
    {
        return (bytes + PAGE - 1) / PAGE * PAGE;
    }

    /** Offset of the source region. */
    public long src()
    {
        return PAGE;
    }

    /** Offset of the destination region. */
    public long dst()
    {
        return dst;
    }

    /** Offset of the LL ping-pong's slot (8-byte aligned, 2 x LL_MAX_BYTES long). */
    public long llSlot()
    {
        return ll;
    }

    public long maxBytes()
    {
        return maxBytes;
    }

    /** Largest all-to-all block the window holds (0 without all-to-all regions). */
    public long maxBlockBytes()
    {
        return blockStride == 0 ? 0 : blockStride - GUARD;
    }

    /** Offset of the block this rank sends to rank {@code dstRank}. */
    public long allToAllBlock(final int dstRank)
    {
        return a2aSrc + checkRank(dstRank) * blockStride;
    }

    /** Offset of the slot that receives rank {@code srcRank}'s block (the same offset in every window). */
    public long allToAllSlot(final int srcRank)
    {
        return a2aDst + checkRank(srcRank) * blockStride;
    }

    private long checkRank(final int r)
    {
        if (r < 0 || r >= ranks)
        {
            throw new IllegalArgumentException("rank " + r + " outside the all-to-all regions of " + ranks + " ranks");
        }
        return r;
    }

    /** Size of the window. */
    public long windowBytes()
    {
        return total;
    }
}
