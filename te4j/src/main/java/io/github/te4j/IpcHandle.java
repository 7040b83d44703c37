package io.github.te4j;

import io.github.te4j.internal.NativeP2pTransport;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.zip.CRC32;

/**
 * An exported buffer handle, as bytes that travel between ranks. The native int32 blob stays an
 * implementation detail inside an explicit, versioned encoding (never Java serialisation):
 *
 * <pre>
 *  0               4       6   7   8                              24
 *  +---------------+-------+---+---+------------------------------+
 *  | magic "TE4H"  | ver=1 |plt|flg| host identity (16 bytes)     |
 *  +---------------+-------+---+---+------------------------------+
 *  | buffer size (u64)             | blob ints n (u32)            |
 *  +-------------------------------+------------------------------+
 *  | blob: n little-endian int32 (platform's native handle)  ...  |
 *  +--------------------------------------------------------------+
 *  | CRC-32 of all bytes before (u32)                             |
 *  +--------------------------------------------------------------+
 * </pre>
 * Multi-byte header fields are big-endian. {@link #fromBytes(byte[])} rejects anything else with a
 * {@link BadHandleException} naming the field.
 */
public final class IpcHandle
{
    /** "TE4H". */
    public static final int MAGIC = 0x54453448;
    public static final int VERSION = 1;
    static final int HEADER_BYTES = 36;
    static final int MAX_BLOB_INTS = 1024;

    private static final byte[] LOCAL_HOST_IDENTITY = computeHostIdentity();

    private final Platform platform;
    private final byte[] hostIdentity;
    private final long bufferSize;
    private final int[] blob;

    IpcHandle(final Platform platform, final byte[] hostIdentity, final long bufferSize, final int[] blob)
    {
        this.platform = platform;
        this.hostIdentity = hostIdentity.clone();
        this.bufferSize = bufferSize;
        this.blob = blob.clone();
    }

    static IpcHandle local(final Platform platform, final long bufferSize, final int[] blob)
    {
        return new IpcHandle(platform, LOCAL_HOST_IDENTITY, bufferSize, blob);
    }

    public Platform platform()
    {
        return platform;
    }

    /** Size of the exported buffer. */
    public long bufferSize()
    {
        return bufferSize;
    }

    /** Whether the handle was made on this host and pid namespace (the native library's host identity). */
    public boolean isFromThisHost()
    {
        return Arrays.equals(hostIdentity, LOCAL_HOST_IDENTITY);
    }

    int[] blob()
    {
        return blob.clone();
    }

    /** The encoding described in the class comment. */
    public byte[] toBytes()
    {
        final ByteBuffer b = ByteBuffer.allocate(HEADER_BYTES + 4 * blob.length + 4).order(ByteOrder.BIG_ENDIAN);
        b.putInt(MAGIC).putShort((short)VERSION).put((byte)platform.nativeId()).put((byte)0);
        b.put(hostIdentity).putLong(bufferSize).putInt(blob.length);
        b.order(ByteOrder.LITTLE_ENDIAN);
        for (final int v : blob)
        {
            b.putInt(v);
        }
        final CRC32 crc = new CRC32();
        crc.update(b.array(), 0, b.position());
        b.order(ByteOrder.BIG_ENDIAN).putInt((int)crc.getValue());
        return b.array();
    }

    /** Decodes and validates bytes from {@link #toBytes()}; throws {@link BadHandleException}. */
    public static IpcHandle fromBytes(final byte[] bytes)
    {
        if (bytes == null)
        {
            throw new BadHandleException("IPC handle is null");
        }
        if (bytes.length < HEADER_BYTES + 4)
        {
            throw new BadHandleException("IPC handle truncated: " + bytes.length + " bytes, header needs "
                + (HEADER_BYTES + 4));
        }
        final ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.BIG_ENDIAN);
        final int magic = b.getInt();
        if (magic != MAGIC)
        {
            throw new BadHandleException("not a te4j IPC handle: magic 0x" + Integer.toHexString(magic));
        }
        final int version = b.getShort() & 0xffff;
        if (version != VERSION)
        {
            throw new BadHandleException("IPC handle version " + version + ", this te4j reads " + VERSION
                + " (fix: run the same te4j version on every rank)");
        }
        final int platformId = b.get();
        final Platform platform;
        try
        {
            platform = Platform.fromNativeId(platformId);
        }
        catch (final IllegalArgumentException e)
        {
            throw new BadHandleException("IPC handle has unknown platform " + platformId);
        }
        b.get();
        final byte[] host = new byte[16];
        b.get(host);
        final long size = b.getLong();
        final int n = b.getInt();
        if (n <= 0 || n > MAX_BLOB_INTS || bytes.length != HEADER_BYTES + 4L * n + 4)
        {
            throw new BadHandleException("IPC handle length mismatch: " + bytes.length + " bytes for " + n + " ints");
        }
        if (size <= 0)
        {
            throw new BadHandleException("IPC handle buffer size " + size + " is not positive");
        }
        final CRC32 crc = new CRC32();
        crc.update(bytes, 0, bytes.length - 4);
        final int stored = ByteBuffer.wrap(bytes, bytes.length - 4, 4).order(ByteOrder.BIG_ENDIAN).getInt();
        if (stored != (int)crc.getValue())
        {
            throw new BadHandleException("IPC handle checksum mismatch (corrupted in transit)");
        }
        b.order(ByteOrder.LITTLE_ENDIAN);
        final int[] blob = new int[n];
        for (int i = 0; i < n; i++)
        {
            blob[i] = b.getInt();
        }
        return new IpcHandle(platform, host, size, blob);
    }

    /** The native library's host identity, the one every handle blob carries and importers check. */
    private static byte[] computeHostIdentity()
    {
        final byte[] id = new byte[16];
        final int n = NativeP2pTransport.hostIdentity(id, id.length);
        if (n != id.length)
        {
            throw new IllegalStateException("P2pTransport.hostIdentity returned " + n);
        }
        return id;
    }

    @Override
    public String toString()
    {
        return "IpcHandle[" + platform + " " + bufferSize + " B, " + blob.length + " ints"
            + (isFromThisHost() ? "" : ", foreign host") + "]";
    }
}
