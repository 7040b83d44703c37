package io.github.te4j;

/**
 * A bounded wait (signal, completion, synchronisation, rendezvous) passed its deadline.
 *
 * @since 0.1
 */
public class Te4jTimeoutException extends Te4jException
{
    private static final long serialVersionUID = 1L;

    /**
     * An exception with {@code message}.
     *
     * @param message what was awaited, and for how long
     * @since 0.1
     */
    public Te4jTimeoutException(final String message)
    {
        super(Code.TIMEOUT, message);
    }
}
