package io.github.te4j;

/**
 * A platform, device, driver or library that te4j needs is not usable on this machine.
 *
 * @since 0.1
 */
public class UnavailableException extends Te4jException
{
    private static final long serialVersionUID = 1L;

    /**
     * An exception with {@code message}.
     *
     * @param message what is missing, why, and the fix
     * @since 0.1
     */
    public UnavailableException(final String message)
    {
        super(Code.UNAVAILABLE, message);
    }

    /**
     * An exception with {@code message} and the error that made the platform unusable.
     *
     * @param message what is missing, why, and the fix
     * @param cause the underlying error, e.g. the library load's
     * @since 0.1
     */
    public UnavailableException(final String message, final Throwable cause)
    {
        super(Code.UNAVAILABLE, message, cause);
    }
}
