package io.github.te4j.rendezvous;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

/**
 * The payload of a gather's RESULT frame: int32 count, then per rank int32 length and the bytes.
 * Rank 0 encodes it; the other ranks decode it and check every length before they copy.
 */
final class GatherResult
{
    private GatherResult()
    {
    }

    static byte[] encode(final byte[][] blobs)
    {
        long total = 4;
        for (byte[] b : blobs)
        {
            total += 4L + b.length;
        }
        final ByteBuffer buf = ByteBuffer.allocate((int) total);
        buf.putInt(blobs.length);
        for (byte[] b : blobs)
        {
            buf.putInt(b.length).put(b);
        }
        return buf.array();
    }

    static List<byte[]> decode(final byte[] payload, final int expectedCount, final String peer)
    {
        final ByteBuffer buf = ByteBuffer.wrap(payload);
        if (buf.remaining() < 4)
        {
            throw new RendezvousException(peer, "RESULT payload too short");
        }
        final int count = buf.getInt();
        if (count != expectedCount)
        {
            throw new RendezvousException(peer, "RESULT carries " + count + " blobs, expected " + expectedCount);
        }
        final byte[][] out = new byte[count][];
        for (int i = 0; i < count; i++)
        {
            if (buf.remaining() < 4)
            {
                throw new RendezvousException(peer, "RESULT truncated at blob " + i);
            }
            final int len = buf.getInt();
            if (len < 0 || len > buf.remaining())
            {
                throw new RendezvousException(peer, "RESULT blob " + i + " has bad length " + len);
            }
            out[i] = new byte[len];
            buf.get(out[i]);
        }
        if (buf.hasRemaining())
        {
            throw new RendezvousException(peer, "RESULT has " + buf.remaining() + " trailing bytes");
        }
        return Collections.unmodifiableList(Arrays.asList(out));
    }
}
