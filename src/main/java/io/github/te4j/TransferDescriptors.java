package io.github.te4j;

import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.Map;

/**
 * Requests of a {@link TransferBatch} kept in primitive arrays: {@link #add} stores a request
 * without an object of its own, and {@link TransferBatch#submit(TransferDescriptors, java.time.Duration)}
 * checks and submits them in one pass. The local memories and segments the requests name are kept
 * once each (a batch usually names one or two). Reusable after {@link #clear()}; grows up to
 * {@link TransferBatch#MAX_CAPACITY} requests. Not thread-safe.
 *
 * <p>Nothing is checked when a request is added: submit checks every one against the
 * registrations and names its index in the batch, as for {@link TransferRequest}s.
 *
 * @since 0.1
 */
public final class TransferDescriptors
{
    /** opcode of a null {@link TransferRequest} (from a list). */
    static final byte NULL_REQUEST = -2;
    /** opcode of a request added with a null opcode. */
    static final byte NULL_OPCODE = -1;
    /** Index of a null memory or segment. */
    static final int NONE = -1;
    /** Tables longer than this are indexed by a map instead of a scan. */
    private static final int SCAN_LIMIT = 8;

    private byte[] opcodes;
    private int[] memoryIds;
    private long[] localOffsets;
    private int[] segmentIds;
    private long[] remoteOffsets;
    private long[] lengths;
    private int size;
    private RegisteredMemory[] memories = new RegisteredMemory[2];
    private int memoryCount;
    private SegmentHandle[] segments = new SegmentHandle[2];
    private int segmentCount;
    private Map<Object, Integer> index;

    /**
     * Empty descriptors with room for {@code initialCapacity} requests; they grow as requests are added.
     *
     * @param initialCapacity how many requests to make room for at first, 1 to {@link TransferBatch#MAX_CAPACITY}
     * @since 0.1
     */
    public TransferDescriptors(final int initialCapacity)
    {
        Errors.checkArgument(initialCapacity >= 1 && initialCapacity <= TransferBatch.MAX_CAPACITY,
            "initialCapacity=" + initialCapacity + " must be in [1, " + TransferBatch.MAX_CAPACITY + "]");
        opcodes = new byte[initialCapacity];
        memoryIds = new int[initialCapacity];
        localOffsets = new long[initialCapacity];
        segmentIds = new int[initialCapacity];
        remoteOffsets = new long[initialCapacity];
        lengths = new long[initialCapacity];
    }

    /**
     * The requests added since the last {@link #clear()}.
     *
     * @return the number of requests
     * @since 0.1
     */
    public int size()
    {
        return size;
    }

    /**
     * Forgets every request (and the memories and segments they named); the arrays stay.
     *
     * @return these descriptors, for chaining
     * @since 0.1
     */
    public TransferDescriptors clear()
    {
        Arrays.fill(memories, 0, memoryCount, null);
        Arrays.fill(segments, 0, segmentCount, null);
        size = 0;
        memoryCount = 0;
        segmentCount = 0;
        index = null;
        return this;
    }

    /**
     * Adds a request (the fields of {@link TransferRequest#of}); checked when submitted.
     *
     * @param opcode which way the bytes go
     * @param local registered local memory of the submitting agent
     * @param localOffset the byte offset in {@code local}
     * @param segment an opened segment of the submitting agent
     * @param remoteOffset the byte offset in the segment
     * @param length how many bytes
     * @return its index among these descriptors
     * @since 0.1
     */
    public int add(final TransferOpcode opcode, final RegisteredMemory local, final long localOffset,
        final SegmentHandle segment, final long remoteOffset, final long length)
    {
        final int i = slot();
        opcodes[i] = opcode == null ? NULL_OPCODE : (byte) opcode.nativeCode();
        memoryIds[i] = local == null ? NONE : memoryId(local);
        localOffsets[i] = localOffset;
        segmentIds[i] = segment == null ? NONE : segmentId(segment);
        remoteOffsets[i] = remoteOffset;
        lengths[i] = length;
        return i;
    }

    /**
     * {@link #add} of a READ: the segment's bytes at remoteOffset into local at localOffset.
     *
     * @param local registered local memory of the submitting agent
     * @param localOffset the byte offset in {@code local}
     * @param segment an opened segment of the submitting agent
     * @param remoteOffset the byte offset in the segment
     * @param length how many bytes
     * @return its index among these descriptors
     * @since 0.1
     */
    public int read(final RegisteredMemory local, final long localOffset, final SegmentHandle segment,
        final long remoteOffset, final long length)
    {
        return add(TransferOpcode.READ, local, localOffset, segment, remoteOffset, length);
    }

    /**
     * {@link #add} of a WRITE: local's bytes at localOffset into the segment at remoteOffset.
     *
     * @param local registered local memory of the submitting agent
     * @param localOffset the byte offset in {@code local}
     * @param segment an opened segment of the submitting agent
     * @param remoteOffset the byte offset in the segment
     * @param length how many bytes
     * @return its index among these descriptors
     * @since 0.1
     */
    public int write(final RegisteredMemory local, final long localOffset, final SegmentHandle segment,
        final long remoteOffset, final long length)
    {
        return add(TransferOpcode.WRITE, local, localOffset, segment, remoteOffset, length);
    }

    /** Adds {@code r}, or a null request that submit refuses at its index. */
    void add(final TransferRequest r)
    {
        if (r == null)
        {
            final int i = slot();
            opcodes[i] = NULL_REQUEST;
            memoryIds[i] = NONE;
            segmentIds[i] = NONE;
            return;
        }
        add(r.opcode(), r.local(), r.localOffset(), r.segment(), r.remoteOffset(), r.length());
    }

    /** How many requests fit before the arrays grow. */
    int room()
    {
        return opcodes.length;
    }

    private int slot()
    {
        if (size == opcodes.length)
        {
            if (size == TransferBatch.MAX_CAPACITY)
            {
                throw new IllegalStateException("TransferDescriptors hold at most " + TransferBatch.MAX_CAPACITY
                    + " requests (a batch's largest capacity)");
            }
            final int grown = (int) Math.min(TransferBatch.MAX_CAPACITY, 2L * size);
            opcodes = Arrays.copyOf(opcodes, grown);
            memoryIds = Arrays.copyOf(memoryIds, grown);
            localOffsets = Arrays.copyOf(localOffsets, grown);
            segmentIds = Arrays.copyOf(segmentIds, grown);
            remoteOffsets = Arrays.copyOf(remoteOffsets, grown);
            lengths = Arrays.copyOf(lengths, grown);
        }
        return size++;
    }

    private int memoryId(final RegisteredMemory m)
    {
        // Usually the same as the request before: compare with the last one first.
        if (memoryCount > 0 && memories[memoryCount - 1] == m)
        {
            return memoryCount - 1;
        }
        final int known = find(memories, memoryCount, m);
        if (known >= 0)
        {
            return known;
        }
        if (memoryCount == memories.length)
        {
            memories = Arrays.copyOf(memories, 2 * memoryCount);
        }
        memories[memoryCount] = m;
        remember(m, memoryCount);
        return memoryCount++;
    }

    private int segmentId(final SegmentHandle s)
    {
        if (segmentCount > 0 && segments[segmentCount - 1] == s)
        {
            return segmentCount - 1;
        }
        final int known = find(segments, segmentCount, s);
        if (known >= 0)
        {
            return known;
        }
        if (segmentCount == segments.length)
        {
            segments = Arrays.copyOf(segments, 2 * segmentCount);
        }
        segments[segmentCount] = s;
        remember(s, segmentCount);
        return segmentCount++;
    }

    private int find(final Object[] table, final int count, final Object o)
    {
        if (count <= SCAN_LIMIT)
        {
            for (int k = 0; k < count; k++)
            {
                if (table[k] == o)
                {
                    return k;
                }
            }
            return -1;
        }
        final Integer k = index.get(o);
        return k == null ? -1 : k;
    }

    /** Keeps the map of both tables once one is past the scan limit (memories and segments never compare equal). */
    private void remember(final Object o, final int id)
    {
        if (index == null && (memoryCount + 1 > SCAN_LIMIT || segmentCount + 1 > SCAN_LIMIT))
        {
            index = new IdentityHashMap<>();
            for (int k = 0; k < memoryCount; k++)
            {
                index.put(memories[k], k);
            }
            for (int k = 0; k < segmentCount; k++)
            {
                index.put(segments[k], k);
            }
        }
        if (index != null)
        {
            index.put(o, id);
        }
    }

    // The arrays themselves, for a check that walks every request (valid until the next add).

    byte[] opcodes()
    {
        return opcodes;
    }

    int[] memoryIds()
    {
        return memoryIds;
    }

    int[] segmentIds()
    {
        return segmentIds;
    }

    long[] localOffsets()
    {
        return localOffsets;
    }

    long[] remoteOffsets()
    {
        return remoteOffsets;
    }

    long[] lengths()
    {
        return lengths;
    }

    byte opcode(final int i)
    {
        return opcodes[i];
    }

    int memoryId(final int i)
    {
        return memoryIds[i];
    }

    long localOffset(final int i)
    {
        return localOffsets[i];
    }

    int segmentId(final int i)
    {
        return segmentIds[i];
    }

    long remoteOffset(final int i)
    {
        return remoteOffsets[i];
    }

    long length(final int i)
    {
        return lengths[i];
    }

    int memoryCount()
    {
        return memoryCount;
    }

    RegisteredMemory memory(final int id)
    {
        return memories[id];
    }

    int segmentCount()
    {
        return segmentCount;
    }

    SegmentHandle segment(final int id)
    {
        return segments[id];
    }
}
