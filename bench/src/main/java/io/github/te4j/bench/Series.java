package io.github.te4j.bench;

/** The measurements te4j-bench runs itself, with the names shown in its output. */
public enum Series
{
    /** OpStream.put launched from Java, back to back on one stream. */
    TE4J_PUT("te4j put", Role.TE4J, Mode.BANDWIDTH),
    /** cudaMemcpyPeerAsync into the peer's mapped buffer. */
    COPY_ENGINE("copy engine (cudaMemcpyPeerAsync)", Role.BASELINE, Mode.BANDWIDTH),
    /** A plain grid-stride kernel of 16-byte ld.global.nc / st.global. */
    SM_COPY("SM copy kernel (16 B ld.nc/st)", Role.BASELINE, Mode.BANDWIDTH),
    /** memcpy on one thread between the same shared-memory mappings. */
    MEMCPY("memcpy (same mappings)", Role.BASELINE, Mode.BANDWIDTH),
    /** put + signal round trips inside one kernel (one warp a side) or one host loop. */
    TE4J_PING_PONG("te4j put+signal ping-pong", Role.TE4J, Mode.LATENCY),
    /**
     * LL put round trips inside one kernel (one warp a side) or one host loop: each 8-byte word
     * carries 4 payload bytes and the round's flag, so no fence and no signal word
     * ({@code transport/device/ll_put.cuh}); up to {@link WindowLayout#LL_MAX_BYTES}.
     */
    TE4J_LL_PING_PONG("te4j LL put ping-pong (flag in each word)", Role.TE4J, Mode.LATENCY),
    /**
     * Host platform: the put + signal round trip as OpStream ops from Java (putWithSignal to the
     * partner, waitSignal on the own word, every op through the executor's hand-off and the
     * wait's spin-then-park), all enqueued, timed to the end of synchronize.
     */
    TE4J_STREAM_PING_PONG("te4j OpStream putWithSignal+waitSignal ping-pong", Role.TE4J, Mode.LATENCY),
    /** st.release / ld.acquire flag round trips, one thread a side. */
    RAW_FLAG("raw flag ping-pong", Role.BASELINE, Mode.LATENCY),
    /**
     * The raw flag preceded by a plain 8-byte store to another line of the peer's window, which
     * the release orders before the flag: what a correctly ordered put(8 B)+signal costs at least.
     */
    RAW_FLAG_DATA("raw put(8 B)+release flag", Role.BASELINE, Mode.LATENCY),
    /** OpStream.putWithSignal launched from Java, back to back on one stream. */
    TE4J_RATE_JAVA("te4j putWithSignal, Java loop", Role.TE4J, Mode.RATE),
    /** The same putWithSignal ops captured once from Java into a CUDA graph, replayed per sample. */
    TE4J_RATE_GRAPH("te4j putWithSignal, Java graph", Role.TE4J, Mode.RATE),
    /** The same loop in C++ against the native library (te4j::OpStream::putWithSignal). */
    TE4J_RATE_CPP("te4j putWithSignal, C++ loop", Role.BASELINE, Mode.RATE),
    /** cudaMemcpyPeerAsync back to back (rate mode). */
    COPY_ENGINE_RATE("copy engine (cudaMemcpyPeerAsync)", Role.BASELINE, Mode.RATE),
    /** memcpy back to back (rate mode, host). */
    MEMCPY_RATE("memcpy (same mappings)", Role.BASELINE, Mode.RATE),
    /** Per rank: putWithSignal of one block to every other rank, then waitSignal for the N-1 arriving. */
    TE4J_ALLTOALL("te4j all-to-all", Role.TE4J, Mode.ALLTOALL),
    /** Per rank: one memcpy of each block into the other ranks' shared-memory mappings (host). */
    MEMCPY_ALLTOALL("memcpy all-to-all", Role.BASELINE, Mode.ALLTOALL),
    /**
     * Raw TCP beside the software NIC (RDMA runs): C sockets with TCP_NODELAY between the ranks'
     * processes over the address the NIC uses, {@code bytes} each way per round trip.
     */
    TCP_PING_PONG("raw TCP ping-pong (C, TCP_NODELAY)", Role.BASELINE, Mode.LATENCY),
    /** Raw TCP one way, one send() of {@code bytes} per message, timed to the receiver's answer. */
    TCP_STREAM("raw TCP stream (C)", Role.BASELINE, Mode.BANDWIDTH),
    /** The same loop in rate mode: messages per second of {@code bytes}. */
    TCP_RATE("raw TCP messages (C)", Role.BASELINE, Mode.RATE);

    private final String label;
    private final Role role;
    private final Mode mode;

    Series(final String label, final Role role, final Mode mode)
    {
        this.label = label;
        this.role = role;
        this.mode = mode;
    }

    /** The name shown in tables and charts. */
    public String label()
    {
        return label;
    }

    public Role role()
    {
        return role;
    }

    /** The mode this series belongs to. */
    public Mode mode()
    {
        return mode;
    }

    /** Whether both ranks of the pair take an active part (the ping-pongs). */
    public boolean twoSided()
    {
        return mode == Mode.LATENCY || isTcp();
    }

    /** Whether this is a raw-TCP baseline (both ranks run its socket loop). */
    public boolean isTcp()
    {
        return this == TCP_PING_PONG || this == TCP_STREAM || this == TCP_RATE;
    }
}
