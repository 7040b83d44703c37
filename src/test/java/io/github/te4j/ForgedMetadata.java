package io.github.te4j;

import io.github.te4j.FuzzVerdict.Expect;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.Random;

/**
 * Damaged and forged RDMA metadata made from a real rank's encoding ({@link RdmaMetadata#toBytes}):
 * bit flips, truncation, extension, one field set to an adversarial value, and QP lists of the
 * wrong length, each with or without the CRC fixed afterwards. Every forgery says what a correct
 * library must do with it when it is decoded and then connected to: refuse it (values no rank
 * sends, or a broken checksum or length), either (plausible values: the NIC connects and the
 * peer's NIC refuses the traffic later), or accept it (the bytes are the original ones).
 */
final class ForgedMetadata
{
    /** Offsets of the encoding (RdmaMetadata's class comment). */
    static final int VERSION = 4, BACKEND = 6, FLAGS = 7, NUM_RANKS = 8, QPS = 12, GID_INDEX = 16, LID = 20,
        RADDR = 24, RKEY = 32, RESERVED = 36, REGISTERED = 40, PREFIX = 48, IFID = 56, COUNT = 64, QPNS = 68;

    record Forgery(byte[] bytes, String what, Expect expect)
    {
    }

    private ForgedMetadata()
    {
    }

    /**
     * One forgery of {@code good}. {@code otherPort} is the TCP port of another rank's software
     * NIC (a lid that makes two ranks one endpoint).
     */
    static Forgery forge(final Random rnd, final byte[] good, final int otherPort)
    {
        final byte[] b = good.clone();
        switch (rnd.nextInt(8))
        {
            case 0:
            {
                final int bit = rnd.nextInt(b.length * 8);
                b[bit / 8] ^= (byte)(1 << bit % 8);
                // CRC-32 detects every single-bit error.
                return new Forgery(b, "bit " + bit + " flipped", Expect.FAIL);
            }
            case 1:
            {
                final int len = rnd.nextInt(good.length);
                return new Forgery(Arrays.copyOf(good, len), "truncated to " + len + " B", Expect.FAIL);
            }
            case 2:
            {
                final byte[] longer = Arrays.copyOf(good, good.length + 1 + rnd.nextInt(64));
                for (int i = good.length; i < longer.length; i++)
                {
                    longer[i] = (byte)rnd.nextInt();
                }
                return new Forgery(rnd.nextBoolean() ? ForgedHandles.withCrc(longer) : longer,
                    "extended to " + longer.length + " B", Expect.FAIL);
            }
            case 3:
                return qpnList(rnd, good);
            case 7:
                return new Forgery(b, "intact", Expect.SUCCEED);
            default:
                return field(rnd, good, b, otherPort);
        }
    }

    /** One field set to an edge value; the CRC fixed three times in four. */
    private static Forgery field(final Random rnd, final byte[] good, final byte[] b, final int otherPort)
    {
        final ByteBuffer bb = ByteBuffer.wrap(b).order(ByteOrder.BIG_ENDIAN);
        final String what;
        Expect e = Expect.FAIL;
        switch (rnd.nextInt(16))
        {
            case 0: what = set16(bb, VERSION, pick(rnd, 0, 1, 3, 0xffff), "version"); break;
            case 1: what = set8(bb, BACKEND, pick(rnd, 0, 2, 3, 0xff), "backend"); break;
            case 2: what = set8(bb, FLAGS, pick(rnd, 0, 2, 3, 0xff), "flags"); break;
            case 3: what = set32(bb, NUM_RANKS, pick(rnd, 0, 1, 3, 64, 65, -1), "numRanks"); break;
            case 4: what = set32(bb, QPS, pick(rnd, 0, 2, 3, 1 << 20, -1), "qpsPerRank"); break;
            case 5: what = set32(bb, GID_INDEX, pick(rnd, 1, -1, 256), "gidIndex"); break;
            case 6:
            {
                // Port 1 (nobody listens there) is plausible: the connect is refused (a documented error).
                final boolean plausible = rnd.nextInt(3) == 0;
                what = set32(bb, LID, plausible ? 1 : pick(rnd, 0, 65536, -1, otherPort), "lid");
                e = plausible ? Expect.EITHER : Expect.FAIL;
                break;
            }
            case 7:
            {
                final boolean plausible = rnd.nextBoolean();
                final long raddr = bb.getLong(RADDR);
                what = set64(bb, RADDR, plausible ? raddr + 4096 * (1 + rnd.nextInt(16))
                    : pickLong(rnd, 0, -1, Long.MIN_VALUE, Long.MAX_VALUE), "raddr");
                e = plausible ? Expect.EITHER : Expect.FAIL;
                break;
            }
            case 8:
            {
                final boolean plausible = rnd.nextBoolean();
                what = set32(bb, RKEY, plausible ? bb.getInt(RKEY) ^ (1 << rnd.nextInt(32)) : 0, "rkey");
                e = plausible ? Expect.EITHER : Expect.FAIL;
                break;
            }
            case 9: what = set32(bb, RESERVED, pick(rnd, 1, -1, 0x100), "reserved"); break;
            case 10:
            {
                final boolean plausible = rnd.nextBoolean();
                what = set64(bb, REGISTERED, plausible ? 1 + rnd.nextInt(1 << 20)
                    : pickLong(rnd, 0, -1, Long.MAX_VALUE, Long.MIN_VALUE), "registered");
                e = plausible ? Expect.EITHER : Expect.FAIL;
                break;
            }
            case 11: what = set64(bb, PREFIX, pickLong(rnd, 1, -1, 0xfe80_0000_0000_0000L), "subnet prefix"); break;
            case 12:
            {
                // GIDs that are no unicast IPv4-mapped address, or 127.0.0.2 where no NIC listens.
                final boolean plausible = rnd.nextInt(3) == 0;
                what = set64(bb, IFID, plausible ? 0x0000_ffff_7f00_0002L : pickLong(rnd, 0, rnd.nextLong(),
                    0x0000_ffff_0000_0000L, 0x0000_ffff_ffff_ffffL, 0x0000_ffff_e000_0001L, 0x0000_fffe_7f00_0001L),
                    "GID interface id");
                e = plausible ? Expect.EITHER : Expect.FAIL;
                break;
            }
            case 13:
            {
                final int q = rnd.nextInt((b.length - QPNS - 4) / 4);
                final boolean plausible = rnd.nextBoolean();
                what = set32(bb, QPNS + 4 * q, plausible ? 1 + rnd.nextInt(0xfffffe) : pick(rnd, 0, 0x1000000, -1),
                    "qpn[" + q + "]");
                e = plausible ? Expect.EITHER : Expect.FAIL;
                break;
            }
            case 14: what = set32(bb, COUNT, pick(rnd, 0, 1, 3, -1, 1 << 20), "qpn count"); break;
            default: what = set32(bb, 0, rnd.nextInt(), "magic"); break;
        }
        final boolean crc = rnd.nextInt(4) != 0;
        if (crc)
        {
            ForgedHandles.withCrc(b);
        }
        if (Arrays.equals(b, good))
        {
            return new Forgery(b, what + " (unchanged)", Expect.SUCCEED);
        }
        return new Forgery(b, what + (crc ? ", CRC fixed" : ", CRC stale"), crc ? e : Expect.FAIL);
    }

    /** A QP list too short or too long, with the count matching the list or not; CRC fixed. */
    private static Forgery qpnList(final Random rnd, final byte[] good)
    {
        final int n = (good.length - QPNS - 4) / 4;
        final int m = rnd.nextBoolean() ? rnd.nextInt(n) : n + 1 + rnd.nextInt(8);
        final byte[] b = new byte[QPNS + 4 * m + 4];
        System.arraycopy(good, 0, b, 0, Math.min(good.length - 4, QPNS + 4 * m));
        final ByteBuffer bb = ByteBuffer.wrap(b).order(ByteOrder.BIG_ENDIAN);
        for (int i = n; i < m; i++)
        {
            bb.putInt(QPNS + 4 * i, 0x100 + i);
        }
        final boolean countFixed = rnd.nextBoolean();
        if (countFixed)
        {
            bb.putInt(COUNT, m);
        }
        return new Forgery(ForgedHandles.withCrc(b), m + " QP numbers for " + n + " QPs, count "
            + (countFixed ? "matching" : "stale"), Expect.FAIL);
    }

    private static int pick(final Random rnd, final int... values)
    {
        return values[rnd.nextInt(values.length)];
    }

    private static long pickLong(final Random rnd, final long... values)
    {
        return values[rnd.nextInt(values.length)];
    }

    private static String set8(final ByteBuffer b, final int at, final int v, final String name)
    {
        b.put(at, (byte)v);
        return name + "=" + v;
    }

    private static String set16(final ByteBuffer b, final int at, final int v, final String name)
    {
        b.putShort(at, (short)v);
        return name + "=" + v;
    }

    private static String set32(final ByteBuffer b, final int at, final int v, final String name)
    {
        b.putInt(at, v);
        return name + "=" + v;
    }

    private static String set64(final ByteBuffer b, final int at, final long v, final String name)
    {
        b.putLong(at, v);
        return name + "=0x" + Long.toHexString(v);
    }
}
