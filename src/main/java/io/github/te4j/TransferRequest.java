package io.github.te4j;

/**
 * One transfer of a batch: {@code length} bytes between registered local memory at
 * {@code localOffset} and an opened remote segment at {@code remoteOffset}. Immutable; checked
 * against the registrations when submitted ({@link TransferBatch#submit}).
 */
public final class TransferRequest
{
    /** The longest request: 2^40 bytes. */
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

    /** A request; its arguments are checked when it is submitted, where the error names its index. */
    public static TransferRequest of(final TransferOpcode opcode, final RegisteredMemory local, final long localOffset,
        final SegmentHandle segment, final long remoteOffset, final long length)
    {
        return new TransferRequest(opcode, local, localOffset, segment, remoteOffset, length);
    }

    /** Copies {@code length} bytes of the segment at {@code remoteOffset} into {@code local} at {@code localOffset}. */
    public static TransferRequest read(final RegisteredMemory local, final long localOffset,
        final SegmentHandle segment, final long remoteOffset, final long length)
    {
        return of(TransferOpcode.READ, local, localOffset, segment, remoteOffset, length);
    }

    /** Copies {@code length} bytes of {@code local} at {@code localOffset} into the segment at {@code remoteOffset}. */
    public static TransferRequest write(final RegisteredMemory local, final long localOffset,
        final SegmentHandle segment, final long remoteOffset, final long length)
    {
        return of(TransferOpcode.WRITE, local, localOffset, segment, remoteOffset, length);
    }

    public TransferOpcode opcode()
    {
        return opcode;
    }

    public RegisteredMemory local()
    {
        return local;
    }

    public long localOffset()
    {
        return localOffset;
    }

    public SegmentHandle segment()
    {
        return segment;
    }

    public long remoteOffset()
    {
        return remoteOffset;
    }

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
