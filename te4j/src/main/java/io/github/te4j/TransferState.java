package io.github.te4j;

/** Where a request of a {@link TransferBatch} stands; every state but {@link #PENDING} is final. */
public enum TransferState
{
    /** Submitted, not finished. */
    PENDING,
    /** Its bytes have been copied: a WRITE's are in the segment, a READ's in local memory. */
    COMPLETED,
    /** It did not run to its end; {@link TransferStatus#cause()} says why. */
    FAILED,
    /** The batch's deadline passed before it started; it never touched memory. */
    TIMEOUT;

    /** Whether the state can no longer change. */
    public boolean isFinal()
    {
        return this != PENDING;
    }
}
