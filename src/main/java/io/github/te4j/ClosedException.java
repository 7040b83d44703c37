package io.github.te4j;

/**
 * An operation on an object that was already closed.
 *
 * @since 0.1
 */
public class ClosedException extends Te4jException
{
    private static final long serialVersionUID = 1L;

    /**
     * An exception saying that {@code what} is closed, with the fix.
     *
     * @param what the object, as its messages name it (e.g. "OpStream")
     * @since 0.1
     */
    public ClosedException(final String what)
    {
        super(Code.ILLEGAL_STATE, what + " is closed (fix: do not use it after close())");
    }
}
