package io.github.te4j;

/** A platform, device, driver or library that te4j needs is not usable on this machine. */
public class UnavailableException extends Te4jException
{
    private static final long serialVersionUID = 1L;

    public UnavailableException(final String message)
    {
        super(Code.UNAVAILABLE, message);
    }

    public UnavailableException(final String message, final Throwable cause)
    {
        super(Code.UNAVAILABLE, message, cause);
    }
}
