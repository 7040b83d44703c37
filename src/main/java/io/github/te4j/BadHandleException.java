package io.github.te4j;

/**
 * An IPC handle or RDMA metadata blob is corrupt, truncated, of another version or from another host.
 *
 * @since 0.1
 */
public class BadHandleException extends Te4jException
{
    private static final long serialVersionUID = 1L;

    /**
     * An exception with {@code message}.
     *
     * @param message what is wrong with the handle
     * @since 0.1
     */
    public BadHandleException(final String message)
    {
        super(Code.BAD_HANDLE, message);
    }
}
