package io.github.te4j;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.zip.CRC32;

/**
 * What a rank tells the others so that they can connect their RDMA queue pairs to it and write
 * into its registered buffer: backend, address (GID/LID), QP numbers, remote address and key.
 * Travels between ranks in an explicit, versioned encoding (never Java serialisation):
 *
 * <pre>
 *  0      magic "TE4M" (u32)          4  version=2 (u16)   6 backend (u8)   7 flags (u8, bit 0 RoCE)
 *  8      numRanks (u32)             12  qpsPerRank (u32)
 *  16     gidIndex (u32)             20  lid (u32)
 *  24     raddr (u64)                32  rkey (u32)       36 reserved (u32, 0)
 *  40     registered bytes (u64)     48  subnet prefix (u64)   56 interface id (u64)
 *  64     qpn count n (u32)          68  n x qpn (u32)
 *  68+4n  NIC key length k (u32, 0 or 32)   72+4n  k bytes: the key
 *  72+4n+k  CRC-32 of all bytes before (u32)
 * </pre>
 * The NIC key (software NIC) is what a connecting rank must prove to that rank's NIC: it
 * travels only through the job's handle exchange, so a stranger who can reach the NIC's port
 * cannot connect to it even when it knows every other field.
 * All fields are big-endian. QP i serves (destination rank i / qpsPerRank, channel
 * i % qpsPerRank). {@link #fromBytes(byte[])} rejects anything else with a
 * {@link BadHandleException} naming the field, including values no rank sends (QP number 0 or
 * over 24 bits, remote key 0, nothing registered, a software NIC address that is not a unicast
 * IPv4 address and TCP port).
 */
public final class RdmaMetadata
{
    /** "TE4M". */
    public static final int MAGIC = 0x5445344d;
    public static final int VERSION = 2;
    /** Length of a software NIC's key. */
    public static final int KEY_BYTES = 32;
    static final int HEADER_BYTES = 68;
    static final int MAX_QPNS = 64 * 1024;
    /** QP numbers are 24 bits; 0 is never a QP. */
    static final int MAX_QPN = 0xffffff;

    // Layout of te4j::RdmaTransport::localMetadata (te4j/rdma_api.h).
    private static final long NATIVE_MAGIC = 0x5445344eL;
    private static final long NATIVE_VERSION = 1;
    private static final int NATIVE_HEADER = 12;

    private final int backend;
    private final boolean roce;
    private final int numRanks;
    private final int qpsPerRank;
    private final int gidIndex;
    private final int lid;
    private final long raddr;
    private final int rkey;
    private final long registeredBytes;
    private final long subnetPrefix;
    private final long interfaceId;
    private final int[] qpns;
    private final byte[] authKey;

    RdmaMetadata(final int backend, final boolean roce, final int numRanks, final int qpsPerRank, final int gidIndex,
        final int lid, final long raddr, final int rkey, final long registeredBytes, final long subnetPrefix,
        final long interfaceId, final int[] qpns)
    {
        this(backend, roce, numRanks, qpsPerRank, gidIndex, lid, raddr, rkey, registeredBytes, subnetPrefix,
            interfaceId, qpns, new byte[0]);
    }

    RdmaMetadata(final int backend, final boolean roce, final int numRanks, final int qpsPerRank, final int gidIndex,
        final int lid, final long raddr, final int rkey, final long registeredBytes, final long subnetPrefix,
        final long interfaceId, final int[] qpns, final byte[] authKey)
    {
        this.authKey = authKey.clone();
        this.backend = backend;
        this.roce = roce;
        this.numRanks = numRanks;
        this.qpsPerRank = qpsPerRank;
        this.gidIndex = gidIndex;
        this.lid = lid;
        this.raddr = raddr;
        this.rkey = rkey;
        this.registeredBytes = registeredBytes;
        this.subnetPrefix = subnetPrefix;
        this.interfaceId = interfaceId;
        this.qpns = qpns.clone();
    }

    /** Parses the native int64 layout; throws {@link Te4jException} when it is not what te4j wrote. */
    static RdmaMetadata fromNative(final long[] v, final int count, final long registeredBytes, final byte[] key)
    {
        if (count < NATIVE_HEADER || v[0] != NATIVE_MAGIC || v[1] != NATIVE_VERSION)
        {
            throw new Te4jException(Te4jException.Code.ILLEGAL_STATE,
                "localMetadata: the native library wrote an unknown layout (magic/version/length)");
        }
        final int nr = (int)v[3];
        final int qpr = (int)v[4];
        if ((long)nr * qpr != count - NATIVE_HEADER)
        {
            throw new Te4jException(Te4jException.Code.ILLEGAL_STATE,
                "localMetadata: " + (count - NATIVE_HEADER) + " QP numbers for " + nr + " x " + qpr + " QPs");
        }
        final int[] q = new int[count - NATIVE_HEADER];
        for (int i = 0; i < q.length; i++)
        {
            q[i] = (int)v[NATIVE_HEADER + i];
        }
        return new RdmaMetadata((int)v[2], v[10] != 0, nr, qpr, (int)v[11], (int)v[9], v[5], (int)v[6],
            registeredBytes, v[7], v[8], q, key);
    }

    /** 1: software NIC, 2: mlx5 hardware (te4j/rdma_api.h {@code RdmaBackend}). */
    public int backend()
    {
        return backend;
    }

    public boolean isRoce()
    {
        return roce;
    }

    public int numRanks()
    {
        return numRanks;
    }

    public int qpsPerRank()
    {
        return qpsPerRank;
    }

    public int gidIndex()
    {
        return gidIndex;
    }

    /** InfiniBand LID; the software NIC's TCP port. */
    public int lid()
    {
        return lid;
    }

    /** Address of the registered buffer in the owner's address space. */
    public long raddr()
    {
        return raddr;
    }

    /** Remote key of the registered buffer. */
    public int rkey()
    {
        return rkey;
    }

    /** Size of the registered buffer. */
    public long registeredBytes()
    {
        return registeredBytes;
    }

    public long subnetPrefix()
    {
        return subnetPrefix;
    }

    public long interfaceId()
    {
        return interfaceId;
    }

    /** QP numbers, numRanks x qpsPerRank. */
    public int[] qpns()
    {
        return qpns.clone();
    }

    int qpn(final int index)
    {
        return qpns[index];
    }

    /** The NIC's key ({@link #KEY_BYTES}; software NIC), or an empty array. */
    byte[] authKey()
    {
        return authKey.clone();
    }

    /** The encoding described in the class comment. */
    public byte[] toBytes()
    {
        final ByteBuffer b = ByteBuffer.allocate(HEADER_BYTES + 4 * qpns.length + 4 + authKey.length + 4)
            .order(ByteOrder.BIG_ENDIAN);
        b.putInt(MAGIC).putShort((short)VERSION).put((byte)backend).put((byte)(roce ? 1 : 0));
        b.putInt(numRanks).putInt(qpsPerRank).putInt(gidIndex).putInt(lid);
        b.putLong(raddr).putInt(rkey).putInt(0);
        b.putLong(registeredBytes).putLong(subnetPrefix).putLong(interfaceId);
        b.putInt(qpns.length);
        for (final int q : qpns)
        {
            b.putInt(q);
        }
        b.putInt(authKey.length).put(authKey);
        final CRC32 crc = new CRC32();
        crc.update(b.array(), 0, b.position());
        b.putInt((int)crc.getValue());
        return b.array();
    }

    /** Decodes and validates bytes from {@link #toBytes()}; throws {@link BadHandleException}. */
    public static RdmaMetadata fromBytes(final byte[] bytes)
    {
        if (bytes == null)
        {
            throw new BadHandleException("RDMA metadata is null");
        }
        if (bytes.length < HEADER_BYTES + 4)
        {
            throw new BadHandleException("RDMA metadata truncated: " + bytes.length + " bytes, header needs "
                + (HEADER_BYTES + 4));
        }
        final ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.BIG_ENDIAN);
        final int magic = b.getInt();
        if (magic != MAGIC)
        {
            throw new BadHandleException("not te4j RDMA metadata: magic 0x" + Integer.toHexString(magic));
        }
        final int version = b.getShort() & 0xffff;
        if (version != VERSION)
        {
            throw new BadHandleException("RDMA metadata version " + version + ", this te4j reads " + VERSION
                + " (fix: run the same te4j version on every rank)");
        }
        final int backend = b.get() & 0xff;
        final int flags = b.get() & 0xff;
        if (backend != 1 && backend != 2)
        {
            throw new BadHandleException("RDMA metadata has unknown backend " + backend);
        }
        if ((flags & ~1) != 0)
        {
            throw new BadHandleException("RDMA metadata has unknown flags 0x" + Integer.toHexString(flags));
        }
        final int numRanks = b.getInt();
        final int qpsPerRank = b.getInt();
        final int gidIndex = b.getInt();
        final int lid = b.getInt();
        final long raddr = b.getLong();
        final int rkey = b.getInt();
        final int reserved = b.getInt();
        if (reserved != 0)
        {
            throw new BadHandleException("RDMA metadata reserved word is 0x" + Integer.toHexString(reserved)
                + ", not 0 (fix: run the same te4j version on every rank)");
        }
        final long registered = b.getLong();
        final long prefix = b.getLong();
        final long ifid = b.getLong();
        final int n = b.getInt();
        if (numRanks < 1 || numRanks > 64 || qpsPerRank < 1 || (long)numRanks * qpsPerRank != n || n > MAX_QPNS)
        {
            throw new BadHandleException("RDMA metadata: " + n + " QP numbers for " + numRanks + " ranks x "
                + qpsPerRank + " QPs per rank");
        }
        final long keyAt = HEADER_BYTES + 4L * n;
        if (bytes.length < keyAt + 8)
        {
            throw new BadHandleException("RDMA metadata length mismatch: " + bytes.length + " bytes for " + n + " QPs");
        }
        final int keyLength = ByteBuffer.wrap(bytes, (int)keyAt, 4).order(ByteOrder.BIG_ENDIAN).getInt();
        if (keyLength != 0 && keyLength != KEY_BYTES)
        {
            throw new BadHandleException("RDMA metadata NIC key of " + keyLength + " bytes, not 0 or " + KEY_BYTES);
        }
        if (bytes.length != keyAt + 4 + keyLength + 4)
        {
            throw new BadHandleException("RDMA metadata length mismatch: " + bytes.length + " bytes for " + n
                + " QPs and a key of " + keyLength + " bytes");
        }
        if (registered < 0)
        {
            throw new BadHandleException("RDMA metadata registered size " + registered + " is negative");
        }
        final CRC32 crc = new CRC32();
        crc.update(bytes, 0, bytes.length - 4);
        final int stored = ByteBuffer.wrap(bytes, bytes.length - 4, 4).order(ByteOrder.BIG_ENDIAN).getInt();
        if (stored != (int)crc.getValue())
        {
            throw new BadHandleException("RDMA metadata checksum mismatch (corrupted in transit)");
        }
        final int[] q = new int[n];
        for (int i = 0; i < n; i++)
        {
            q[i] = b.getInt();
            if (q[i] <= 0 || q[i] > MAX_QPN)
            {
                throw new BadHandleException("RDMA metadata QP number " + i + " is 0x" + Integer.toHexString(q[i])
                    + ", not in [1, 0xffffff]");
            }
        }
        b.getInt();
        final byte[] key = new byte[keyLength];
        b.get(key);
        checkValues(backend, (flags & 1) != 0, gidIndex, lid, raddr, rkey, registered, prefix, ifid);
        return new RdmaMetadata(backend, (flags & 1) != 0, numRanks, qpsPerRank, gidIndex, lid, raddr, rkey,
            registered, prefix, ifid, q, key);
    }

    /**
     * What a well-formed encoding can still get wrong (a forged or damaged field under a valid
     * checksum): values no te4j rank ever sends are refused here, before native code sees them.
     */
    private static void checkValues(final int backend, final boolean roce, final int gidIndex, final int lid,
        final long raddr, final int rkey, final long registered, final long prefix, final long ifid)
    {
        if (registered == 0)
        {
            throw new BadHandleException("RDMA metadata registers 0 bytes (every rank registers its buffer first)");
        }
        if (raddr <= 0 || raddr + registered < 0)
        {
            throw new BadHandleException("RDMA metadata remote address 0x" + Long.toHexString(raddr) + " + "
                + registered + " B is not a user-space range");
        }
        if (rkey == 0)
        {
            throw new BadHandleException("RDMA metadata remote key is 0 (no region has key 0)");
        }
        if (lid < 0 || lid > 0xffff || gidIndex < 0 || gidIndex > 255)
        {
            throw new BadHandleException("RDMA metadata lid " + lid + " / GID index " + gidIndex
                + " outside [0, 65535] / [0, 255]");
        }
        if (backend == RdmaTransport.BACKEND_SOFT)
        {
            // The software NIC's address: GID ::ffff:<unicast IPv4> of its listener, lid its TCP port.
            final int ip = (int)ifid;
            final int first = ip >>> 24;
            if (!roce || prefix != 0 || (ifid >>> 32) != 0xffff || first == 0 || first >= 224 || lid == 0
                || gidIndex != 0)
            {
                throw new BadHandleException("RDMA metadata of a software NIC must name a unicast IPv4 address"
                    + " and a TCP port (GID ::ffff:a.b.c.d, lid = port, GID index 0); got GID " + gid(prefix, ifid)
                    + ", lid " + lid + ", GID index " + gidIndex);
            }
        }
    }

    private static String gid(final long prefix, final long ifid)
    {
        return String.format("%016x:%016x", prefix, ifid);
    }

    /** Where this rank's NIC is reached, for messages: "a.b.c.d:port" (software NIC), "lid N" or a GID. */
    String endpoint()
    {
        if (backend == RdmaTransport.BACKEND_SOFT)
        {
            final int ip = (int)interfaceId;
            return (ip >>> 24) + "." + (ip >>> 16 & 0xff) + "." + (ip >>> 8 & 0xff) + "." + (ip & 0xff) + ":" + lid;
        }
        return roce ? "GID " + gid(subnetPrefix, interfaceId) : "lid " + lid;
    }

    @Override
    public String toString()
    {
        return "RdmaMetadata[" + (backend == 1 ? "soft" : "mlx5") + " " + numRanks + "x" + qpsPerRank + " QPs, lid "
            + lid + ", rkey 0x" + Integer.toHexString(rkey) + ", " + registeredBytes + " B]";
    }
}
