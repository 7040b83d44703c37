package io.github.te4j;

import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * What a peer needs to open a rank's segment: its name, the rank, and each buffer's place in the
 * segment with the buffer's handle; when the owner routes batches over an {@link RdmaTransport},
 * also its rank on that transport and each buffer's registered address and remote key there. An
 * explicit, versioned encoding (big-endian):
 *
 * <pre>
 *  magic "TE4S" (u32) | version 2 (u16) | rank (i32) | name bytes (u16) | name (UTF-8)
 *  parts (u32) | per part: segment offset (u64) | handle bytes (u32) | {@link IpcHandle} bytes
 *  rdma (u8: 0 none, 1 present) | if present: rdma rank (i32) | per part: address (u64) | rkey (u32)
 * </pre>
 * {@link #fromBytes} refuses anything else with a {@link BadHandleException} naming the field;
 * the handles inside are checked again by their own decoder and by the native import.
 */
final class SegmentDescriptor
{
    static final int MAGIC = 0x54453453;
    static final int VERSION = 3;
    static final int MAX_PARTS = 4096;
    private static final int MAX_HANDLE_BYTES = 64 * 1024;
    private static final int MAX_NOTIFY_DEPTH = NotificationArea.MAX_DEPTH;

    private final String name;
    private final int rank;
    private final List<Part> parts;
    private final Rdma rdma;
    private final Notify notify;

    /**
     * Where senders put notifications for the owner: its area's handle and geometry, and where
     * the owner routes over RDMA, the area's registered address and key there (else 0).
     */
    static final class Notify
    {
        final IpcHandle handle;
        final int rings;
        final int depth;
        final long rdmaAddress;
        final int rdmaKey;

        Notify(final IpcHandle handle, final int rings, final int depth, final long rdmaAddress, final int rdmaKey)
        {
            this.handle = handle;
            this.rings = rings;
            this.depth = depth;
            this.rdmaAddress = rdmaAddress;
            this.rdmaKey = rdmaKey;
        }
    }

    /**
     * Where an RDMA peer reaches the parts: the owner's rank on its RdmaTransport, and each part's
     * registered address and remote key (in the order of the parts).
     */
    static final class Rdma
    {
        final int rank;
        final long[] addresses;
        final int[] rkeys;

        Rdma(final int rank, final long[] addresses, final int[] rkeys)
        {
            this.rank = rank;
            this.addresses = addresses.clone();
            this.rkeys = rkeys.clone();
        }
    }

    /** One buffer of a segment. */
    static final class Part
    {
        final long segmentOffset;
        final IpcHandle handle;

        Part(final long segmentOffset, final IpcHandle handle)
        {
            this.segmentOffset = segmentOffset;
            this.handle = handle;
        }
    }

    SegmentDescriptor(final String name, final int rank, final List<Part> parts)
    {
        this(name, rank, parts, null);
    }

    SegmentDescriptor(final String name, final int rank, final List<Part> parts, final Rdma rdma)
    {
        this(name, rank, parts, rdma, null);
    }

    SegmentDescriptor(final String name, final int rank, final List<Part> parts, final Rdma rdma, final Notify notify)
    {
        this.name = name;
        this.rank = rank;
        this.parts = Collections.unmodifiableList(new ArrayList<>(parts));
        if (notify != null && (rdma != null) != (notify.rdmaAddress != 0))
        {
            throw new IllegalArgumentException("the notification area has an RDMA address exactly when the segment has"
                + " an RDMA route");
        }
        if (rdma != null && (rdma.addresses.length != parts.size() || rdma.rkeys.length != parts.size()))
        {
            throw new IllegalArgumentException("RDMA part of the descriptor has " + rdma.addresses.length
                + " addresses for " + parts.size() + " parts");
        }
        this.rdma = rdma;
        this.notify = notify;
    }

    /** The owner's notification area, or null when it has none. */
    Notify notificationArea()
    {
        return notify;
    }

    /** The RDMA route to the parts, or null when the owner publishes none. */
    Rdma rdma()
    {
        return rdma;
    }

    String name()
    {
        return name;
    }

    /** The publishing rank, -1 when it was published outside a handle exchange. */
    int rank()
    {
        return rank;
    }

    List<Part> parts()
    {
        return parts;
    }

    byte[] toBytes()
    {
        final byte[] nameBytes = name.getBytes(StandardCharsets.UTF_8);
        final List<byte[]> handles = new ArrayList<>();
        int total = 4 + 2 + 4 + 2 + nameBytes.length + 4;
        for (final Part p : parts)
        {
            final byte[] h = p.handle.toBytes();
            handles.add(h);
            total += 8 + 4 + h.length;
        }
        total += 1 + (rdma == null ? 0 : 4 + parts.size() * (8 + 4));
        final byte[] notifyHandle = notify == null ? null : notify.handle.toBytes();
        total += 1 + (notify == null ? 0 : 4 + notifyHandle.length + 2 + 4 + (rdma == null ? 0 : 8 + 4));
        final ByteBuffer b = ByteBuffer.allocate(total);
        b.putInt(MAGIC).putShort((short) VERSION).putInt(rank).putShort((short) nameBytes.length).put(nameBytes);
        b.putInt(parts.size());
        for (int i = 0; i < parts.size(); i++)
        {
            b.putLong(parts.get(i).segmentOffset).putInt(handles.get(i).length).put(handles.get(i));
        }
        b.put((byte) (rdma == null ? 0 : 1));
        if (rdma != null)
        {
            b.putInt(rdma.rank);
            for (int i = 0; i < parts.size(); i++)
            {
                b.putLong(rdma.addresses[i]).putInt(rdma.rkeys[i]);
            }
        }
        b.put((byte) (notify == null ? 0 : 1));
        if (notify != null)
        {
            b.putInt(notifyHandle.length).put(notifyHandle).putShort((short) notify.rings).putInt(notify.depth);
            if (rdma != null)
            {
                b.putLong(notify.rdmaAddress).putInt(notify.rdmaKey);
            }
        }
        return b.array();
    }

    static SegmentDescriptor fromBytes(final byte[] bytes)
    {
        if (bytes == null)
        {
            throw new BadHandleException("segment descriptor is null");
        }
        try
        {
            final ByteBuffer b = ByteBuffer.wrap(bytes);
            final int magic = b.getInt();
            if (magic != MAGIC)
            {
                throw new BadHandleException("segment descriptor: magic 0x" + Integer.toHexString(magic)
                    + ", expected 0x" + Integer.toHexString(MAGIC) + " ('TE4S'): not a te4j segment descriptor");
            }
            final int version = b.getShort() & 0xffff;
            if (version != VERSION)
            {
                throw new BadHandleException("segment descriptor: version " + version + ", this te4j reads "
                    + VERSION + " (all ranks must run the same te4j release)");
            }
            final int rank = b.getInt();
            if (rank < -1 || rank >= 64)
            {
                throw new BadHandleException("segment descriptor: rank " + rank + " is outside [-1, 64)");
            }
            final int nameLength = b.getShort() & 0xffff;
            if (nameLength > b.remaining())
            {
                throw new BadHandleException("segment descriptor: name of " + nameLength + " bytes is truncated");
            }
            final byte[] nameBytes = new byte[nameLength];
            b.get(nameBytes);
            final String name = new String(nameBytes, StandardCharsets.UTF_8);
            if (!io.github.te4j.exchange.SegmentDirectory.NAME.matcher(name).matches())
            {
                throw new BadHandleException("segment descriptor: name '" + name + "' is not a segment name");
            }
            final int count = b.getInt();
            if (count < 0 || count > MAX_PARTS)
            {
                throw new BadHandleException("segment descriptor: " + count + " parts, at most " + MAX_PARTS);
            }
            final List<Part> parts = new ArrayList<>();
            long end = 0;
            for (int i = 0; i < count; i++)
            {
                final long offset = b.getLong();
                final int length = b.getInt();
                if (length <= 0 || length > MAX_HANDLE_BYTES || length > b.remaining())
                {
                    throw new BadHandleException("segment descriptor: part " + i + " has a handle of " + length
                        + " bytes, " + b.remaining() + " left");
                }
                final byte[] h = new byte[length];
                b.get(h);
                final IpcHandle handle = IpcHandle.fromBytes(h);
                if (offset < end || handle.bufferSize() <= 0 || offset > TransferRequest.MAX_LENGTH * 1024
                    || handle.bufferSize() > TransferRequest.MAX_LENGTH * 1024 - offset)
                {
                    throw new BadHandleException("segment descriptor: part " + i + " at offset " + offset + " of "
                        + handle.bufferSize() + " B overlaps the previous part or lies past the largest segment");
                }
                end = offset + handle.bufferSize();
                parts.add(new Part(offset, handle));
            }
            final Rdma rdma = readRdma(b, parts);
            final Notify notify = readNotify(b, rdma != null);
            if (b.hasRemaining())
            {
                throw new BadHandleException("segment descriptor: " + b.remaining() + " bytes after the last part");
            }
            return new SegmentDescriptor(name, rank, parts, rdma, notify);
        }
        catch (final BufferUnderflowException e)
        {
            throw new BadHandleException("segment descriptor of " + bytes.length + " bytes is truncated");
        }
    }

    private static Rdma readRdma(final ByteBuffer b, final List<Part> parts)
    {
        final int present = b.get();
        if (present == 0)
        {
            return null;
        }
        if (present != 1)
        {
            throw new BadHandleException("segment descriptor: RDMA flag " + present + ", expected 0 or 1");
        }
        final int rdmaRank = b.getInt();
        if (rdmaRank < 0 || rdmaRank >= 64)
        {
            throw new BadHandleException("segment descriptor: RDMA rank " + rdmaRank + " is outside [0, 64)");
        }
        final long[] addresses = new long[parts.size()];
        final int[] rkeys = new int[parts.size()];
        for (int i = 0; i < parts.size(); i++)
        {
            addresses[i] = b.getLong();
            rkeys[i] = b.getInt();
            final long size = parts.get(i).handle.bufferSize();
            if (addresses[i] <= 0 || size > Long.MAX_VALUE - addresses[i] || rkeys[i] == 0)
            {
                throw new BadHandleException("segment descriptor: part " + i + " has RDMA address 0x"
                    + Long.toHexString(addresses[i]) + " of " + size + " B and rkey 0x" + Integer.toHexString(rkeys[i])
                    + ": a null or wrapping address, or a null key");
            }
        }
        return new Rdma(rdmaRank, addresses, rkeys);
    }

    private static Notify readNotify(final ByteBuffer b, final boolean overRdma)
    {
        final int present = b.get();
        if (present == 0)
        {
            return null;
        }
        if (present != 1)
        {
            throw new BadHandleException("segment descriptor: notification flag " + present + ", expected 0 or 1");
        }
        final int length = b.getInt();
        if (length <= 0 || length > MAX_HANDLE_BYTES || length > b.remaining())
        {
            throw new BadHandleException("segment descriptor: notification area handle of " + length + " bytes, "
                + b.remaining() + " left");
        }
        final byte[] h = new byte[length];
        b.get(h);
        final IpcHandle handle = IpcHandle.fromBytes(h);
        final int rings = b.getShort() & 0xffff;
        final int depth = b.getInt();
        if (rings != NotificationArea.RINGS || depth < 1 || depth > MAX_NOTIFY_DEPTH
            || Integer.bitCount(depth) != 1 || handle.bufferSize() < NotificationArea.bytes(rings, depth))
        {
            throw new BadHandleException("segment descriptor: notification area of " + rings + " rings x " + depth
                + " slots in " + handle.bufferSize() + " B: rings must be " + NotificationArea.RINGS
                + ", depth a power of two in [1, " + MAX_NOTIFY_DEPTH + "], and the area large enough");
        }
        if (!overRdma)
        {
            return new Notify(handle, rings, depth, 0, 0);
        }
        final long address = b.getLong();
        final int key = b.getInt();
        final long size = handle.bufferSize();
        if (address <= 0 || size > Long.MAX_VALUE - address || key == 0)
        {
            throw new BadHandleException("segment descriptor: notification area at RDMA address 0x"
                + Long.toHexString(address) + " of " + size + " B and rkey 0x" + Integer.toHexString(key)
                + ": a null or wrapping address, or a null key");
        }
        return new Notify(handle, rings, depth, address, key);
    }
}
