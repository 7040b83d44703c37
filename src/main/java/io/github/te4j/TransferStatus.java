package io.github.te4j;

import java.util.Objects;

/**
 * The state of one request of a {@link TransferBatch} or a {@link TransferPost}, with the cause of a failure.
 *
 * @since 0.1
 */
public final class TransferStatus
{
    private static final TransferStatus PENDING = new TransferStatus(TransferState.PENDING, null);
    private static final TransferStatus COMPLETED = new TransferStatus(TransferState.COMPLETED, null);
    private static final TransferStatus TIMEOUT = new TransferStatus(TransferState.TIMEOUT, null);
    private static final TransferStatus CANCELLED = new TransferStatus(TransferState.CANCELLED, null);

    private final TransferState state;
    private final RuntimeException cause;

    private TransferStatus(final TransferState state, final RuntimeException cause)
    {
        this.state = state;
        this.cause = cause;
    }

    static TransferStatus pending()
    {
        return PENDING;
    }

    static TransferStatus completed()
    {
        return COMPLETED;
    }

    static TransferStatus timedOut()
    {
        return TIMEOUT;
    }

    static TransferStatus cancelled()
    {
        return CANCELLED;
    }

    static TransferStatus failed(final RuntimeException cause)
    {
        return new TransferStatus(TransferState.FAILED, Objects.requireNonNull(cause, "cause"));
    }

    /**
     * The state of the request.
     *
     * @return the state
     * @since 0.1
     */
    public TransferState state()
    {
        return state;
    }

    /**
     * Why the request failed ({@link TransferState#FAILED} only), else null.
     *
     * @return the cause, or null
     * @since 0.1
     */
    public RuntimeException cause()
    {
        return cause;
    }

    @Override
    public String toString()
    {
        return cause == null ? state.toString() : state + "(" + cause.getMessage() + ")";
    }
}
