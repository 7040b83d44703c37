package io.github.te4j;

import io.github.te4j.internal.NativeTransferBatch;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.IntBuffer;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.IntPointer;

/**
 * A batch's requests where they run: the native batch's descriptor slots
 * ({@code te4j::BatchDescriptor}, {@code te4j/batch_api.h}), which Java writes through a buffer
 * view and native code reads in place, so a request's descriptor is written once, by the submit
 * that checks it. One slot per request of the batch (its index); the slots keep the requests for
 * their messages. Also the words native code copies the requests' states and completion words
 * into, so a poll neither allocates nor copies Java arrays through JNI.
 */
final class BatchRequests
{
    /** {@code sizeof(te4j::BatchDescriptor)} and its fields' offsets. */
    static final int BYTES = 40;
    private static final int OPCODE = 0;
    private static final int ROUTE = 4;
    private static final int LOCAL = 8;
    private static final int REMOTE = 16;
    private static final int LENGTH = 24;
    private static final int LKEY = 32;
    private static final int RKEY = 36;

    /** {@code te4j::kRouteMapped}: the segment is mapped here, the platform copies the request. */
    static final int ROUTE_MAPPED = -1;
    /** {@code te4j::kRoutePeerLost}: the owner is known lost, the request is final at submit. */
    static final int ROUTE_PEER_LOST = -2;
    private static final boolean LITTLE_ENDIAN = ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN;

    private final ByteBuffer slots;
    private final IntPointer states;
    private final IntBuffer stateView;
    /** The RDMA requests' completion words; allocated once the batch has an RDMA route. */
    private IntPointer syndromes;
    private IntBuffer syndromeView;

    BatchRequests(final NativeTransferBatch peer, final int capacity)
    {
        final BytePointer p = peer.descriptors();
        if (p == null || p.isNull())
        {
            throw new Te4jException(Te4jException.Code.OUT_OF_MEMORY, "TransferBatch: no descriptor slots for "
                + capacity + " requests");
        }
        slots = p.capacity((long) capacity * BYTES).asByteBuffer().order(ByteOrder.nativeOrder());
        states = new IntPointer(capacity);
        if (states.isNull())
        {
            throw new Te4jException(Te4jException.Code.OUT_OF_MEMORY, "TransferBatch: no native memory for the"
                + " states of " + capacity + " requests");
        }
        stateView = states.asBuffer();
    }

    /** Writes request i of a mapped segment. */
    void putMapped(final int i, final int opcode, final long localAddress, final long remoteAddress,
        final long length)
    {
        final int at = i * BYTES;
        // The opcode and the route are one 8-byte word: one store instead of two, for every request.
        slots.putLong(at + OPCODE, LITTLE_ENDIAN ? ((long) ROUTE_MAPPED << 32) | (opcode & 0xFFFFFFFFL)
            : ((long) opcode << 32) | (ROUTE_MAPPED & 0xFFFFFFFFL));
        slots.putLong(at + LOCAL, localAddress);
        slots.putLong(at + REMOTE, remoteAddress);
        slots.putLong(at + LENGTH, length);
    }

    /** Writes request i to {@code rank} over RDMA, with the local and remote keys. */
    void putRdma(final int i, final int opcode, final int rank, final long localAddress, final int lkey,
        final long remoteAddress, final int rkey, final long length)
    {
        final int at = i * BYTES;
        slots.putInt(at + OPCODE, opcode);
        slots.putInt(at + ROUTE, rank);
        slots.putLong(at + LOCAL, localAddress);
        slots.putLong(at + REMOTE, remoteAddress);
        slots.putLong(at + LENGTH, length);
        slots.putInt(at + LKEY, lkey);
        slots.putInt(at + RKEY, rkey);
    }

    /** Makes request i final at submit: its owner is lost (before the part is submitted). */
    void markPeerLost(final int i)
    {
        slots.putInt(i * BYTES + ROUTE, ROUTE_PEER_LOST);
    }

    int opcode(final int i)
    {
        return slots.getInt(i * BYTES + OPCODE);
    }

    int route(final int i)
    {
        return slots.getInt(i * BYTES + ROUTE);
    }

    long local(final int i)
    {
        return slots.getLong(i * BYTES + LOCAL);
    }

    long remote(final int i)
    {
        return slots.getLong(i * BYTES + REMOTE);
    }

    long length(final int i)
    {
        return slots.getLong(i * BYTES + LENGTH);
    }

    /** Reads the states of requests [0, n) into {@code out}; a te4j status. */
    int readStates(final NativeTransferBatch peer, final int n, final int[] out)
    {
        final int st = peer.states(0, n, states);
        if (st >= 0)
        {
            stateView.get(0, out, 0, n);
        }
        return st;
    }

    /** Reads the completion words of requests [0, n) into {@code out}; a te4j status. */
    int readSyndromes(final NativeTransferBatch peer, final int n, final int[] out)
    {
        if (syndromes == null)
        {
            syndromes = new IntPointer(out.length);
            if (syndromes.isNull())
            {
                syndromes = null;
                return Te4jException.Code.OUT_OF_MEMORY.nativeCode();
            }
            syndromeView = syndromes.asBuffer();
        }
        final int st = peer.syndromes(0, n, syndromes);
        if (st >= 0)
        {
            syndromeView.get(0, out, 0, n);
        }
        return st;
    }

    void close()
    {
        states.close();
        if (syndromes != null)
        {
            syndromes.close();
        }
    }
}
