package io.github.te4j;

import io.github.te4j.internal.NativeRdmaTransport;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * What a rank tells the others so that they can connect their RDMA queue pairs to it and write
 * into its registered buffer: backend, address (GID/LID), QP numbers, remote address and key, and
 * the software NIC's key. A read-only view over opaque, versioned bytes that the native library
 * encodes and decodes (never Java serialisation): the layout is defined once, in
 * {@code src/main/cpp/rdma/metadata_codec.h}; the accessors read the fields that the
 * native decoder returns. The NIC key (software NIC) is what a connecting rank must prove to that
 * rank's NIC: it travels only through the job's handle exchange, so a stranger who can reach the
 * NIC's port cannot connect to it even when it knows every other field.
 * QP i serves (destination rank i / qpsPerRank, channel i % qpsPerRank). {@link #fromBytes(byte[])}
 * rejects anything else with a {@link BadHandleException} naming the field, including values no
 * rank sends (QP number 0 or over 24 bits, remote key 0, nothing registered, a software NIC
 * address that is not a unicast IPv4 address and TCP port).
 *
 * @since 0.1
 */
public final class RdmaMetadata
{
    /**
     * "TE4M": the first four bytes.
     *
     * @since 0.1
     */
    public static final int MAGIC = 0x5445344d;
    /**
     * The version the bytes carry after the magic.
     *
     * @since 0.1
     */
    public static final int VERSION = 2;
    /**
     * Length of a software NIC's key.
     *
     * @since 0.1
     */
    public static final int KEY_BYTES = 32;
    /** Bytes before the QP numbers (the native layout's header). */
    static final int HEADER_BYTES = 68;
    static final int MAX_QPNS = 64 * 1024;

    // Values of RdmaTransport::describeMetadata (te4j/rdma_api.h), before the QP numbers.
    private static final int BACKEND = 0;
    private static final int ROCE = 1;
    private static final int NUM_RANKS = 2;
    private static final int QPS_PER_RANK = 3;
    private static final int GID_INDEX = 4;
    private static final int LID = 5;
    private static final int RADDR = 6;
    private static final int RKEY = 7;
    private static final int REGISTERED = 8;
    private static final int PREFIX = 9;
    private static final int IFID = 10;
    private static final int KEY_LENGTH = 11;
    private static final int VALUES = 12;
    private static final int WHY_BYTES = 512;

    private final byte[] bytes;
    private final long[] values;
    private final byte[] authKey;

    private RdmaMetadata(final byte[] bytes, final long[] values, final byte[] authKey)
    {
        this.bytes = bytes;
        this.values = values;
        this.authKey = authKey;
    }

    RdmaMetadata(final int backend, final boolean roce, final int numRanks, final int qpsPerRank, final int gidIndex,
        final int lid, final long raddr, final int rkey, final long registeredBytes, final long subnetPrefix,
        final long interfaceId, final int[] qpns)
    {
        this(backend, roce, numRanks, qpsPerRank, gidIndex, lid, raddr, rkey, registeredBytes, subnetPrefix,
            interfaceId, qpns, new byte[0]);
    }

    /** Metadata built by hand (tools, tests): the native encoder's bytes of these fields, then their view. */
    RdmaMetadata(final int backend, final boolean roce, final int numRanks, final int qpsPerRank, final int gidIndex,
        final int lid, final long raddr, final int rkey, final long registeredBytes, final long subnetPrefix,
        final long interfaceId, final int[] qpns, final byte[] authKey)
    {
        this(encode(new long[] {backend, roce ? 1 : 0, numRanks, qpsPerRank, gidIndex, lid, raddr, rkey & 0xffffffffL,
            registeredBytes, subnetPrefix, interfaceId, authKey.length}, qpns, authKey));
    }

    private RdmaMetadata(final RdmaMetadata decoded)
    {
        this(decoded.bytes, decoded.values, decoded.authKey);
    }

    private static RdmaMetadata encode(final long[] header, final int[] qpns, final byte[] key)
    {
        Errors.checkArgument(qpns.length <= MAX_QPNS && key.length <= KEY_BYTES, "at most " + MAX_QPNS
            + " QP numbers and a key of " + KEY_BYTES + " bytes");
        final long[] v = Arrays.copyOf(header, VALUES + qpns.length);
        for (int i = 0; i < qpns.length; i++)
        {
            v[VALUES + i] = qpns[i] & 0xffffffffL;
        }
        final byte[] out = new byte[HEADER_BYTES + 4 * qpns.length + 8 + key.length];
        final int n = NativeRdmaTransport.encodeMetadataValues(v, v.length, key, key.length, out, out.length);
        if (n != out.length)
        {
            throw new Te4jException(Te4jException.Code.ILLEGAL_STATE, "encodeMetadataValues returned " + n
                + " for " + out.length + " bytes");
        }
        return fromBytes(out);
    }

    /**
     * A view of bytes from {@link #toBytes()} (another rank's {@link RdmaTransport#localMetadata()}),
     * decoded and validated by the native decoder; throws {@link BadHandleException} naming what is wrong.
     *
     * @param bytes the encoded metadata (copied)
     * @return the view
     * @throws BadHandleException when {@code bytes} is null, damaged, of another version, or holds a value no
     *     rank sends
     * @since 0.1
     */
    public static RdmaMetadata fromBytes(final byte[] bytes)
    {
        if (bytes == null)
        {
            throw new BadHandleException("RDMA metadata is null");
        }
        final byte[] own = bytes.clone();
        final long[] v = new long[VALUES + MAX_QPNS];
        final byte[] key = new byte[KEY_BYTES];
        final byte[] why = new byte[WHY_BYTES];
        final int n = NativeRdmaTransport.describeMetadata(own, own.length, v, v.length, key, key.length, why,
            why.length);
        if (n < VALUES)
        {
            throw new BadHandleException(text(why));
        }
        return new RdmaMetadata(own, Arrays.copyOf(v, n), Arrays.copyOf(key, (int)v[KEY_LENGTH]));
    }

    private static String text(final byte[] why)
    {
        int end = 0;
        while (end < why.length && why[end] != 0)
        {
            end++;
        }
        return end == 0 ? "RDMA metadata refused" : new String(why, 0, end, StandardCharsets.UTF_8);
    }

    /**
     * 1: software NIC, 2: mlx5 hardware (te4j/rdma_api.h {@code RdmaBackend}).
     *
     * @return the backend id
     * @since 0.1
     */
    public int backend()
    {
        return (int)values[BACKEND];
    }

    /**
     * Whether the address is a RoCE GID rather than an InfiniBand LID (mlx5).
     *
     * @return true for RoCE
     * @since 0.1
     */
    public boolean isRoce()
    {
        return values[ROCE] != 0;
    }

    /**
     * Ranks the sending transport was initialized for.
     *
     * @return the number of ranks
     * @since 0.1
     */
    public int numRanks()
    {
        return (int)values[NUM_RANKS];
    }

    /**
     * Queue pairs the sending transport has to each rank.
     *
     * @return queue pairs per rank
     * @since 0.1
     */
    public int qpsPerRank()
    {
        return (int)values[QPS_PER_RANK];
    }

    /**
     * The GID table index of the sending port (RoCE).
     *
     * @return the GID index
     * @since 0.1
     */
    public int gidIndex()
    {
        return (int)values[GID_INDEX];
    }

    /**
     * InfiniBand LID; the software NIC's TCP port.
     *
     * @return the LID, or the software NIC's port
     * @since 0.1
     */
    public int lid()
    {
        return (int)values[LID];
    }

    /**
     * Address of the registered buffer in the owner's address space.
     *
     * @return the remote address
     * @since 0.1
     */
    public long raddr()
    {
        return values[RADDR];
    }

    /**
     * Remote key of the registered buffer.
     *
     * @return the remote key
     * @since 0.1
     */
    public int rkey()
    {
        return (int)values[RKEY];
    }

    /**
     * Size of the registered buffer.
     *
     * @return the size in bytes
     * @since 0.1
     */
    public long registeredBytes()
    {
        return values[REGISTERED];
    }

    /**
     * The upper 64 bits of the GID (RoCE, InfiniBand).
     *
     * @return the subnet prefix
     * @since 0.1
     */
    public long subnetPrefix()
    {
        return values[PREFIX];
    }

    /**
     * The lower 64 bits of the GID; the software NIC's IPv4 address in its low 32 bits.
     *
     * @return the interface id
     * @since 0.1
     */
    public long interfaceId()
    {
        return values[IFID];
    }

    /**
     * QP numbers, numRanks x qpsPerRank.
     *
     * @return a new array of the QP numbers; QP i serves rank i / qpsPerRank, channel i % qpsPerRank
     * @since 0.1
     */
    public int[] qpns()
    {
        final int[] q = new int[values.length - VALUES];
        for (int i = 0; i < q.length; i++)
        {
            q[i] = (int)values[VALUES + i];
        }
        return q;
    }

    int qpn(final int index)
    {
        return (int)values[VALUES + index];
    }

    /** The NIC's key ({@link #KEY_BYTES}; software NIC), or an empty array. */
    byte[] authKey()
    {
        return authKey.clone();
    }

    /**
     * The bytes this view reads (a copy).
     *
     * @return a new array with the encoded bytes
     * @since 0.1
     */
    public byte[] toBytes()
    {
        return bytes.clone();
    }

    /** Where this rank's NIC is reached, for messages: "a.b.c.d:port" (software NIC), "lid N" or a GID. */
    String endpoint()
    {
        if (backend() == RdmaTransport.BACKEND_SOFT)
        {
            final int ip = (int)interfaceId();
            return (ip >>> 24) + "." + (ip >>> 16 & 0xff) + "." + (ip >>> 8 & 0xff) + "." + (ip & 0xff) + ":" + lid();
        }
        return isRoce() ? String.format("GID %016x:%016x", subnetPrefix(), interfaceId()) : "lid " + lid();
    }

    @Override
    public String toString()
    {
        return "RdmaMetadata[" + (backend() == RdmaTransport.BACKEND_SOFT ? "soft" : "mlx5") + " " + numRanks() + "x"
            + qpsPerRank() + " QPs, lid " + lid() + ", rkey 0x" + Integer.toHexString(rkey()) + ", "
            + registeredBytes() + " B]";
    }
}
