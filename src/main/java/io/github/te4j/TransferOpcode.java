package io.github.te4j;

/**
 * What a {@link TransferRequest} does.
 *
 * @since 0.1
 */
public enum TransferOpcode
{
    /**
     * Copies from the remote segment into local memory.
     *
     * @since 0.1
     */
    READ(0),
    /**
     * Copies from local memory into the remote segment.
     *
     * @since 0.1
     */
    WRITE(1);

    private final int nativeCode;

    TransferOpcode(final int nativeCode)
    {
        this.nativeCode = nativeCode;
    }

    /** The value of {@code te4j::BatchOpcode}. */
    int nativeCode()
    {
        return nativeCode;
    }
}
