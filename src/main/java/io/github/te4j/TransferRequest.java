package io.github.te4j;

/**
 * One transfer of a batch: {@code length} bytes between registered local memory at
 * {@code localOffset} and an opened remote segment at {@code remoteOffset}. Immutable; checked
 * against the registrations when submitted ({@link TransferBatch#submit}).
 *
 * @since 0.1
 */
public final class TransferRequest
{
    /**
     * The longest request: 2^40 bytes.
     *
     * @since 0.1
     */
    public static final long MAX_LENGTH = 1L << 40;

    private final TransferOpcode opcode;
    private final RegisteredMemory local;
    private final long localOffset;
    private final SegmentHandle segment;
    private final long remoteOffset;
    private final long length;

    private TransferRequest(final TransferOpcode opcode, final RegisteredMemory local, final long localOffset,
        final SegmentHandle segment, final long remoteOffset, final long length)
    {
        this.opcode = opcode;
        this.local = local;
        this.localOffset = localOffset;
        this.segment = segment;
        this.remoteOffset = remoteOffset;
        this.length = length;
    }

    /**
     * A request; its arguments are checked when it is submitted, where the error names its index.
     *
     * @param opcode which way the bytes go
     * @param local registered local memory of the submitting agent
     * @param localOffset the byte offset in {@code local}
     * @param segment an opened segment of the submitting agent
     * @param remoteOffset the byte offset in the segment
     * @param length how many bytes, in [1, {@link #MAX_LENGTH}]
     * @return the request (not checked yet)
     * @since 0.1
     */
    public static TransferRequest of(final TransferOpcode opcode, final RegisteredMemory local, final long localOffset,
        final SegmentHandle segment, final long remoteOffset, final long length)
    {
        return new TransferRequest(opcode, local, localOffset, segment, remoteOffset, length);
    }

    /**
     * Copies {@code length} bytes of the segment at {@code remoteOffset} into {@code local} at {@code localOffset}.
     *
     * @param local registered local memory of the submitting agent
     * @param localOffset the byte offset in {@code local}
     * @param segment an opened segment of the submitting agent
     * @param remoteOffset the byte offset in the segment
     * @param length how many bytes, in [1, {@link #MAX_LENGTH}]
     * @return the request (not checked yet)
     * @since 0.1
     */
    public static TransferRequest read(final RegisteredMemory local, final long localOffset,
        final SegmentHandle segment, final long remoteOffset, final long length)
    {
        return of(TransferOpcode.READ, local, localOffset, segment, remoteOffset, length);
    }

    /**
     * Copies {@code length} bytes of {@code local} at {@code localOffset} into the segment at {@code remoteOffset}.
     *
     * @param local registered local memory of the submitting agent
     * @param localOffset the byte offset in {@code local}
     * @param segment an opened segment of the submitting agent
     * @param remoteOffset the byte offset in the segment
     * @param length how many bytes, in [1, {@link #MAX_LENGTH}]
     * @return the request (not checked yet)
     * @since 0.1
     */
    public static TransferRequest write(final RegisteredMemory local, final long localOffset,
        final SegmentHandle segment, final long remoteOffset, final long length)
    {
        return of(TransferOpcode.WRITE, local, localOffset, segment, remoteOffset, length);
    }

    /**
     * Which way the bytes go.
     *
     * @return {@link TransferOpcode#READ} (segment to local) or {@link TransferOpcode#WRITE}
     * @since 0.1
     */
    public TransferOpcode opcode()
    {
        return opcode;
    }

    /**
     * The local side of the transfer.
     *
     * @return the registered local memory
     * @since 0.1
     */
    public RegisteredMemory local()
    {
        return local;
    }

    /**
     * Where in the local memory the transfer starts.
     *
     * @return the byte offset in {@link #local()}
     * @since 0.1
     */
    public long localOffset()
    {
        return localOffset;
    }

    /**
     * The remote side of the transfer.
     *
     * @return the opened segment
     * @since 0.1
     */
    public SegmentHandle segment()
    {
        return segment;
    }

    /**
     * Where in the segment the transfer starts.
     *
     * @return the byte offset in {@link #segment()}
     * @since 0.1
     */
    public long remoteOffset()
    {
        return remoteOffset;
    }

    /**
     * The size of the transfer.
     *
     * @return the number of bytes
     * @since 0.1
     */
    public long length()
    {
        return length;
    }

    @Override
    public String toString()
    {
        return opcode + " " + length + " B local+" + localOffset + " <-> "
            + (segment == null ? "null" : "'" + segment.segmentName() + "'") + "+" + remoteOffset;
    }
}
