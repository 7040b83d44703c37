package io.github.te4j;

import io.github.te4j.internal.NativeP2pTransport;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * An exported buffer handle, as bytes that travel between ranks. A read-only view over opaque,
 * versioned bytes that the native library encodes and decodes (never Java serialisation): the
 * layout is defined once, in {@code src/main/cpp/p2p/handle_blob.h}; the accessors read
 * the fields that the native decoder returns. {@link #fromBytes(byte[])} rejects anything else
 * (length, magic, version, CRC-32, platform, pid, size) with a {@link BadHandleException} naming
 * the field.
 *
 * @since 0.1
 */
public final class IpcHandle
{
    /**
     * The first four bytes, "TE4J" (the native blob's magic word, little-endian).
     *
     * @since 0.1
     */
    public static final int MAGIC = 0x4a344554;
    /**
     * The version the bytes carry after the magic.
     *
     * @since 0.1
     */
    public static final int VERSION = 1;
    /** Bounds of any handle's length: the smallest blob header and the largest platform blob, with the CRC. */
    static final int MIN_BYTES = 44;
    static final int MAX_BYTES = 148;

    // Values of P2pTransport::describeHandle (te4j/api.h).
    private static final int PLATFORM = 0;
    private static final int SIZE = 1;
    private static final int PID = 2;
    private static final int FROM_THIS_HOST = 3;
    private static final int INTS = 4;
    private static final int VALUES = 5;
    private static final int MAX_WORDS = (MAX_BYTES - 4) / 4;
    private static final int WHY_BYTES = 512;

    private final byte[] bytes;
    private final long[] values;
    private final int[] words;

    private IpcHandle(final byte[] bytes, final long[] values, final int[] words)
    {
        this.bytes = bytes;
        this.values = values;
        this.words = words;
    }

    /**
     * A view of bytes from {@link #toBytes()} (another rank's {@link P2pTransport#exportHandle}),
     * decoded and validated by the native decoder; throws {@link BadHandleException} naming what is wrong.
     *
     * @param bytes the encoded handle (copied)
     * @return the view
     * @throws BadHandleException when {@code bytes} is null, truncated, oversize, damaged or of another
     *     version
     * @since 0.1
     */
    public static IpcHandle fromBytes(final byte[] bytes)
    {
        if (bytes == null)
        {
            throw new BadHandleException("IPC handle is null");
        }
        if (bytes.length < MIN_BYTES || bytes.length > MAX_BYTES)
        {
            throw new BadHandleException("IPC handle " + (bytes.length < MIN_BYTES ? "truncated" : "oversize")
                + ": field length is " + bytes.length + " bytes, a handle has " + MIN_BYTES + ".." + MAX_BYTES);
        }
        final byte[] own = bytes.clone();
        final long[] v = new long[VALUES];
        final int[] w = new int[MAX_WORDS];
        final byte[] why = new byte[WHY_BYTES];
        final int status = NativeP2pTransport.describeHandle(own, own.length, v, v.length, w, w.length, why,
            why.length);
        if (status != 0)
        {
            throw new BadHandleException(text(why));
        }
        return new IpcHandle(own, v, Arrays.copyOf(w, (int)v[INTS]));
    }

    /** Handle bytes of hand-made blob words (tools, tests that forge handles), then their view. */
    static IpcHandle ofBlob(final int[] blob)
    {
        return fromBytes(encodeBlob(blob));
    }

    /** The native encoding of any blob words, unchecked: what {@link #ofBlob} decodes. */
    static byte[] encodeBlob(final int[] blob)
    {
        Errors.checkArgument(blob != null && blob.length > 0 && blob.length <= MAX_WORDS,
            "blob must hold 1.." + MAX_WORDS + " words");
        final byte[] out = new byte[4 * blob.length + 4];
        final int n = NativeP2pTransport.encodeHandleWords(blob, blob.length, out, out.length);
        if (n != out.length)
        {
            throw new Te4jException(Te4jException.Code.ILLEGAL_STATE, "encodeHandleWords returned " + n
                + " for " + out.length + " bytes");
        }
        return out;
    }

    private static String text(final byte[] why)
    {
        int end = 0;
        while (end < why.length && why[end] != 0)
        {
            end++;
        }
        return end == 0 ? "IPC handle refused" : new String(why, 0, end, StandardCharsets.UTF_8);
    }

    /**
     * The platform whose memory the handle exports.
     *
     * @return {@link Platform#HOST} or {@link Platform#CUDA}
     * @since 0.1
     */
    public Platform platform()
    {
        return Platform.fromNativeId((int)values[PLATFORM]);
    }

    /**
     * Size of the exported buffer.
     *
     * @return the size in bytes
     * @since 0.1
     */
    public long bufferSize()
    {
        return values[SIZE];
    }

    /**
     * Whether the handle was made on this host and pid namespace (the native library's host identity).
     *
     * @return true when this host and pid namespace made it
     * @since 0.1
     */
    public boolean isFromThisHost()
    {
        return values[FROM_THIS_HOST] != 0;
    }

    /** Process id of the exporting process. */
    int ownerPid()
    {
        return (int)values[PID];
    }

    /** The native blob words the bytes carry (a copy). */
    int[] blob()
    {
        return words.clone();
    }

    /**
     * The bytes this view reads (a copy).
     *
     * @return a new array with the encoded handle
     * @since 0.1
     */
    public byte[] toBytes()
    {
        return bytes.clone();
    }

    @Override
    public String toString()
    {
        return "IpcHandle[" + platform() + " " + bufferSize() + " B, pid " + ownerPid()
            + (isFromThisHost() ? "" : ", foreign host") + "]";
    }
}
