package io.github.te4j;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.Random;
import java.util.zip.CRC32;

/**
 * Corrupted, truncated and forged IPC handles made from a real one. Byte-level mutations test the
 * native decoder of the wire bytes; blob-level forgeries (re-encoded with a valid CRC) reach the
 * field checks and the native importer, which must refuse anything that does not name exactly the
 * segment its owner exported.
 */
final class ForgedHandles
{
    /** Host-platform blob layout (handle_blob.h, host_p2p_transport.h). */
    static final int MAGIC = 0, VERSION = 1, PLATFORM = 2, PID = 3, SIZE_LO = 4, SIZE_HI = 5, HOST_ID = 6,
        FD = 10, TOKEN = 11, INTS = 15;

    private ForgedHandles()
    {
    }

    /** Wire bytes damaged at random: bit flips, truncation, extension, junk, fields with a fixed CRC. */
    static byte[] mutateBytes(final Random rnd, final byte[] good)
    {
        switch (rnd.nextInt(8))
        {
            case 0:
                return null;
            case 1:
                return new byte[rnd.nextInt(48)];
            case 2:
                return Arrays.copyOf(good, rnd.nextInt(good.length));
            case 3:
                return Arrays.copyOf(good, good.length + 1 + rnd.nextInt(64));
            case 4:
            {
                final byte[] junk = new byte[rnd.nextInt(200)];
                rnd.nextBytes(junk);
                return junk;
            }
            case 5:
            {
                final byte[] b = good.clone();
                b[rnd.nextInt(b.length)] ^= (byte)(1 << rnd.nextInt(8));
                return b;
            }
            case 6:
            {
                // A header word rewritten and the CRC recomputed: only the field checks can catch it.
                final byte[] b = good.clone();
                final ByteBuffer bb = ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
                switch (rnd.nextInt(5))
                {
                    case 0: bb.putInt(4 * VERSION, rnd.nextInt()); break;
                    case 1: bb.putInt(4 * PLATFORM, rnd.nextInt(3)); break;
                    case 2: bb.putLong(4 * SIZE_LO, pickSize(rnd)); break;
                    case 3: bb.putInt(4 * PID, rnd.nextInt(2) == 0 ? -1 : rnd.nextInt(4096)); break;
                    default: bb.put(4 * HOST_ID + rnd.nextInt(16), (byte)rnd.nextInt()); break;
                }
                return withCrc(b);
            }
            default:
                return good.clone();
        }
    }

    /** Rewrites the CRC trailer (little-endian, handle_blob.h) so that mutated bytes pass the checksum. */
    static byte[] withCrc(final byte[] b)
    {
        if (b.length < 4)
        {
            return b;
        }
        final CRC32 crc = new CRC32();
        crc.update(b, 0, b.length - 4);
        ByteBuffer.wrap(b, b.length - 4, 4).order(ByteOrder.LITTLE_ENDIAN).putInt((int)crc.getValue());
        return b;
    }

    /**
     * The wire bytes of a blob that differs from the real one in one field (or in length), with a
     * valid CRC: only the native field checks and the importer stand in the way.
     */
    static byte[] forgeBlob(final Random rnd, final IpcHandle real, final int[] otherFds)
    {
        final int[] blob = real.blob();
        int[] out = blob;
        switch (rnd.nextInt(10))
        {
            case 0: blob[MAGIC] ^= 1 << rnd.nextInt(32); break;
            case 1: blob[VERSION] = rnd.nextInt(4) == 0 ? 0 : rnd.nextInt(); break;
            case 2: blob[PLATFORM] = rnd.nextInt(3) == 0 ? 1 : rnd.nextInt(); break;
            case 3: blob[PID] = new int[] {0, -1, 1, 2, Integer.MAX_VALUE, rnd.nextInt(1 << 22)}[rnd.nextInt(6)];
                break;
            case 4:
            {
                // Size claimed bigger (or smaller): map past the end?
                final long claimedSize = pickSize(rnd);
                blob[SIZE_LO] = (int)claimedSize;
                blob[SIZE_HI] = (int)(claimedSize >>> 32);
                break;
            }
            case 5: blob[HOST_ID + rnd.nextInt(4)] ^= 1 << rnd.nextInt(32); break;
            case 6:
                // Another fd of the owner: stdin, a jar, another te4j segment, or none at all.
                blob[FD] = rnd.nextBoolean() && otherFds.length > 0 ? otherFds[rnd.nextInt(otherFds.length)]
                    : new int[] {-1, 0, 1, 2, 3, 1 << 20, Integer.MIN_VALUE}[rnd.nextInt(7)];
                break;
            case 7: blob[TOKEN + rnd.nextInt(4)] ^= 1 << rnd.nextInt(32); break;
            case 8: out = Arrays.copyOf(blob, rnd.nextBoolean() ? rnd.nextInt(INTS) + 1 : INTS + 1 + rnd.nextInt(8)); break;
            default:
            {
                for (int i = 0; i < blob.length; i++)
                {
                    blob[i] = rnd.nextInt();
                }
                break;
            }
        }
        if (out.length == 0)
        {
            out = new int[] {0};
        }
        return IpcHandle.encodeBlob(out);
    }

    /** Buffer sizes around the usual edges. */
    static long pickSize(final Random rnd)
    {
        final long[] sizes = {0, -1, 1, 4095, 4096, 4097, 1L << 20, 1L << 32, Long.MAX_VALUE, Long.MIN_VALUE};
        return rnd.nextInt(4) == 0 ? rnd.nextLong() : sizes[rnd.nextInt(sizes.length)];
    }
}
