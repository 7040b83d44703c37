package io.github.te4j.etcd;

import io.github.te4j.rendezvous.RendezvousException;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * The values te4j stores in etcd, and their checks. Integers are big-endian; every value starts
 * with a magic and a version, and a reader refuses a value whose fields do not match its key and
 * its own job before using any of it:
 * <pre>
 *   member  ranks/&lt;r&gt;          "TE4P" ver=1 state(0 live,1 closed) 0 | rank | worldSize | generation(8) | pid(8) | hostLen(2) host
 *   entry   op/&lt;seq&gt;/&lt;r&gt;      "TE4E" ver=1 kind(1 gather,2 barrier) 0 | rank | seq | worldSize | generation(8) | length | blob
 *   segment segments/&lt;name&gt;   "TE4G" ver=1 0 0 | length | descriptor
 * </pre>
 * Each magic is te4j's only use of those four bytes (RDMA metadata is "TE4M", handles "TE4H",
 * segment descriptors "TE4S", rendezvous frames "TE4R"), so a value read under the wrong key or
 * handed to the wrong decoder is refused by its first word.
 */
final class EtcdRecords
{
    static final int MEMBER_MAGIC = 0x54453450;
    static final int ENTRY_MAGIC = 0x54453445;
    static final int SEGMENT_MAGIC = 0x54453447;
    static final short VERSION = 1;
    static final byte LIVE = 0;
    static final byte CLOSED = 1;
    static final byte GATHER = 1;
    static final byte BARRIER = 2;
    static final int ENTRY_HEADER = 32;
    static final int SEGMENT_HEADER = 12;
    private static final int MAX_HOST = 255;

    private EtcdRecords()
    {
    }

    /** A rank's membership record. */
    record Member(byte state, int rank, int worldSize, long generation, long pid, String host)
    {
        String who()
        {
            return "pid " + pid + " on " + host;
        }
    }

    static byte[] member(final Member m)
    {
        final byte[] host = m.host().getBytes(StandardCharsets.UTF_8);
        final int hostLen = Math.min(host.length, MAX_HOST);
        final ByteBuffer b = ByteBuffer.allocate(34 + hostLen);
        b.putInt(MEMBER_MAGIC).putShort(VERSION).put(m.state()).put((byte) 0);
        b.putInt(m.rank()).putInt(m.worldSize()).putLong(m.generation()).putLong(m.pid());
        b.putShort((short) hostLen).put(host, 0, hostLen);
        return b.array();
    }

    static Member member(final byte[] v, final int keyRank, final String where)
    {
        try
        {
            if (v.length > 34 + MAX_HOST)
            {
                throw bad(where, "member record of " + v.length + " bytes (at most " + (34 + MAX_HOST) + ")");
            }
            final ByteBuffer b = ByteBuffer.wrap(v);
            header(b, MEMBER_MAGIC, where);
            final byte state = b.get();
            if (state != LIVE && state != CLOSED)
            {
                throw bad(where, "unknown member state " + state);
            }
            reserved(b.get(), where);
            final int rank = b.getInt();
            if (rank != keyRank)
            {
                throw bad(where, "record claims rank " + rank + " under the key of rank " + keyRank);
            }
            final int world = b.getInt();
            final long generation = b.getLong();
            final long pid = b.getLong();
            final int hostLen = b.getShort();
            if (hostLen < 0 || hostLen != b.remaining())
            {
                throw bad(where, "host length " + hostLen + " but " + b.remaining() + " bytes follow");
            }
            final byte[] host = new byte[hostLen];
            b.get(host);
            return new Member(state, rank, world, generation, pid, new String(host, StandardCharsets.UTF_8));
        }
        catch (final BufferUnderflowException e)
        {
            throw bad(where, "member record truncated (" + v.length + " bytes)");
        }
    }

    static byte[] entry(final byte kind, final int rank, final int seq, final int worldSize, final long generation,
        final byte[] blob)
    {
        final ByteBuffer b = ByteBuffer.allocate(ENTRY_HEADER + blob.length);
        b.putInt(ENTRY_MAGIC).putShort(VERSION).put(kind).put((byte) 0);
        b.putInt(rank).putInt(seq).putInt(worldSize).putLong(generation).putInt(blob.length).put(blob);
        return b.array();
    }

    /**
     * Checks an entry against what the reader expects and returns its blob.
     *
     * @param maxBlob the reader's blob limit
     */
    static byte[] entry(final byte[] v, final byte kind, final int rank, final int seq, final int worldSize,
        final long generation, final int maxBlob, final String where)
    {
        if (v.length < ENTRY_HEADER)
        {
            throw bad(where, "entry of " + v.length + " bytes is shorter than its " + ENTRY_HEADER + "-byte header");
        }
        if (v.length - ENTRY_HEADER > maxBlob)
        {
            throw bad(where, "entry of " + v.length + " bytes exceeds the blob limit of " + maxBlob + " bytes");
        }
        final ByteBuffer b = ByteBuffer.wrap(v);
        header(b, ENTRY_MAGIC, where);
        final byte k = b.get();
        if (k != kind)
        {
            throw bad(where, "entry of kind " + k + " where kind " + kind + " (" + (kind == GATHER ? "allGather" : "barrier")
                + ") was expected");
        }
        reserved(b.get(), where);
        final int r = b.getInt();
        final int s = b.getInt();
        final int w = b.getInt();
        final long g = b.getLong();
        final int length = b.getInt();
        if (r != rank)
        {
            throw bad(where, "entry claims rank " + r + " under the key of rank " + rank);
        }
        if (s != seq)
        {
            throw bad(where, "entry is for operation #" + s + " under the key of #" + seq);
        }
        if (w != worldSize)
        {
            throw bad(where, "world size disagrees: entry says " + w + ", this rank has " + worldSize);
        }
        if (g != generation)
        {
            throw bad(where, "generation disagrees: entry says " + g + ", this rank has " + generation);
        }
        if (length != b.remaining())
        {
            throw bad(where, "length field " + length + " but " + b.remaining() + " blob bytes");
        }
        final byte[] blob = new byte[length];
        b.get(blob);
        return blob;
    }

    static byte[] segment(final byte[] descriptor)
    {
        final ByteBuffer b = ByteBuffer.allocate(SEGMENT_HEADER + descriptor.length);
        b.putInt(SEGMENT_MAGIC).putShort(VERSION).put((byte) 0).put((byte) 0).putInt(descriptor.length).put(descriptor);
        return b.array();
    }

    static byte[] segment(final byte[] v, final int maxBytes, final String where)
    {
        if (v.length < SEGMENT_HEADER || v.length - SEGMENT_HEADER > maxBytes)
        {
            throw bad(where, "segment value of " + v.length + " bytes out of bounds (header " + SEGMENT_HEADER
                + ", descriptor limit " + maxBytes + ")");
        }
        final ByteBuffer b = ByteBuffer.wrap(v);
        header(b, SEGMENT_MAGIC, where);
        reserved(b.get(), where);
        reserved(b.get(), where);
        final int length = b.getInt();
        if (length != b.remaining())
        {
            throw bad(where, "length field " + length + " but " + b.remaining() + " descriptor bytes");
        }
        final byte[] d = new byte[length];
        b.get(d);
        return d;
    }

    private static void header(final ByteBuffer b, final int magic, final String where)
    {
        final int m = b.getInt();
        if (m != magic)
        {
            throw bad(where, String.format("bad magic 0x%08x (expected 0x%08x): not written by te4j", m, magic));
        }
        final short version = b.getShort();
        if (version != VERSION)
        {
            throw bad(where, "unsupported record version " + version + " (this side reads " + VERSION + ")");
        }
    }

    private static void reserved(final byte v, final String where)
    {
        if (v != 0)
        {
            throw bad(where, "reserved byte is " + (v & 0xff) + ", must be 0");
        }
    }

    private static RendezvousException bad(final String where, final String why)
    {
        return new RendezvousException(where, "refused: " + why);
    }
}
