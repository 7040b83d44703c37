package io.github.te4j;

/** A bounded wait (signal, completion, synchronisation, rendezvous) passed its deadline. */
public class Te4jTimeoutException extends Te4jException
{
    private static final long serialVersionUID = 1L;

    public Te4jTimeoutException(final String message)
    {
        super(Code.TIMEOUT, message);
    }
}
