package io.github.te4j.bench;

/**
 * Where things sit in each rank's symmetric window:
 * <pre>
 *   0      control words, one per 128-byte line: ping-pong signal, raw flag, handshake, rate signal
 *   4 KiB  source: the rank's pattern, written once (every message is a prefix of it)
 *   dst    destination: poisoned before each case, verified after it; then a poisoned guard
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
    /** Bytes after a message that must still hold the poison (no overrun). */
    public static final int GUARD = 64;

    private static final long PAGE = 4096;

    private final long maxBytes;
    private final long dst;
    private final long total;

    /** A layout for messages up to {@code maxBytes}. */
    public WindowLayout(final long maxBytes)
    {
        this.maxBytes = maxBytes;
        final long region = (maxBytes + GUARD + PAGE - 1) / PAGE * PAGE;
        this.dst = PAGE + region;
        this.total = dst + region;
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

    public long maxBytes()
    {
        return maxBytes;
    }

    /** Size of the window. */
    public long windowBytes()
    {
        return total;
    }
}
