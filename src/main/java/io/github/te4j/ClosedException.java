package io.github.te4j;

/** An operation on an object that was already closed. */
public class ClosedException extends Te4jException
{
    private static final long serialVersionUID = 1L;

    public ClosedException(final String what)
    {
        super(Code.ILLEGAL_STATE, what + " is closed (fix: do not use it after close())");
    }
}
