package io.github.te4j;

import io.github.te4j.telemetry.PeerLostEvent;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.locks.Lock;

/**
 * A peer's segment opened by {@link TransferAgent#openSegment(String)}, addressed by segment
 * offset: its buffers mapped into this process, or (an agent using an {@link RdmaTransport}) the
 * owner's registered addresses and remote keys, reached with one RDMA work request per request.
 * Requests must lie inside one of its buffers. Closing it while batches still use it is allowed:
 * the mappings go when the last one is done.
 *
 * @since 0.1
 */
public final class SegmentHandle extends NativeResource
{
    private static final int PID_WORD = 3;

    private final TransferAgent agent;
    private final String name;
    private final int rank;
    private final long[] offsets;   // segment offset of each part, ascending
    private final long[] sizes;
    private final long[] bases;     // this process's mapping of each part, or the owner's address (RDMA)
    private final RdmaTransport rdma;  // the route when not null: bases are the owner's addresses
    private final int rdmaRank;
    private final int[] rkeys;
    private final int ownerPid;
    private final ProcessWatch owner;  // null: this process, or an RDMA segment
    private final SegmentDescriptor descriptor;
    private int users;              // batches in flight that address this segment, guarded by this
    private boolean unmapPending;   // closed while used: the last user unmaps, guarded by this
    private volatile boolean lossReported;  // the owner's loss was seen (and its event emitted)

    /** Where each buffer of the descriptor starts in the segment. */
    private static long[] offsetsOf(final SegmentDescriptor d)
    {
        final long[] out = new long[d.parts().size()];
        for (int i = 0; i < out.length; i++)
        {
            out[i] = d.parts().get(i).segmentOffset;
        }
        return out;
    }

    /** The size of each buffer of the descriptor. */
    private static long[] sizesOf(final SegmentDescriptor d)
    {
        final long[] out = new long[d.parts().size()];
        for (int i = 0; i < out.length; i++)
        {
            out[i] = d.parts().get(i).handle.bufferSize();
        }
        return out;
    }

    SegmentHandle(final TransferAgent agent, final SegmentDescriptor d,
        final long[] bases)
    {
        super("SegmentHandle '" + d.name() + "'");
        this.agent = agent;
        this.descriptor = d;
        this.name = d.name();
        this.rank = d.rank();
        this.offsets = offsetsOf(d);
        this.sizes = sizesOf(d);
        this.bases = bases.clone();
        this.rdma = null;
        this.rdmaRank = -1;
        this.rkeys = null;
        final int pid = d.parts().isEmpty() ? 0 : d.parts().get(0).handle.blob()[PID_WORD];
        final boolean self = pid == ProcessHandle.current().pid();
        this.ownerPid = self ? 0 : pid;
        this.owner = self || pid <= 0 ? null : ProcessWatch.of(pid);
        final List<long[]> mapped = new ArrayList<>();
        for (int i = 0; i < this.bases.length; i++)
        {
            mapped.add(new long[] {this.bases[i], sizes[i]});
        }
        // A raw registration must not outlive these mappings, which go when the last batch is done.
        LiveMemory.segmentMapped(this, mapped);
    }

    /** A segment reached over {@code rdma}: the descriptor's RDMA part names the owner's memory. */
    SegmentHandle(final TransferAgent agent, final SegmentDescriptor d, final RdmaTransport rdma)
    {
        super("SegmentHandle '" + d.name() + "' over RDMA");
        this.agent = agent;
        this.descriptor = d;
        this.name = d.name();
        this.rank = d.rank();
        this.offsets = offsetsOf(d);
        this.sizes = sizesOf(d);
        this.bases = d.rdma().addresses.clone();
        this.rdma = rdma;
        this.rdmaRank = d.rdma().rank;
        this.rkeys = d.rdma().rkeys.clone();
        this.ownerPid = 0;
        this.owner = null;
    }

    /** The descriptor it was opened from (its notification area, for a submit's notification). */
    SegmentDescriptor descriptor()
    {
        return descriptor;
    }

    /**
     * The segment's name.
     *
     * @return the name it was published under
     * @since 0.1
     */
    public String segmentName()
    {
        return name;
    }

    /**
     * The rank that published it, -1 when it was published outside a handle exchange.
     *
     * @return the publishing rank, or -1
     * @since 0.1
     */
    public int rank()
    {
        return rank;
    }

    /**
     * The end of its last buffer: every offset a request may use is below it.
     *
     * @return the segment's size in bytes
     * @since 0.1
     */
    public long size()
    {
        return offsets.length == 0 ? 0 : offsets[offsets.length - 1] + sizes[sizes.length - 1];
    }

    /**
     * Its buffers' segment offsets, ascending.
     *
     * @return a new array of offsets
     * @since 0.1
     */
    public long[] bufferOffsets()
    {
        return offsets.clone();
    }

    /**
     * Its buffers' sizes, in the order of {@link #bufferOffsets()}.
     *
     * @return a new array of sizes
     * @since 0.1
     */
    public long[] bufferSizes()
    {
        return sizes.clone();
    }

    TransferAgent agent()
    {
        return agent;
    }

    /**
     * Whether requests to it go over RDMA ({@link #rdmaRank()}, {@link #rkeyOf(long)}).
     *
     * @return true for a segment opened over RDMA
     * @since 0.1
     */
    public boolean isRdma()
    {
        return rdma != null;
    }

    /**
     * The owner's rank on the RdmaTransport, -1 for a mapped segment.
     *
     * @return the RDMA rank, or -1
     * @since 0.1
     */
    public int rdmaRank()
    {
        return rdmaRank;
    }

    RdmaTransport rdmaTransport()
    {
        return rdma;
    }

    /** The remote key of the buffer holding offset (RDMA; the offset was checked by addressOf). */
    int rkeyOf(final long offset)
    {
        int i = Arrays.binarySearch(offsets, offset);
        if (i < 0)
        {
            i = -i - 2;
        }
        return rkeys[i];
    }

    /**
     * The address of [offset, offset + length) (mapped here, or the owner's for RDMA), or -1 when
     * the range is not inside one of the segment's buffers.
     */
    long addressOf(final long offset, final long length)
    {
        if (offset < 0 || length < 0)
        {
            return -1;
        }
        // A segment of one buffer, the usual case, needs no search: this runs for every request
        // a batch checks.
        final long[] o = offsets;
        int i = o.length - 1;
        if (i > 0)
        {
            i = Arrays.binarySearch(o, offset);
            if (i < 0)
            {
                i = -i - 2;  // the part that starts before offset
            }
        }
        if (i < 0 || offset < o[i])
        {
            return -1;
        }
        final long in = offset - o[i];
        final long size = sizes[i];
        return in < size && length <= size - in ? bases[i] + in : -1;
    }

    /** The segment offset of a mapped address of this segment, or -1 (messages only). */
    long offsetOfAddress(final long address)
    {
        for (int i = 0; i < bases.length; i++)
        {
            if (address - bases[i] >= 0 && address - bases[i] < sizes[i])
            {
                return offsets[i] + (address - bases[i]);
            }
        }
        return -1;
    }

    /** Why [offset, offset + length) is not addressable, for an error message. */
    String describeMiss(final long offset, final long length)
    {
        return "remote range [" + offset + ", " + offset + " + " + length + ") is not inside one buffer of segment '"
            + name + "' (buffers at offsets " + Arrays.toString(offsets) + " of sizes " + Arrays.toString(sizes) + ")";
    }

    /** Whether the process that published it is gone (never true for this process's own). */
    boolean ownerLost()
    {
        final boolean lost = rdma != null ? rdma.peerLost(rdmaRank) : owner != null && owner.exited();
        if (lost && !lossReported)
        {
            reportLoss();
        }
        return lost;
    }

    /** The first time the loss is seen: a JFR event (when recorded). */
    private void reportLoss()
    {
        synchronized (this)
        {
            if (lossReported)
            {
                return;
            }
            lossReported = true;
        }
        final PeerLostEvent e = new PeerLostEvent();
        if (e.shouldCommit())
        {
            e.agent = agent.segmentName();
            e.segment = name;
            e.rank = rank;
            e.route = rdma != null ? "rdma" : "mapped";
            e.detail = ownerLostMessage();
            e.commit();
        }
    }

    String ownerLostMessage()
    {
        if (rdma != null)
        {
            return "segment '" + name + "'" + (rank >= 0 ? " of rank " + rank : "") + ": its owner (rank " + rdmaRank
                + " of " + rdma + ") is lost: its connection broke (process exited, or its host did not answer"
                + " within the peer timeout)";
        }
        return "segment '" + name + "'" + (rank >= 0 ? " of rank " + rank : "") + ": its owner process " + ownerPid
            + " has exited";
    }

    /** A batch starts using the mappings; throws {@link ClosedException} when closed. */
    void acquire()
    {
        final Lock l = enter();
        try
        {
            synchronized (this)
            {
                users++;
            }
        }
        finally
        {
            l.unlock();
        }
    }

    /** A batch is done with the mappings; the last one after close() unmaps. */
    void releaseUse()
    {
        final boolean unmap;
        synchronized (this)
        {
            users--;
            unmap = users == 0 && unmapPending;
            if (unmap)
            {
                unmapPending = false;
            }
        }
        if (unmap)
        {
            unmapAll();
        }
    }

    private void unmapAll()
    {
        if (rdma != null)
        {
            return;  // nothing mapped
        }
        LiveMemory.segmentUnmapping(this);
        for (final long b : bases)
        {
            if (b != 0)
            {
                agent.unmap(b);
            }
        }
    }

    @Override
    void release()
    {
        final boolean now;
        synchronized (this)
        {
            now = users == 0;
            unmapPending = !now;
        }
        if (now)
        {
            unmapAll();
        }
        if (owner != null)
        {
            owner.close();  // a batch still using the segment asks /proc from now on
        }
        agent.segmentClosed(this);
    }

    @Override
    public String toString()
    {
        return "SegmentHandle['" + name + "'" + (rank >= 0 ? " of rank " + rank : "") + ", " + offsets.length
            + " buffers" + (rdma != null ? ", over RDMA to rank " + rdmaRank : "") + "]";
    }
}
