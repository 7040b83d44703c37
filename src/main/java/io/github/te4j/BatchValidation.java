package io.github.te4j;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The checks of a {@link TransferBatch} part, and where its requests go: every request is checked
 * against its local memory's registration and its segment's buffers, in order, and written into
 * the batch's descriptor slot with its route (the segment mapped here, or the owner's rank and
 * keys over RDMA). The first bad request throws, naming its index in the batch; its slot and
 * those after it are left as they were, and nothing of the part is submitted.
 *
 * <p>What is true of a memory or a segment (its agent, whether it is closed, its RDMA key) is
 * looked up once per part, not per request: a part usually names one or two of each. One per
 * batch, used under its submit lock; its scratch arrays are kept between parts.
 */
final class BatchValidation
{
    private final TransferAgent agent;
    private final BatchRequests staging;
    private final SegmentHandle[] segmentOf;
    private String[] memoryProblems = new String[2];
    private long[] memoryAddress = new long[2];
    private long[] memorySize = new long[2];
    private int[] lkeyOf = new int[2];
    private byte[] segmentProblems = new byte[2];  // 1: another agent's, 2: closed
    private SegmentHandle[] segments = new SegmentHandle[2];
    /** The te4j buffers the part's memories lie in: held while native code takes the part. */
    private final List<DeviceBuffer> buffers = new ArrayList<>();
    private RdmaTransport rdma;

    /**
     * @param segmentOf per request of the batch, its segment (written for the part's requests)
     */
    BatchValidation(final TransferAgent agent, final BatchRequests staging, final SegmentHandle[] segmentOf)
    {
        this.agent = agent;
        this.staging = staging;
        this.segmentOf = segmentOf;
    }

    /** The buffers of the last part checked (valid until the next check). */
    List<DeviceBuffer> buffers()
    {
        return buffers;
    }

    /** The RdmaTransport the last part's RDMA requests go over, or null when it has none. */
    RdmaTransport rdma()
    {
        return rdma;
    }

    static String at(final int index)
    {
        return "request " + index + ": ";
    }

    /** Checks {@code part} as the batch's requests [first, first + part.size()) and writes their slots. */
    void check(final TransferDescriptors part, final int first)
    {
        final int n = part.size();
        final int nm = part.memoryCount();
        final int ns = part.segmentCount();
        if (memoryProblems.length < nm)
        {
            final int m = Math.max(nm, 2 * memoryProblems.length);
            memoryProblems = new String[m];
            memoryAddress = new long[m];
            memorySize = new long[m];
            lkeyOf = new int[m];
        }
        if (segmentProblems.length < ns)
        {
            segmentProblems = new byte[Math.max(ns, 2 * segmentProblems.length)];
        }
        buffers.clear();
        rdma = null;
        for (int k = 0; k < nm; k++)
        {
            final RegisteredMemory m = part.memory(k);
            memoryProblems[k] = memoryProblem(m);
            memoryAddress[k] = m.address();
            memorySize[k] = m.size();
            lkeyOf[k] = 0;  // looked up with the first RDMA request of the memory
            if (m.liveBuffer() != null && !buffers.contains(m.liveBuffer()))
            {
                buffers.add(m.liveBuffer());  // a raw range inside a te4j buffer holds that buffer too
            }
        }
        boolean anyRdma = false;
        for (int k = 0; k < ns; k++)
        {
            final SegmentHandle s = part.segment(k);
            segmentProblems[k] = (byte) (s.agent() != agent ? 1 : s.isClosed() ? 2 : 0);
            anyRdma |= s.isRdma();
        }
        if (segments.length < ns)
        {
            segments = new SegmentHandle[Math.max(ns, 2 * segments.length)];
        }
        for (int k = 0; k < ns; k++)
        {
            segments[k] = part.segment(k);
        }
        // Every array in a local: the descriptor writes are raw memory stores, after which the
        // compiler would otherwise load each field again, for every request.
        final byte[] ops = part.opcodes();
        final int[] mids = part.memoryIds();
        final int[] sids = part.segmentIds();
        final long[] los = part.localOffsets();
        final long[] ros = part.remoteOffsets();
        final long[] lengths = part.lengths();
        final String[] mp = memoryProblems;
        final long[] ma = memoryAddress;
        final long[] msize = memorySize;
        final byte[] sp = segmentProblems;
        final SegmentHandle[] segs = segments;
        final SegmentHandle[] of = segmentOf;
        final BatchRequests out = staging;
        for (int i = 0; i < n; i++)
        {
            final byte op = ops[i];
            final int mi = mids[i];
            final int si = sids[i];
            // Messages are built only for a request that fails: this loop runs for every request.
            if (op < 0 || mi < 0 || si < 0)
            {
                throw new IllegalArgumentException(at(first + i) + (op == TransferDescriptors.NULL_REQUEST ? "is null"
                    : op == TransferDescriptors.NULL_OPCODE ? "opcode is null" : mi < 0 ? "local memory is null"
                    : "segment is null"));
            }
            if (mp[mi] != null)
            {
                throw new IllegalArgumentException(at(first + i) + mp[mi]);
            }
            final SegmentHandle s = segs[si];
            if (sp[si] != 0)
            {
                if (sp[si] == 1)
                {
                    throw new IllegalArgumentException(at(first + i) + s + " was opened by another agent");
                }
                throw new ClosedException(at(first + i) + s + " (closed)");
            }
            final long length = lengths[i];
            if (length < 1 || length > TransferRequest.MAX_LENGTH)
            {
                throw new IllegalArgumentException(at(first + i) + "length=" + length + " must be in [1, 2^40]");
            }
            final long lo = los[i];
            final long size = msize[mi];
            if (lo < 0 || lo > size || length > size - lo)
            {
                throw new IndexOutOfBoundsException(at(first + i) + "local: offset=" + lo + " length=" + length
                    + " is outside [0, " + size + ") of " + part.memory(mi));
            }
            final long ro = ros[i];
            final long address = s.addressOf(ro, length);
            if (address < 0)
            {
                throw new IndexOutOfBoundsException(at(first + i) + s.describeMiss(ro, length));
            }
            if (anyRdma && s.isRdma())
            {
                out.putRdma(first + i, op, s.rdmaRank(), ma[mi] + lo, lkey(part, mi, s, first + i), address,
                    s.rkeyOf(ro), length);
            }
            else
            {
                out.putMapped(first + i, op, ma[mi] + lo, address, length);
            }
            // Kept for the request's messages and its segment's state (slots past size() mean nothing).
            of[first + i] = s;
        }
        Arrays.fill(segments, 0, ns, null);
        Arrays.fill(memoryProblems, 0, nm, null);
    }

    /** The RDMA key of memory {@code mi} on the part's transport, which segment s must share. */
    private int lkey(final TransferDescriptors part, final int mi, final SegmentHandle s, final int index)
    {
        if (rdma == null)
        {
            rdma = s.rdmaTransport();
        }
        else if (rdma != s.rdmaTransport())
        {
            throw new IllegalArgumentException(at(index) + s + " is reached over another RdmaTransport than the"
                + " part's other requests");
        }
        if (lkeyOf[mi] == 0)
        {
            final RegisteredMemory m = part.memory(mi);
            try
            {
                lkeyOf[mi] = (int) rdma.regionKey(m.address(), m.size(), "local memory " + m);
            }
            catch (final IllegalArgumentException e)
            {
                throw new IllegalArgumentException(at(index) + e.getMessage(), e);
            }
        }
        return lkeyOf[mi];
    }

    /** Why memory {@code m} cannot be a request's local side, or null. Once per memory and part. */
    private String memoryProblem(final RegisteredMemory m)
    {
        if (m.agent() != agent)
        {
            return m + " is registered with another agent";
        }
        if (!agent.isRegistered(m))
        {
            return m + " is not registered (unregistered, or its buffer closed)";
        }
        return null;
    }
}
