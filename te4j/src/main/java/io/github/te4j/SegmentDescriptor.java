package io.github.te4j;

import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * What a peer needs to open a rank's segment: its name, the rank, and each buffer's place in the
 * segment with the buffer's handle. An explicit, versioned encoding (big-endian):
 *
 * <pre>
 *  magic "TE4S" (u32) | version 1 (u16) | rank (i32) | name bytes (u16) | name (UTF-8)
 *  parts (u32) | per part: segment offset (u64) | handle bytes (u32) | {@link IpcHandle} bytes
 * </pre>
 * {@link #fromBytes} refuses anything else with a {@link BadHandleException} naming the field;
 * the handles inside are checked again by their own decoder and by the native import.
 */
final class SegmentDescriptor
{
    static final int MAGIC = 0x54453453;
    static final int VERSION = 1;
    static final int MAX_PARTS = 4096;
    private static final int MAX_HANDLE_BYTES = 64 * 1024;

    private final String name;
    private final int rank;
    private final List<Part> parts;

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
        this.name = name;
        this.rank = rank;
        this.parts = Collections.unmodifiableList(new ArrayList<>(parts));
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
        final ByteBuffer b = ByteBuffer.allocate(total);
        b.putInt(MAGIC).putShort((short) VERSION).putInt(rank).putShort((short) nameBytes.length).put(nameBytes);
        b.putInt(parts.size());
        for (int i = 0; i < parts.size(); i++)
        {
            b.putLong(parts.get(i).segmentOffset).putInt(handles.get(i).length).put(handles.get(i));
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
            if (b.hasRemaining())
            {
                throw new BadHandleException("segment descriptor: " + b.remaining() + " bytes after the last part");
            }
            return new SegmentDescriptor(name, rank, parts);
        }
        catch (final BufferUnderflowException e)
        {
            throw new BadHandleException("segment descriptor of " + bytes.length + " bytes is truncated");
        }
    }
}
