package io.github.te4j.rendezvous;

import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.util.concurrent.TimeUnit;

/**
 * A socket's input bounded by one overall deadline ({@link System#nanoTime()}), not by a
 * timeout per read: before every read the socket timeout is set to the time left, so a peer
 * that sends one byte just before each read timeout expires cannot stretch a handshake or a
 * collective past its deadline. Expiry is a {@link SocketTimeoutException}.
 */
final class DeadlineInput extends InputStream
{
    /** No deadline: reads wait until data, EOF or an error. */
    static final long NONE = Long.MAX_VALUE;

    private final Socket socket;
    private final InputStream in;
    private volatile long deadline = NONE;

    DeadlineInput(final Socket socket) throws IOException
    {
        this.socket = socket;
        this.in = socket.getInputStream();
    }

    /** Bounds every read from now on by {@code nanoTimeDeadline} ({@link #NONE}: unbounded). */
    void deadline(final long nanoTimeDeadline)
    {
        this.deadline = nanoTimeDeadline;
    }

    @Override
    public int read() throws IOException
    {
        final byte[] one = new byte[1];
        final int n = read(one, 0, 1);
        return n < 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public int read(final byte[] b, final int off, final int len) throws IOException
    {
        if (len == 0)
        {
            return 0;
        }
        final long d = deadline;
        if (d == NONE)
        {
            socket.setSoTimeout(0);
            return in.read(b, off, len);
        }
        final long left = d - System.nanoTime();
        if (left <= 0)
        {
            throw new SocketTimeoutException("deadline passed");
        }
        // At least 1 ms: a socket timeout of 0 would mean "wait forever".
        socket.setSoTimeout((int)Math.max(1, Math.min(Integer.MAX_VALUE, TimeUnit.NANOSECONDS.toMillis(left) + 1)));
        return in.read(b, off, len);
    }

    @Override
    public int available() throws IOException
    {
        return in.available();
    }

    @Override
    public void close() throws IOException
    {
        in.close();
    }
}
