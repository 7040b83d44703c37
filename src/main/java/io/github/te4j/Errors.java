package io.github.te4j;

import java.util.function.Supplier;

/** The one place where native status codes become Java exceptions. */
final class Errors
{
    private Errors()
    {
    }

    /** Throws the exception for {@code status} if it is an error; returns it otherwise. */
    static int check(final int status, final String operation, final Supplier<String> nativeMessage)
    {
        if (status >= 0)
        {
            return status;
        }
        throw toException(status, operation, nativeMessage.get());
    }

    static Te4jException toException(final int status, final String operation, final String nativeMessage)
    {
        final Te4jException.Code code = Te4jException.Code.of(status);
        final String text = operation + " failed: " + code + " (" + status + "): "
            + (nativeMessage == null || nativeMessage.isEmpty() ? "no detail" : nativeMessage);
        switch (code)
        {
            case TIMEOUT:
                return new Te4jTimeoutException(text);
            case PEER_LOST:
                return new PeerLostException(text);
            case UNAVAILABLE:
                return new UnavailableException(text);
            case BAD_HANDLE:
                return new BadHandleException(text);
            default:
                return new Te4jException(code, text);
        }
    }

    /** Argument checks, named after what they check so that messages are uniform. */
    static void checkArgument(final boolean ok, final String message)
    {
        if (!ok)
        {
            throw new IllegalArgumentException(message);
        }
    }

    static void checkRange(final String what, final long offset, final long length, final long capacity)
    {
        if (offset < 0 || length < 0 || offset > capacity || length > capacity - offset)
        {
            throw new IndexOutOfBoundsException(what + ": offset=" + offset + " length=" + length
                + " is outside [0, " + capacity + ")");
        }
    }

    static void checkRank(final int rank, final int numRanks)
    {
        if (rank < 0 || rank >= numRanks)
        {
            throw new IllegalArgumentException("rank=" + rank + " is outside [0, " + numRanks + ")");
        }
    }
}
