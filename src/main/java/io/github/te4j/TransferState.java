package io.github.te4j;

/**
 * Where a request of a {@link TransferBatch} or of a {@link TransferPost} stands; every state but
 * {@link #PENDING} is final.
 */
public enum TransferState
{
    /** Submitted, not finished. */
    PENDING,
    /** Its bytes have been copied: a WRITE's are in the segment, a READ's in local memory. */
    COMPLETED,
    /** It did not run to its end; {@link TransferStatus#cause()} says why. */
    FAILED,
    /** The batch's deadline passed before it started; it never touched memory. */
    TIMEOUT,
    /**
     * {@code cancel()} was called (on its batch or post) before it started, and before the
     * deadline passed; it never touched memory. A request already copying when the cancel came
     * finishes: {@link #COMPLETED}.
     */
    CANCELLED;

    /** Whether the state can no longer change. */
    public boolean isFinal()
    {
        return this != PENDING;
    }
}
