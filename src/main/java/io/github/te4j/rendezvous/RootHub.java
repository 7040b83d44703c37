package io.github.te4j.rendezvous;

import io.github.te4j.exchange.Deadline;
import io.github.te4j.PeerLostException;
import io.github.te4j.Te4jException;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Rank 0: listens, runs each new connection's handshake on a thread of its own, tracks the joined
 * ranks and runs the collectives as the hub of the star (collects every rank's contribution,
 * sends the full set back).
 */
final class RootHub implements StarRole
{
    // The rendezvous logs under one name, whichever of its parts speaks.
    private static final Logger LOG = LoggerFactory.getLogger(Rendezvous.class);
    private static final long JOIN_BUDGET_NANOS = TimeUnit.SECONDS.toNanos(5);

    private final RendezvousSettings settings;
    private final SessionState state;
    private final Handshake handshake;
    private final int worldSize;
    private final ServerSocket server;
    private final int port;
    private final Thread acceptor;

    private final Object lock = new Object();
    // All guarded by lock.
    private final PeerConn[] peers;
    private final String[] lostReason;
    private final Contribution[] pending;
    private int completed;
    private final HandshakeSlots handshaking = new HandshakeSlots();
    private final Set<Socket> sockets = new HashSet<>();
    private final Set<Thread> threads = new HashSet<>();

    /** A contribution to the next collective that arrived before rank 0 collected it. */
    private record Contribution(byte type, byte[] payload)
    {
    }

    RootHub(final RendezvousSettings settings, final SessionState state, final int requestedPort)
    {
        this.settings = settings;
        this.state = state;
        this.handshake = new Handshake(settings);
        this.worldSize = settings.worldSize;
        this.peers = new PeerConn[worldSize];
        this.lostReason = new String[worldSize];
        this.pending = new Contribution[worldSize];
        final String bindAddress = settings.bindAddress;
        ServerSocket ss = null;
        try
        {
            ss = new ServerSocket();
            // A restarted rank 0 must be able to rebind while old connections sit in TIME_WAIT.
            ss.setReuseAddress(true);
            ss.bind(new InetSocketAddress(InetAddress.getByName(bindAddress), requestedPort), 128);
        }
        catch (IOException e)
        {
            if (ss != null)
            {
                try
                {
                    ss.close();
                }
                catch (IOException ignored)
                {
                    // already failing
                }
            }
            throw new RendezvousException(bindAddress + ":" + requestedPort, "rank 0 cannot listen: " + e, e);
        }
        this.server = ss;
        this.port = ss.getLocalPort();
        this.acceptor = Sockets.daemon("accept-" + port, this::acceptLoop);
        acceptor.start();
        LOG.info("rendezvous rank 0 listening on {}:{} for {} ranks (session {}, {})", bindAddress, port,
                worldSize, settings.session, settings.hasSecret() ? "shared secret" : "no secret");
    }

    @Override
    public int port()
    {
        return port;
    }

    private void acceptLoop()
    {
        while (!state.closed())
        {
            final Socket s;
            try
            {
                s = server.accept();
            }
            catch (IOException e)
            {
                if (!state.closed())
                {
                    LOG.warn("rendezvous accept on port {} failed: {}", port, e.toString());
                    if (server.isClosed())
                    {
                        return;
                    }
                    continue;
                }
                return;
            }
            synchronized (lock)
            {
                if (state.closed())
                {
                    Sockets.closeQuietly(s);
                    return;
                }
                handshaking.admit(s);
                sockets.add(s);
                // Threads stay in the set until they are dead, so close() joins every live one.
                threads.removeIf(old -> !old.isAlive());
                final Thread t = Sockets.daemon("conn-" + Sockets.describe(s), () -> servePeer(s));
                threads.add(t);
                // Started under the lock so close() never snapshots a thread that starts later.
                t.start();
            }
        }
    }

    private void servePeer(final Socket s)
    {
        final String remote = Sockets.describe(s);
        PeerConn conn = null;
        DataOutputStream out = null;
        try
        {
            s.setTcpNoDelay(true);
            s.setKeepAlive(true);
            final DeadlineInput raw = new DeadlineInput(s);
            // One deadline for the whole handshake: a stranger dripping bytes cannot stretch it.
            raw.deadline(Deadline.after(settings.handshakeTimeout).nanoTime());
            final DataInputStream in = new DataInputStream(new BufferedInputStream(raw));
            out = new DataOutputStream(new BufferedOutputStream(s.getOutputStream()));
            conn = join(s, in, out, remote);
            synchronized (lock)
            {
                handshaking.release(s);
            }
            Thread.currentThread().setName(Rendezvous.THREAD_PREFIX + "rank-" + conn.rank);
            raw.deadline(DeadlineInput.NONE);
            readLoop(conn, in);
        }
        catch (RendezvousException e)
        {
            if (conn == null)
            {
                LOG.warn("rendezvous rejected connection from {}: {}", remote, e.reason());
            }
            else
            {
                LOG.warn("rendezvous dropped {} after protocol error: {}", conn.name, e.reason());
                markLost(conn.rank, "dropped after protocol error: " + e.reason());
            }
            sendErrorQuietly(conn, out, e.reason());
        }
        catch (IOException e)
        {
            if (conn == null)
            {
                if (!state.closed())
                {
                    LOG.warn("rendezvous connection from {} failed during the handshake: {}", remote, e.toString());
                }
            }
            else
            {
                markLost(conn.rank, "connection failed: " + e);
            }
        }
        catch (RuntimeException e)
        {
            LOG.error("rendezvous connection from {} failed unexpectedly", remote, e);
            if (conn != null)
            {
                markLost(conn.rank, "internal error: " + e);
            }
        }
        finally
        {
            Sockets.closeQuietly(s);
            synchronized (lock)
            {
                handshaking.release(s);
                sockets.remove(s);
            }
        }
    }

    private void sendErrorQuietly(final PeerConn conn, final DataOutputStream out, final String reason)
    {
        if (out == null || state.closed())
        {
            return;
        }
        try
        {
            final Frame f = new Frame(Frame.ERROR, 0, 0, Sockets.utf8(reason));
            if (conn != null)
            {
                conn.send(f);
            }
            else
            {
                Frame.write(out, f);
            }
        }
        catch (IOException ignored)
        {
            // the peer is being dropped anyway; telling it why is best effort
        }
    }

    /** The handshake, then the claim of the rank's slot (free, session still usable), then WELCOME. */
    private PeerConn join(final Socket s, final DataInputStream in, final DataOutputStream out, final String remote)
            throws IOException
    {
        final Handshake.Accepted a = handshake.accept(in, out, remote);
        final int r = a.rank();
        final String who = a.who();
        final PeerConn conn = new PeerConn(r, s, out);
        synchronized (lock)
        {
            if (state.closed())
            {
                throw new RendezvousException(who, "rank 0 is closing");
            }
            final Te4jException failed = state.failure();
            if (failed != null)
            {
                throw new RendezvousException(who, "the session already failed: " + failed.getMessage());
            }
            if (peers[r] != null)
            {
                throw new RendezvousException(who, lostReason[r] != null
                        ? "rank " + r + " already joined and was lost (" + lostReason[r] + ")"
                        : "duplicate rank " + r + ": already connected from " + Sockets.describe(peers[r].socket));
            }
            peers[r] = conn;
            lock.notifyAll();
        }
        conn.send(handshake.welcome(a));
        LOG.info("rendezvous rank {} joined from {}", r, remote);
        return conn;
    }

    private void readLoop(final PeerConn conn, final DataInputStream in) throws IOException
    {
        while (true)
        {
            final Frame f = Frame.read(in, settings.maxFrameBytes, conn.name);
            if (f == null)
            {
                markLost(conn.rank, state.closed() ? "rank 0 closed" : "disconnected (EOF)");
                return;
            }
            if (f.rank() != conn.rank)
            {
                throw new RendezvousException(conn.name, "frame claims rank " + f.rank()
                        + " on the connection of rank " + conn.rank);
            }
            switch (f.type())
            {
                case Frame.BYE:
                    LOG.debug("rendezvous {} said BYE", conn.name);
                    markLost(conn.rank, "closed its rendezvous (BYE)");
                    return;
                case Frame.GATHER:
                case Frame.BARRIER:
                    contribute(conn, f);
                    break;
                default:
                    throw new RendezvousException(conn.name, "unexpected " + Frame.typeName(f.type())
                            + " after the handshake");
            }
        }
    }

    private void contribute(final PeerConn conn, final Frame f)
    {
        synchronized (lock)
        {
            final int expected = completed + 1;
            if (f.seq() != expected)
            {
                throw new RendezvousException(conn.name, "sequence mismatch: got op #" + f.seq()
                        + ", expected #" + expected);
            }
            if (pending[conn.rank] != null)
            {
                throw new RendezvousException(conn.name, "second contribution to op #" + f.seq());
            }
            pending[conn.rank] = new Contribution(f.type(), f.payload());
            lock.notifyAll();
        }
    }

    private void markLost(final int r, final String reason)
    {
        synchronized (lock)
        {
            if (lostReason[r] == null)
            {
                lostReason[r] = reason;
            }
            lock.notifyAll();
        }
        if (!state.closed())
        {
            LOG.debug("rendezvous rank {} lost: {}", r, reason);
        }
    }

    @Override
    public List<byte[]> collect(final byte type, final int s, final byte[] mine, final long deadline,
            final Duration timeout, final String what)
    {
        final byte[][] gathered = new byte[worldSize][];
        final PeerConn[] targets;
        synchronized (lock)
        {
            while (true)
            {
                if (state.closed())
                {
                    throw new RendezvousException(null, "closed while waiting for " + what);
                }
                final List<Integer> missing = new ArrayList<>();
                for (int r = 1; r < worldSize; r++)
                {
                    if (lostReason[r] != null)
                    {
                        throw new PeerLostException(r, lostReason[r] + " (during " + what + ")");
                    }
                    if (pending[r] == null)
                    {
                        missing.add(r);
                    }
                }
                if (missing.isEmpty())
                {
                    break;
                }
                final long left = deadline - System.nanoTime();
                if (left <= 0)
                {
                    final List<Integer> never = new ArrayList<>();
                    for (int r : missing)
                    {
                        if (peers[r] == null)
                        {
                            never.add(r);
                        }
                    }
                    throw new RendezvousTimeoutException(null, what
                            + (never.isEmpty() ? "" : " (never connected: " + never + ")"), missing, timeout);
                }
                try
                {
                    TimeUnit.NANOSECONDS.timedWait(lock, left);
                }
                catch (InterruptedException e)
                {
                    Thread.currentThread().interrupt();
                    throw new RendezvousException(null, "interrupted while waiting for " + what, e);
                }
            }
            long total = 4;
            for (int r = 1; r < worldSize; r++)
            {
                final Contribution c = pending[r];
                if (c.type() != type)
                {
                    throw new RendezvousException("rank " + r, "called " + Frame.opName(c.type()) + " as op #" + s
                            + " while rank 0 called " + Frame.opName(type));
                }
                gathered[r] = c.payload();
                total += 4L + c.payload().length;
            }
            gathered[0] = mine.clone();
            total += 4L + mine.length;
            if (type == Frame.GATHER && total > settings.maxFrameBytes)
            {
                throw new RendezvousException(null, "gathered result of " + total
                        + " bytes exceeds the frame limit of " + settings.maxFrameBytes + " bytes in " + what);
            }
            // Advance before sending: a rank that has its result may send its next op at once.
            Arrays.fill(pending, null);
            completed = s;
            targets = peers.clone();
        }
        final byte[] payload = type == Frame.GATHER ? GatherResult.encode(gathered) : new byte[0];
        final Frame result = new Frame(Frame.RESULT, 0, s, payload);
        for (int r = 1; r < worldSize; r++)
        {
            try
            {
                targets[r].send(result);
            }
            catch (IOException e)
            {
                if (state.closed())
                {
                    throw new RendezvousException(null, "closed during " + what, e);
                }
                throw new PeerLostException(r, "sending the result of " + what + " failed: " + e);
            }
        }
        return type == Frame.GATHER ? Collections.unmodifiableList(Arrays.asList(gathered)) : List.of();
    }

    /** Tells every joined rank why the session failed, so they do not wait out their timeouts. */
    @Override
    public void abort(final Te4jException e)
    {
        final PeerConn[] targets;
        synchronized (lock)
        {
            targets = peers.clone();
        }
        final Frame err = new Frame(Frame.ERROR, 0, 0, Sockets.utf8(e.getMessage()));
        for (int r = 1; r < worldSize; r++)
        {
            if (targets[r] == null)
            {
                continue;
            }
            try
            {
                targets[r].send(err);
            }
            catch (IOException ignored)
            {
                // that rank is gone already; the others still get told
            }
        }
    }

    @Override
    public void close()
    {
        final List<Socket> toClose;
        final List<Thread> toJoin;
        synchronized (lock)
        {
            lock.notifyAll();
            toClose = new ArrayList<>(sockets);
            toJoin = new ArrayList<>(threads);
        }
        try
        {
            server.close();
        }
        catch (IOException e)
        {
            LOG.debug("closing the rendezvous listener failed: {}", e.toString());
        }
        for (Socket s : toClose)
        {
            Sockets.closeQuietly(s);
        }
        toJoin.add(acceptor);
        final long until = System.nanoTime() + JOIN_BUDGET_NANOS;
        for (Thread t : toJoin)
        {
            if (t == Thread.currentThread())
            {
                continue;
            }
            try
            {
                TimeUnit.NANOSECONDS.timedJoin(t, Math.max(1, until - System.nanoTime()));
            }
            catch (InterruptedException e)
            {
                Thread.currentThread().interrupt();
                break;
            }
            if (t.isAlive())
            {
                LOG.warn("rendezvous thread {} did not stop", t.getName());
            }
        }
    }
}
