package io.github.te4j.check;

import io.github.te4j.DeviceBuffer;

/**
 * Random test data that any rank can regenerate from (seed, position) without sending it:
 * byte i of a stream is taken from a 64-bit mix of (seed, i / 8). Chunks can be made anywhere.
 */
public final class Patterns
{
    /** The poison written into destinations before a transfer. */
    public static final byte POISON = (byte)0xA5;

    private Patterns()
    {
    }

    /** SplitMix64 finaliser: good bit mixing, stateless. */
    public static long mix(final long z)
    {
        final long a = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        final long b = (a ^ (a >>> 27)) * 0x94d049bb133111ebL;
        return b ^ (b >>> 31);
    }

    /** Fills {@code dst[0..len)} with stream {@code seed}'s bytes starting at stream position {@code position}. */
    public static void fill(final byte[] dst, final int len, final long seed, final long position)
    {
        final long k = seed * 0x9E3779B97F4A7C15L;
        long word = mix(k + (position >>> 3));
        for (int i = 0; i < len; i++)
        {
            final long p = position + i;
            if ((p & 7) == 0)
            {
                word = mix(k + (p >>> 3));
            }
            dst[i] = (byte)(word >>> ((p & 7) * 8));
        }
    }

    /** Seed of the data rank {@code src} sends to rank {@code dst} in round {@code round}. */
    public static long seed(final long session, final int src, final int dst, final long round)
    {
        return mix(session ^ mix(((long)src << 40) ^ ((long)dst << 20) ^ round));
    }

    /** Writes {@code len} bytes of stream {@code seed} into {@code buf} at {@code offset}, in chunks. */
    public static void write(final DeviceBuffer buf, final long offset, final long len, final long seed)
    {
        final int chunk = (int)Math.min(len, 8 << 20);
        final byte[] b = new byte[Math.max(chunk, 1)];
        for (long done = 0; done < len; done += chunk)
        {
            final int n = (int)Math.min(chunk, len - done);
            fill(b, n, seed, done);
            buf.write(offset + done, b, 0, n);
        }
    }

    /**
     * Checks {@code len} bytes of {@code buf} at {@code offset} against stream {@code seed};
     * returns null or a description of the first mismatch.
     */
    public static String verify(final DeviceBuffer buf, final long offset, final long len, final long seed)
    {
        final int chunk = (int)Math.min(len, 8 << 20);
        final byte[] want = new byte[Math.max(chunk, 1)];
        final byte[] got = new byte[Math.max(chunk, 1)];
        for (long done = 0; done < len; done += chunk)
        {
            final int n = (int)Math.min(chunk, len - done);
            fill(want, n, seed, done);
            buf.read(offset + done, got, 0, n);
            for (int i = 0; i < n; i++)
            {
                if (want[i] != got[i])
                {
                    return "byte " + (done + i) + " of " + len + ": expected " + (want[i] & 0xff) + " got "
                        + (got[i] & 0xff) + (got[i] == POISON ? " (poison: never written)" : "");
                }
            }
        }
        return null;
    }

    /** Checks that {@code len} bytes at {@code offset} still hold the poison. */
    public static String verifyPoison(final DeviceBuffer buf, final long offset, final int len)
    {
        final byte[] got = buf.read(offset, len);
        for (int i = 0; i < len; i++)
        {
            if (got[i] != POISON)
            {
                return "byte " + (offset + i) + " past the transfer was overwritten: " + (got[i] & 0xff);
            }
        }
        return null;
    }
}
