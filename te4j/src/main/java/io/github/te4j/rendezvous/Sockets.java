package io.github.te4j.rendezvous;

import java.io.IOException;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

/** Socket, thread, text and deadline helpers shared by both sides of the rendezvous. */
final class Sockets
{
    private Sockets()
    {
    }

    /** A daemon thread named with the prefix that tests and thread dumps recognise. */
    static Thread daemon(final String name, final Runnable body)
    {
        final Thread t = new Thread(body, Rendezvous.THREAD_PREFIX + name);
        t.setDaemon(true);
        return t;
    }

    static void closeQuietly(final Socket s)
    {
        if (s == null)
        {
            return;
        }
        try
        {
            s.close();
        }
        catch (IOException ignored)
        {
            // nothing useful to do: the socket is being discarded
        }
    }

    static String describe(final Socket s)
    {
        final Object a = s.getRemoteSocketAddress();
        return a == null ? "unconnected socket" : a.toString();
    }

    static byte[] utf8(final String s)
    {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** The UTF-8 reason an ERROR frame carries. */
    static String reasonOf(final Frame f)
    {
        return new String(f.payload(), StandardCharsets.UTF_8);
    }

    static String opName(final byte type)
    {
        return type == Frame.BARRIER ? "barrier" : "allGather";
    }

    /** @return the deadline on System.nanoTime() of a call given {@code timeout} */
    static long deadlineOf(final Duration timeout)
    {
        Objects.requireNonNull(timeout, "timeout");
        if (timeout.isNegative() || timeout.isZero())
        {
            throw new IllegalArgumentException("timeout must be positive: " + timeout);
        }
        // Saturate so an absurdly long timeout cannot overflow nanoTime arithmetic.
        final long nanos = timeout.compareTo(Duration.ofDays(10_000)) > 0
                ? TimeUnit.DAYS.toNanos(10_000) : timeout.toNanos();
        return System.nanoTime() + nanos;
    }

    /**
     * @return the milliseconds left before {@code deadline}, rounded up and at least 1, or 0 once
     *         it passed: a 0 passed to connect() or setSoTimeout() would mean "wait forever"
     */
    static int millisLeft(final long deadline)
    {
        final long left = deadline - System.nanoTime();
        if (left <= 0)
        {
            return 0;
        }
        return (int) Math.max(1, Math.min(Integer.MAX_VALUE, TimeUnit.NANOSECONDS.toMillis(left) + 1));
    }
}
