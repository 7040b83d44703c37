package io.github.te4j;

/**
 * Where a request of a {@link TransferBatch} or of a {@link TransferPost} stands; every state but
 * {@link #PENDING} is final.
 *
 * @since 0.1
 */
public enum TransferState
{
    /**
     * Submitted, not finished.
     *
     * @since 0.1
     */
    PENDING,
    /**
     * Its bytes have been copied: a WRITE's are in the segment, a READ's in local memory.
     *
     * @since 0.1
     */
    COMPLETED,
    /**
     * It did not run to its end; {@link TransferStatus#cause()} says why.
     *
     * @since 0.1
     */
    FAILED,
    /**
     * The batch's deadline passed before it started; it never touched memory.
     *
     * @since 0.1
     */
    TIMEOUT,
    /**
     * {@code cancel()} was called (on its batch or post) before it started, and before the
     * deadline passed; it never touched memory. A request already copying when the cancel came
     * finishes: {@link #COMPLETED}.
     *
     * @since 0.1
     */
    CANCELLED;

    /**
     * Whether the state can no longer change.
     *
     * @return true for every state but {@link #PENDING}
     * @since 0.1
     */
    public boolean isFinal()
    {
        return this != PENDING;
    }
}
