package io.github.te4j;

/**
 * Error state of one RDMA queue pair as device code recorded it
 * ({@link RdmaTransport#qpState(int)}).
 *
 * @param errorCqes       error CQEs consumed (the first error and the flushes after it)
 * @param syndrome        syndrome of the first error CQE (e.g. 0x13 remote access), 0 when none
 * @param vendorSyndrome  its vendor syndrome
 * @param cqeOpcode       its CQE opcode (0xd: requester error)
 * @param wqeCounter      its WQE counter
 * @param fatalCqes       CQEs with an opcode a requester never receives
 * @param posted          WQEBBs posted (free-running, wraps the ring)
 * @param completed       WQEBBs completed
 * @since 0.1
 */
public record RdmaQpState(long errorCqes, int syndrome, int vendorSyndrome, int cqeOpcode, long wqeCounter,
    long fatalCqes, long posted, long completed)
{
    /**
     * Whether the QP saw an error CQE and needs recreateQueuePairs + reconnect.
     *
     * @return true when an error or fatal CQE was seen
     * @since 0.1
     */
    public boolean inError()
    {
        return errorCqes != 0 || fatalCqes != 0;
    }
}
