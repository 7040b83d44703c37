package io.github.te4j;

/**
 * Base of every error te4j reports. Carries the failing operation, the native status code and,
 * where one is known, how to fix it.
 */
public class Te4jException extends RuntimeException
{
    private static final long serialVersionUID = 1L;

    /** Status codes of the native API ({@code te4j::Status}). */
    public enum Code
    {
        OK(0), INVALID_ARGUMENT(-1), UNAVAILABLE(-2), CUDA_ERROR(-3), SYSTEM_ERROR(-4), TIMEOUT(-5),
        PEER_LOST(-6), BAD_HANDLE(-7), OUT_OF_MEMORY(-8), ILLEGAL_STATE(-9), DEVICE_FAULT(-10),
        REMOTE_ERROR(-11), UNKNOWN(Integer.MIN_VALUE);

        private final int nativeCode;

        Code(final int nativeCode)
        {
            this.nativeCode = nativeCode;
        }

        /** The native value. */
        public int nativeCode()
        {
            return nativeCode;
        }

        /** The code of a native status value ({@link #UNKNOWN} for values te4j does not know). */
        public static Code of(final int status)
        {
            for (final Code c : values())
            {
                if (c.nativeCode == status)
                {
                    return c;
                }
            }
            return UNKNOWN;
        }
    }

    private final Code code;

    public Te4jException(final Code code, final String message)
    {
        super(message);
        this.code = code;
    }

    public Te4jException(final Code code, final String message, final Throwable cause)
    {
        super(message, cause);
        this.code = code;
    }

    /** What kind of failure this is. */
    public Code code()
    {
        return code;
    }
}
