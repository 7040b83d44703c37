package io.github.te4j;

/** An IPC handle or RDMA metadata blob is corrupt, truncated, of another version or from another host. */
public class BadHandleException extends Te4jException
{
    private static final long serialVersionUID = 1L;

    public BadHandleException(final String message)
    {
        super(Code.BAD_HANDLE, message);
    }
}
