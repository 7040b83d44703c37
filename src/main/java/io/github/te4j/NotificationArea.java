package io.github.te4j;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.zip.CRC32C;

/**
 * The one definition of a notification area's layout: memory of the receiving agent, written by
 * senders (through a mapping here, a WRITE over RDMA elsewhere) and read by the receiver. All
 * words little-endian, so the layout is the same on every host.
 *
 * <pre>
 *  area header (256 B): magic "TE4N" (u32) | version (u16) | rings (u16) | depth (u32) | slot bytes (u32)
 *                       | open (u64 at 16: 1 while the receiving agent is open, 0 once closed)
 *  rings × ring, each RING_HEADER + depth × SLOT_BYTES:
 *   ring header (256 B): claim (u64: 0 free; else the sender's pid (mapped rings) or 0x80000000 | its RDMA
 *                        rank (RDMA rings) &lt;&lt; 32 | a nonzero nonce) | ready (u64: the claim,
 *                        once name and pid are written) | consumed (u64: receiver's next position)
 *                        | closed (u64: 1 once the sender closed, after its last slot) | name length (u16 at 32)
 *                        | name (UTF-8, at most 128 B, at 40)
 *   slot (SLOT_BYTES): seq (u64: position + 1, stored last with release) | length (u32) | crc32c (u32)
 *                      | flags (u32: 0 a notification, 1 void) | payload (at 64, up to 4096 B)
 * </pre>
 * A ring has one producer (the sender that claimed it) and one consumer (the receiver): the
 * sender writes slot {@code p mod depth} only while {@code p - consumed < depth}, payload and
 * header first and the sequence word last; the receiver reads position {@code consumed} once its
 * sequence word says {@code consumed + 1} (acquire), checks length and CRC, then advances
 * {@code consumed} (release), which frees the slot for the sender. A void slot (the submit it
 * came with did not complete) is consumed without being delivered, so later positions flow.
 */
final class NotificationArea
{
    static final int MAGIC = 0x4e344554;
    static final int VERSION = 1;
    /** Senders on this host (mapping the area) one receiver can have at once: rings claimed by compare-and-swap. */
    static final int MAPPED_RINGS = 64;
    /** Rings of senders over RDMA, one per RDMA rank (ring MAPPED_RINGS + rank): only that rank writes it. */
    static final int RDMA_RINGS = 64;
    static final int RINGS = MAPPED_RINGS + RDMA_RINGS;
    /** Notifications in flight from one sender to one receiver: the bounded receive queue. */
    static final int DEPTH = 8;
    /** The deepest ring a descriptor may announce. */
    static final int MAX_DEPTH = 1024;
    static final int HEADER_BYTES = 256;
    static final int RING_HEADER_BYTES = 256;
    static final int SLOT_HEADER_BYTES = 64;
    static final int SLOT_BYTES = SLOT_HEADER_BYTES + Notification.MAX_BYTES;
    static final int MAX_NAME_BYTES = 128;

    static final int OPEN = 16;
    static final int CLAIM = 0;
    static final int READY = 8;
    static final int CONSUMED = 16;
    static final int CLOSED = 24;
    static final int NAME_LENGTH = 32;
    static final int NAME = 40;
    static final int SEQ = 0;
    static final int LENGTH = 8;
    static final int CRC = 12;
    static final int FLAGS = 16;
    static final int FLAG_VOID = 1;
    /** The high half of an RDMA sender's claim: this bit and its rank. */
    static final long RDMA_CLAIM = 0x80000000L;

    private static final VarHandle LONGS = MethodHandles.byteBufferViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

    private final ByteBuffer memory;
    private final int rings;
    private final int depth;

    private NotificationArea(final ByteBuffer memory, final int rings, final int depth)
    {
        this.memory = memory == null ? null : memory.order(ByteOrder.LITTLE_ENDIAN);
        this.rings = rings;
        this.depth = depth;
    }

    /** The bytes of an area of {@code rings} rings of {@code depth} slots. */
    static long bytes(final int rings, final int depth)
    {
        return HEADER_BYTES + (long) rings * ringBytes(depth);
    }

    static long ringBytes(final int depth)
    {
        return RING_HEADER_BYTES + (long) depth * SLOT_BYTES;
    }

    /** The offsets of an area of that geometry, for a sender that reaches it over RDMA (no memory here). */
    static NotificationArea layout(final int rings, final int depth)
    {
        return new NotificationArea(null, rings, depth);
    }

    /** Writes a fresh header over zeroed memory and opens the area; the receiver, once. */
    static NotificationArea format(final ByteBuffer memory)
    {
        final NotificationArea a = new NotificationArea(memory, RINGS, DEPTH);
        a.memory.putInt(0, MAGIC).putShort(4, (short) VERSION).putShort(6, (short) RINGS).putInt(8, DEPTH)
            .putInt(12, SLOT_BYTES);
        LONGS.setRelease(a.memory, OPEN, 1L);
        return a;
    }

    /**
     * A sender's view of an area it mapped: the header must say what the descriptor said, or the
     * memory is not an area this te4j wrote.
     */
    static NotificationArea attach(final ByteBuffer memory, final int rings, final int depth, final String segment)
    {
        final NotificationArea a = new NotificationArea(memory, rings, depth);
        final ByteBuffer m = a.memory;
        if (m.capacity() < bytes(rings, depth) || m.getInt(0) != MAGIC || (m.getShort(4) & 0xffff) != VERSION
            || (m.getShort(6) & 0xffff) != rings || m.getInt(8) != depth || m.getInt(12) != SLOT_BYTES)
        {
            throw new BadHandleException("segment '" + segment + "': its notification area does not hold the header"
                + " its descriptor announces (" + rings + " rings of " + depth + " slots): not a te4j notification area");
        }
        return a;
    }

    int rings()
    {
        return rings;
    }

    int depth()
    {
        return depth;
    }

    boolean isOpen()
    {
        return (long) LONGS.getAcquire(memory, OPEN) == 1L;
    }

    void markClosed()
    {
        LONGS.setRelease(memory, OPEN, 0L);
    }

    /** Byte offset of ring {@code r}'s header in the area. */
    int ring(final int r)
    {
        return (int) (HEADER_BYTES + r * ringBytes(depth));
    }

    /** Byte offset of the slot of {@code position} in ring {@code r}. */
    int slot(final int r, final long position)
    {
        return (int) (ring(r) + RING_HEADER_BYTES + (position & (depth - 1)) * SLOT_BYTES);
    }

    long claim(final int r)
    {
        return (long) LONGS.getAcquire(memory, ring(r) + CLAIM);
    }

    /** Takes a free ring for a sender: true when {@code word} is now its claim. */
    boolean tryClaim(final int r, final long word)
    {
        return LONGS.compareAndSet(memory, ring(r) + CLAIM, 0L, word);
    }

    /** The sender, after claiming: its name, then the ready word that makes the ring readable. */
    void announce(final int r, final long word, final byte[] name)
    {
        final int at = ring(r);
        memory.putShort(at + NAME_LENGTH, (short) name.length);
        memory.put(at + NAME, name);
        LONGS.setRelease(memory, at + READY, word);
    }

    long ready(final int r)
    {
        return (long) LONGS.getAcquire(memory, ring(r) + READY);
    }

    /** The sender's name as it announced it, or null when the field is not a name. */
    String senderName(final int r)
    {
        final int at = ring(r);
        final int n = memory.getShort(at + NAME_LENGTH) & 0xffff;
        if (n < 1 || n > MAX_NAME_BYTES)
        {
            return null;
        }
        final byte[] b = new byte[n];
        memory.get(at + NAME, b);
        final String s = new String(b, StandardCharsets.UTF_8);
        return io.github.te4j.exchange.SegmentDirectory.NAME.matcher(s).matches() ? s : null;
    }

    long consumed(final int r)
    {
        return (long) LONGS.getAcquire(memory, ring(r) + CONSUMED);
    }

    void setConsumed(final int r, final long position)
    {
        LONGS.setRelease(memory, ring(r) + CONSUMED, position);
    }

    boolean senderClosed(final int r)
    {
        return (long) LONGS.getAcquire(memory, ring(r) + CLOSED) != 0L;
    }

    void markSenderClosed(final int r)
    {
        LONGS.setRelease(memory, ring(r) + CLOSED, 1L);
    }

    /** Writes one slot: payload and header, then the sequence word (release). The sender. */
    void publish(final int r, final long position, final byte[] payload, final boolean isVoid)
    {
        final int at = slot(r, position);
        final int n = isVoid ? 0 : payload.length;
        if (n > 0)
        {
            memory.put(at + SLOT_HEADER_BYTES, payload, 0, n);
        }
        memory.putInt(at + LENGTH, n).putInt(at + CRC, isVoid ? 0 : crc(payload)).putInt(at + FLAGS,
            isVoid ? FLAG_VOID : 0);
        LONGS.setRelease(memory, at + SEQ, position + 1);
    }

    /** Whether position {@code position} of ring {@code r} is published. */
    boolean isPublished(final int r, final long position)
    {
        return (long) LONGS.getAcquire(memory, slot(r, position) + SEQ) == position + 1;
    }

    int flags(final int r, final long position)
    {
        return memory.getInt(slot(r, position) + FLAGS);
    }

    /**
     * The payload of a published slot, or null when its length or CRC do not hold (a slot torn
     * or written by something else than a te4j sender).
     */
    byte[] payload(final int r, final long position)
    {
        final int at = slot(r, position);
        final int n = memory.getInt(at + LENGTH);
        if (n < 0 || n > Notification.MAX_BYTES)
        {
            return null;
        }
        final byte[] b = new byte[n];
        memory.get(at + SLOT_HEADER_BYTES, b);
        return crc(b) == memory.getInt(at + CRC) ? b : null;
    }

    /**
     * Frees a ring whose sender is gone: every sequence word and index back to zero, the claim
     * last, so the next sender starts on a clean ring. The receiver.
     */
    void reset(final int r, final long claim)
    {
        final int at = ring(r);
        for (int s = 0; s < depth; s++)
        {
            LONGS.setRelease(memory, slot(r, s) + SEQ, 0L);
        }
        LONGS.setRelease(memory, at + CONSUMED, 0L);
        LONGS.setRelease(memory, at + CLOSED, 0L);
        LONGS.setRelease(memory, at + READY, 0L);
        LONGS.compareAndSet(memory, at + CLAIM, claim, 0L);
    }

    static int crc(final byte[] b)
    {
        final CRC32C c = new CRC32C();
        c.update(b, 0, b.length);
        return (int) c.getValue();
    }
}
