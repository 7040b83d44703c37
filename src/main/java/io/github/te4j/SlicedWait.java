package io.github.te4j;

import io.github.te4j.internal.NativeOpStream;

/**
 * Waits for a stream in short slices instead of one long native wait, so that between slices
 * the waiter can notice a lost peer ({@link PeerMonitor}) and fail early. The native
 * synchronize of both platforms is itself bounded; a slice that ends with work still running
 * reports kTimeout with a message starting "synchronize timed out" (host_op_stream.cpp,
 * cuda_op_stream.cu), which is how a slice is told apart from an operation's own timeout.
 */
final class SlicedWait
{
    /** Returned by {@link #run} when the deadline passed with work still running. */
    static final int STILL_RUNNING = Integer.MIN_VALUE;

    private static final int TIMEOUT = Te4jException.Code.TIMEOUT.nativeCode();
    private static final String SLICE_TIMED_OUT = "synchronize timed out";

    private SlicedWait()
    {
    }

    /**
     * Waits until the stream is idle or {@code timeoutNs} passed; {@code between} runs after every
     * slice that ended with work still running (it throws to abort, e.g. {@link PeerLostException}).
     * Returns the native status of the final call (0, or the stream's first recorded error, whose
     * message is left in {@code message[0]}), or {@link #STILL_RUNNING}.
     */
    static int run(final NativeOpStream stream, final long timeoutNs, final Runnable between, final String[] message)
    {
        final long deadline = System.nanoTime() + Math.min(timeoutNs, Long.MAX_VALUE / 4);
        for (;;)
        {
            final long left = deadline - System.nanoTime();
            final int status = stream.synchronize(Math.max(1, Math.min(left, PeerMonitor.CHECK_NANOS)));
            if (status != TIMEOUT)
            {
                message[0] = status < 0 ? stream.lastError() : null;
                return status;
            }
            final String text = stream.lastError();
            if (text == null || !text.startsWith(SLICE_TIMED_OUT))
            {
                message[0] = text;
                return status;
            }
            if (deadline - System.nanoTime() <= 0)
            {
                return STILL_RUNNING;
            }
            between.run();
        }
    }
}
