package io.github.te4j.rendezvous;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * One frame of the rendezvous wire protocol, and its codec. The layout is documented on
 * {@link Rendezvous}; all integers are big-endian.
 */
record Frame(byte type, int rank, int seq, byte[] payload)
{

    /** "TE4R". */
    static final int MAGIC = 0x54453452;
    static final short VERSION = 1;
    static final int HEADER_BYTES = 20;

    static final byte HELLO = 1;
    static final byte CHALLENGE = 2;
    static final byte AUTH = 3;
    static final byte WELCOME = 4;
    static final byte ERROR = 5;
    static final byte GATHER = 6;
    static final byte BARRIER = 7;
    static final byte RESULT = 8;
    static final byte BYE = 9;

    Frame
    {
        payload = payload == null ? new byte[0] : payload;
    }

    static String typeName(final byte type)
    {
        switch (type)
        {
            case HELLO: return "HELLO";
            case CHALLENGE: return "CHALLENGE";
            case AUTH: return "AUTH";
            case WELCOME: return "WELCOME";
            case ERROR: return "ERROR";
            case GATHER: return "GATHER";
            case BARRIER: return "BARRIER";
            case RESULT: return "RESULT";
            case BYE: return "BYE";
            default: return "type " + (type & 0xff);
        }
    }

    /** The collective a GATHER or BARRIER frame belongs to, as errors name it. */
    static String opName(final byte type)
    {
        return type == Frame.BARRIER ? "barrier" : "allGather";
    }

    /** Writes the frame and flushes. */
    static void write(final DataOutputStream out, final Frame f) throws IOException
    {
        out.writeInt(MAGIC);
        out.writeShort(VERSION);
        out.writeByte(f.type);
        out.writeByte(0);
        out.writeInt(f.rank);
        out.writeInt(f.seq);
        out.writeInt(f.payload.length);
        out.write(f.payload);
        out.flush();
    }

    /**
     * Reads one frame.
     *
     * @param maxLength the largest payload accepted; a larger length field is rejected before any
     *                  allocation, so a peer cannot make us allocate at will
     * @param peer names the other side in exceptions
     * @return the frame, or {@code null} on a clean end of stream before the first header byte
     * @throws RendezvousException on a malformed or truncated frame
     * @throws IOException on a socket failure (including a read timeout)
     */
    static Frame read(final DataInputStream in, final int maxLength, final String peer) throws IOException
    {
        int first = in.read();
        if (first < 0)
        {
            return null;
        }
        byte[] header = new byte[HEADER_BYTES];
        header[0] = (byte) first;
        try
        {
            in.readFully(header, 1, HEADER_BYTES - 1);
        }
        catch (EOFException e)
        {
            throw new RendezvousException(peer, "truncated frame header (connection ended mid-frame)");
        }
        ByteBuffer h = ByteBuffer.wrap(header);
        int magic = h.getInt();
        if (magic != MAGIC)
        {
            throw new RendezvousException(peer, String.format(
                    "bad magic 0x%08x (expected 0x%08x): not a te4j rendezvous peer", magic, MAGIC));
        }
        short version = h.getShort();
        if (version != VERSION)
        {
            throw new RendezvousException(peer, "unsupported protocol version " + version
                    + " (this side speaks " + VERSION + ")");
        }
        byte type = h.get();
        if (type < HELLO || type > BYE)
        {
            throw new RendezvousException(peer, "unknown frame " + typeName(type));
        }
        byte flags = h.get();
        if (flags != 0)
        {
            throw new RendezvousException(peer, "reserved flags byte is " + (flags & 0xff) + ", must be 0");
        }
        int rank = h.getInt();
        int seq = h.getInt();
        int length = h.getInt();
        if (length < 0 || length > maxLength)
        {
            throw new RendezvousException(peer, "frame length " + (length & 0xffffffffL)
                    + " out of bounds (limit " + maxLength + " bytes) in " + typeName(type));
        }
        byte[] payload = new byte[length];
        try
        {
            in.readFully(payload);
        }
        catch (EOFException e)
        {
            throw new RendezvousException(peer, "truncated " + typeName(type) + " payload (expected "
                    + length + " bytes)");
        }
        return new Frame(type, rank, seq, payload);
    }
}
