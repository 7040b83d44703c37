package io.github.te4j.rendezvous;

import io.github.te4j.exchange.Deadline;
import io.github.te4j.PeerLostException;
import io.github.te4j.Te4jException;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A rank other than 0: one socket to rank 0, opened (with retries and backoff) by the constructor
 * and then used synchronously by the calling thread. No threads of its own.
 */
final class MemberLink implements StarRole
{
    // The rendezvous logs under one name, whichever of its parts speaks.
    private static final Logger LOG = LoggerFactory.getLogger(Rendezvous.class);

    private final RendezvousSettings settings;
    private final SessionState state;
    private final int rank;
    private final int port;
    private final String name;
    /** Guards writes; close() only tries it, so it never waits behind a large send. */
    private final ReentrantLock writeLock = new ReentrantLock();
    private volatile Socket socket;
    private volatile DeadlineInput raw;
    private volatile DataInputStream in;
    private volatile DataOutputStream out;

    MemberLink(final RendezvousSettings settings, final SessionState state, final int port)
    {
        this.settings = settings;
        this.state = state;
        this.rank = settings.rank;
        this.port = port;
        this.name = "rank 0 at " + settings.host + ":" + port;
        connect();
    }

    @Override
    public int port()
    {
        return port;
    }

    private void connect()
    {
        final Handshake handshake = new Handshake(settings);
        final long deadline = Deadline.after(settings.connectTimeout).nanoTime();
        long backoffMs = 20;
        int attempts = 0;
        IOException last = null;
        while (true)
        {
            // Read the clock once: a 0 passed to connect() or setSoTimeout() would mean "wait forever".
            final int left = Deadlines.millisLeft(deadline);
            if (left <= 0)
            {
                break;
            }
            final Socket s = new Socket();
            try
            {
                attempts++;
                s.setTcpNoDelay(true);
                s.setKeepAlive(true);
                s.connect(new InetSocketAddress(settings.host, port), Math.min(left, 5000));
                final DeadlineInput r = new DeadlineInput(s);
                // The handshake ends by the connect deadline whatever rank 0 (or a stranger
                // on its port) sends, and takes at most handshakeTimeout of it.
                r.deadline(Math.min(deadline, Deadline.after(settings.handshakeTimeout).nanoTime()));
                final DataInputStream i = new DataInputStream(new BufferedInputStream(r));
                final DataOutputStream o = new DataOutputStream(new BufferedOutputStream(s.getOutputStream()));
                handshake.join(i, o, name);
                r.deadline(DeadlineInput.NONE);
                this.socket = s;
                this.raw = r;
                this.in = i;
                this.out = o;
                LOG.info("rendezvous rank {} joined {} after {} attempt(s)", rank, name, attempts);
                return;
            }
            catch (RendezvousException e)
            {
                // An explicit refusal (wrong secret, duplicate rank, ...) will not change on retry.
                Sockets.closeQuietly(s);
                throw e;
            }
            catch (IOException e)
            {
                Sockets.closeQuietly(s);
                last = e;
                LOG.debug("rendezvous rank {}: attempt {} to reach {} failed: {}", rank, attempts, name,
                        e.toString());
            }
            final long sleep = Math.min(backoffMs + ThreadLocalRandom.current().nextLong(backoffMs / 2 + 1),
                    Deadlines.millisLeft(deadline));
            if (sleep <= 0)
            {
                break;
            }
            try
            {
                Thread.sleep(sleep);
            }
            catch (InterruptedException e)
            {
                Thread.currentThread().interrupt();
                throw new RendezvousException(name, "interrupted while connecting", e);
            }
            backoffMs = Math.min(backoffMs * 2, 1000);
        }
        throw new RendezvousTimeoutException(name, "connection to " + name + " (" + attempts
                + " attempts, last error: " + last + ")", List.of(0), settings.connectTimeout);
    }

    @Override
    public List<byte[]> collect(final byte type, final int s, final byte[] mine, final long deadline,
            final Duration timeout, final String what)
    {
        try
        {
            writeLock.lock();
            try
            {
                Frame.write(out, new Frame(type, rank, s, mine));
            }
            finally
            {
                writeLock.unlock();
            }
        }
        catch (IOException e)
        {
            throw lostOrClosed("sending " + what + " failed: " + e, e);
        }
        while (true)
        {
            final int left = Deadlines.millisLeft(deadline);
            if (left <= 0)
            {
                throw timedOut(what, timeout);
            }
            final Frame f;
            try
            {
                // The collective's deadline bounds the whole frame, not each read of it.
                raw.deadline(deadline);
                f = Frame.read(in, settings.maxFrameBytes, name);
            }
            catch (SocketTimeoutException e)
            {
                throw timedOut(what, timeout);
            }
            catch (RendezvousException e)
            {
                Sockets.closeQuietly(socket);
                throw e;
            }
            catch (IOException e)
            {
                throw lostOrClosed("connection failed during " + what + ": " + e, e);
            }
            if (f == null)
            {
                throw lostOrClosed("rank 0 closed the connection (EOF) during " + what, null);
            }
            switch (f.type())
            {
                case Frame.ERROR:
                    throw new RendezvousException(name, "rank 0 aborted " + what + ": " + Sockets.reasonOf(f));
                case Frame.BYE:
                    throw new PeerLostException(0, "rank 0 closed its rendezvous during " + what);
                case Frame.RESULT:
                    if (f.seq() != s)
                    {
                        Sockets.closeQuietly(socket);
                        throw new RendezvousException(name, "sequence mismatch: result for op #" + f.seq()
                                + " while waiting for " + what);
                    }
                    if (type == Frame.BARRIER)
                    {
                        if (f.payload().length != 0)
                        {
                            Sockets.closeQuietly(socket);
                            throw new RendezvousException(name, "barrier RESULT with a payload");
                        }
                        return List.of();
                    }
                    try
                    {
                        return GatherResult.decode(f.payload(), settings.worldSize, name);
                    }
                    catch (RendezvousException e)
                    {
                        Sockets.closeQuietly(socket);
                        throw e;
                    }
                default:
                    Sockets.closeQuietly(socket);
                    throw new RendezvousException(name, "unexpected " + Frame.typeName(f.type())
                            + " while waiting for " + what);
            }
        }
    }

    private RendezvousTimeoutException timedOut(final String what, final Duration timeout)
    {
        return new RendezvousTimeoutException(name, "the result of " + what
                + " from rank 0 (rank 0 may itself be waiting for other ranks)", List.of(0), timeout);
    }

    private Te4jException lostOrClosed(final String reason, final IOException cause)
    {
        if (state.closed())
        {
            return new RendezvousException(null, "closed: " + reason, cause);
        }
        return new PeerLostException(0, reason);
    }

    /** Rank 0 learns of failures itself and tells the others; a member has no one to tell. */
    @Override
    public void abort(final Te4jException e)
    {
    }

    @Override
    public void close()
    {
        if (writeLock.tryLock())
        {
            try
            {
                Frame.write(out, new Frame(Frame.BYE, rank, 0, new byte[0]));
            }
            catch (IOException ignored)
            {
                // rank 0 may be gone already; closing is all that is left
            }
            finally
            {
                writeLock.unlock();
            }
        }
        Sockets.closeQuietly(socket);
    }
}
