package io.github.te4j;

/**
 * A sender's ring in one receiver's notification area, however it is reached: mapped into this
 * process ({@link MappedNotificationTarget}) or over RDMA ({@link RdmaNotificationTarget}).
 * Positions are reserved in submit order; every reserved position is published once, as a
 * notification or void.
 */
interface NotificationTarget
{
    /** The receiver's segment name. */
    String segment();

    /** Whether {@code d} names the area this target writes (a republish may bring a new one). */
    boolean sameArea(SegmentDescriptor d);

    /**
     * Reserves the next position, waiting for the receiver to free a slot until {@code deadline}
     * (System.nanoTime): the back-pressure of a full receive queue.
     *
     * @throws Te4jTimeoutException when the queue stayed full until the deadline
     */
    long reserve(long deadline);

    /**
     * Writes the slot of a reserved position, its sequence word last; {@code isVoid}: the
     * receiver consumes it unseen (its data did not land). False when this target is closed.
     */
    boolean publish(long position, byte[] message, boolean isVoid);

    /** Tells the receiver no more comes on this ring, and lets go of what reaches it. */
    void close();

    /** The error of a reservation that found the queue full until its deadline: the one wording of back-pressure. */
    static Te4jTimeoutException queueFull(final String segment, final int depth)
    {
        return new Te4jTimeoutException("notification to segment '" + segment + "': its receive queue is full (" + depth
            + " notifications from this agent not yet taken) and stayed full until the deadline: the receiving agent"
            + " must take them (Notifications.poll, take or a listener) before more can be sent");
    }
}
