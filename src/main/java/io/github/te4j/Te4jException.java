package io.github.te4j;

/**
 * Base of every error te4j reports. Carries the failing operation, the native status code and,
 * where one is known, how to fix it.
 *
 * @since 0.1
 */
public class Te4jException extends RuntimeException
{
    private static final long serialVersionUID = 1L;

    /**
     * Status codes of the native API ({@code te4j::Status}).
     *
     * @since 0.1
     */
    public enum Code
    {
        /**
         * Success ({@code kOk}); no exception carries it.
         *
         * @since 0.1
         */
        OK(0),

        /**
         * A bad argument the native side refused, or a kernel source that does not compile.
         *
         * @since 0.1
         */
        INVALID_ARGUMENT(-1),

        /**
         * The platform, driver, device, NIC or library is missing here ({@link UnavailableException}).
         *
         * @since 0.1
         */
        UNAVAILABLE(-2),

        /**
         * A CUDA call failed; the message has CUDA's error text.
         *
         * @since 0.1
         */
        CUDA_ERROR(-3),

        /**
         * An operating system call failed; the message has its error text.
         *
         * @since 0.1
         */
        SYSTEM_ERROR(-4),

        /**
         * A bounded wait expired ({@link Te4jTimeoutException}); the message names what was awaited.
         *
         * @since 0.1
         */
        TIMEOUT(-5),

        /**
         * A peer process or its host is gone ({@link PeerLostException}).
         *
         * @since 0.1
         */
        PEER_LOST(-6),

        /**
         * A handle, descriptor or metadata is corrupt, truncated or foreign ({@link BadHandleException}).
         *
         * @since 0.1
         */
        BAD_HANDLE(-7),

        /**
         * Memory could not be allocated.
         *
         * @since 0.1
         */
        OUT_OF_MEMORY(-8),

        /**
         * A call out of order, or on a closed object ({@link ClosedException}).
         *
         * @since 0.1
         */
        ILLEGAL_STATE(-9),

        /**
         * A device-side error recorded by a kernel: the stream is unusable.
         *
         * @since 0.1
         */
        DEVICE_FAULT(-10),

        /**
         * An RDMA completion with an error (the message has its syndrome).
         *
         * @since 0.1
         */
        REMOTE_ERROR(-11),

        /**
         * A native value te4j does not know.
         *
         * @since 0.1
         */
        UNKNOWN(Integer.MIN_VALUE);

        private final int nativeCode;

        Code(final int nativeCode)
        {
            this.nativeCode = nativeCode;
        }

        /**
         * The native value.
         *
         * @return the {@code te4j::Status} value
         * @since 0.1
         */
        public int nativeCode()
        {
            return nativeCode;
        }

        /**
         * The code of a native status value ({@link #UNKNOWN} for values te4j does not know).
         *
         * @param status a native status value
         * @return its code, or {@link #UNKNOWN}
         * @since 0.1
         */
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

    /** What kind of failure this is (serialized with the exception). */
    private final Code code;

    /**
     * An exception of {@code code} with {@code message}.
     *
     * @param code what kind of failure it is
     * @param message what failed, why, and where known the fix
     * @since 0.1
     */
    public Te4jException(final Code code, final String message)
    {
        super(message);
        this.code = code;
    }

    /**
     * An exception of {@code code} with {@code message} and the exception that caused it.
     *
     * @param code what kind of failure it is
     * @param message what failed, why, and where known the fix
     * @param cause the underlying exception
     * @since 0.1
     */
    public Te4jException(final Code code, final String message, final Throwable cause)
    {
        super(message, cause);
        this.code = code;
    }

    /**
     * What kind of failure this is.
     *
     * @return the code
     * @since 0.1
     */
    public Code code()
    {
        return code;
    }
}
