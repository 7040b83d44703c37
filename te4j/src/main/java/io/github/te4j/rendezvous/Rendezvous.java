package io.github.te4j.rendezvous;

import io.github.te4j.PeerLostException;
import io.github.te4j.Te4jException;
import io.github.te4j.exchange.HandleExchange;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.ReentrantLock;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An embedded TCP rendezvous: rank 0 listens, the other ranks connect to it, and collectives go
 * through rank 0 as a star (rank 0 collects every rank's blob and sends the full set back).
 *
 * <pre>{@code
 * try (Rendezvous rv = Rendezvous.builder().rank(r).worldSize(n)
 *         .endpoint("10.0.0.1:29500").bindAddress("0.0.0.0").secret(jobSecret).build()) {
 *     List<byte[]> handles = rv.allGather(myHandle, Duration.ofSeconds(30));
 *     ...
 *     rv.barrier(Duration.ofSeconds(30));
 * }
 * }</pre>
 *
 * <h2>Joining</h2>
 * Rank 0's {@code build()} binds its listening socket (by default on 127.0.0.1; see
 * {@link Builder#bindAddress}) and returns at once; the other ranks join in the background and
 * rank 0's first collective waits for them. The other ranks' {@code build()} connects, retrying
 * with exponential backoff until {@link Builder#connectTimeout} (rank 0 may start later), and
 * performs the handshake:
 * <pre>
 *   rank r                                   rank 0
 *     | HELLO  worldSize, flags, nonceC, session |   checks rank range, worldSize, session,
 *     |---------------------------------------->|   secret-or-not agreement
 *     |              CHALLENGE  nonceS          |
 *     |&lt;----------------------------------------|
 *     | AUTH   HMAC(secret, "te4j-rdv-client" .. transcript)   (empty without a secret)
 *     |---------------------------------------->|   checks the MAC, then that rank r is free
 *     |   WELCOME  HMAC(secret, "te4j-rdv-server" .. transcript) (empty without a secret)
 *     |&lt;----------------------------------------|   rank r checks the MAC: rank 0 knows it too
 * </pre>
 * transcript = nonceS | nonceC | rank | worldSize | session (UTF-8). Any refusal is an ERROR frame
 * with the reason, then the connection is closed; a refused rank's {@code build()} throws at once
 * (no retry). Without a secret, anyone who can reach the port and knows worldSize and the session
 * name can claim a free rank: use a secret on networks you do not trust.
 *
 * <h2>Frame format</h2>
 * Every message is one frame, integers big-endian:
 * <pre>
 *   0        4        6    7    8        12       16       20
 *   +--------+--------+----+----+--------+--------+--------+-----------------+
 *   | magic  |version |type|flag|  rank  |  seq   | length |  payload ...    |
 *   | "TE4R" |   1    |    | 0  | sender | op no. | bytes  |  length bytes   |
 *   +--------+--------+----+----+--------+--------+--------+-----------------+
 *    int32    int16    int8 int8  int32    int32    int32
 * </pre>
 * Types: 1 HELLO, 2 CHALLENGE, 3 AUTH, 4 WELCOME, 5 ERROR (payload: UTF-8 reason), 6 GATHER
 * (payload: the blob), 7 BARRIER (empty), 8 RESULT (payload for a gather: int32 count, then per
 * rank int32 length + bytes; empty for a barrier), 9 BYE (the sender is closing). {@code seq} is 0
 * during the handshake and the 1-based number of the collective afterwards; every rank counts its
 * collectives, so rank 0 rejects a contribution whose number is not the next one. {@code length}
 * is bounded by {@link Builder#maxFrameBytes} (default 64 MiB; 4 KiB during the handshake) and
 * checked before anything is allocated.
 *
 * <p>A frame with a wrong magic, version, type, flags byte or length, a truncated frame, a rank
 * out of range or not matching the connection, a duplicate rank, or a sequence mismatch is a
 * {@link RendezvousException} naming the peer and the reason, and the offending connection is
 * dropped. On rank 0 a stranger's connection is handled on its own thread, so a stranger that
 * sends garbage, nothing, or its bytes slowly is rejected (logged, and dropped at most
 * {@link Builder#handshakeTimeout} after its accept, however it paces its bytes) while the real
 * ranks carry on. A rank dropped after joining is
 * lost to the session: the next collective fails with a {@link PeerLostException}.
 *
 * <h2>Failures</h2>
 * Every wait has a deadline, an overall one for the call (a connect, a collective), checked
 * before every read, so a peer that drips bytes cannot stretch it; on expiry a {@link RendezvousTimeoutException} names what was awaited
 * and the missing ranks (on ranks other than 0, the missing rank is 0, which may itself be waiting
 * for others). A peer that disconnects is a {@link PeerLostException}. When a collective fails on
 * rank 0 it sends the reason to all ranks in an ERROR frame so they fail fast with it. After any
 * failure this instance is unusable.
 *
 * <h2>Threads</h2>
 * Rank 0 runs one accept thread and one thread per connection, all daemon threads named
 * {@code te4j-rendezvous-...}: at most {@code worldSize - 1} joined ranks plus 64 connections in
 * their handshake (16 from one source address; past a cap the oldest pending handshake is
 * dropped for the new one). Other ranks use no threads of their own. {@link #close()} closes all
 * sockets and joins those threads.
 */
public final class Rendezvous implements HandleExchange
{

    /** Largest supported world size. */
    public static final int MAX_WORLD_SIZE = 64;
    /** Default bound on a frame's payload: 64 MiB. */
    public static final int DEFAULT_MAX_FRAME_BYTES = 64 << 20;
    /** Default bind address of rank 0: loopback. */
    public static final String DEFAULT_BIND_ADDRESS = "127.0.0.1";
    /** Default session name. */
    public static final String DEFAULT_SESSION = "te4j";

    static final String THREAD_PREFIX = "te4j-rendezvous-";

    private static final Logger LOG = LoggerFactory.getLogger(Rendezvous.class);
    private static final int HANDSHAKE_MAX_FRAME = 4096;
    private static final int NONCE_BYTES = 16;
    private static final int MAX_SESSION_BYTES = 256;
    /**
     * Connections in their handshake at once, overall and from one source address; past either
     * cap the oldest such pending handshake is dropped for the new one (a flood and slowloris
     * guard: a stranger cannot keep a real rank out by holding slots, since a real rank's
     * handshake takes a round trip and strangers are dropped oldest first). Bounds the handshake
     * threads as well.
     */
    static final int MAX_HANDSHAKING = 64;
    static final int MAX_HANDSHAKING_PER_SOURCE = 16;
    private static final byte FLAG_SECRET = 1;
    private static final byte[] CLIENT_LABEL = "te4j-rdv-client".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] SERVER_LABEL = "te4j-rdv-server".getBytes(StandardCharsets.US_ASCII);
    private static final long JOIN_BUDGET_NANOS = TimeUnit.SECONDS.toNanos(5);
    private static final SecureRandom RANDOM = new SecureRandom();

    private final int rank;
    private final int worldSize;
    private final String host;
    private final String bindAddress;
    private final byte[] secret;
    private final String session;
    private final byte[] sessionBytes;
    private final Duration connectTimeout;
    private final Duration defaultTimeout;
    private final Duration handshakeTimeout;
    private final int maxFrameBytes;

    /** Serializes collectives: they must be issued in the same order on every rank. */
    private final Object opLock = new Object();
    private int seq;
    private volatile RendezvousException failure;
    private final AtomicBoolean closed = new AtomicBoolean();

    private final Root root;
    private final Member member;

    private Rendezvous(final Builder b, final int port)
    {
        this.rank = b.rank;
        this.worldSize = b.worldSize;
        this.host = b.host;
        this.bindAddress = b.bindAddress;
        this.secret = b.secret == null ? null : b.secret.clone();
        this.session = b.session;
        this.sessionBytes = b.session.getBytes(StandardCharsets.UTF_8);
        this.connectTimeout = b.connectTimeout;
        this.defaultTimeout = b.defaultTimeout;
        this.handshakeTimeout = b.handshakeTimeout;
        this.maxFrameBytes = b.maxFrameBytes;
        if (rank == 0)
        {
            this.member = null;
            this.root = new Root(port);
        }
        else
        {
            this.root = null;
            this.member = new Member(port);
        }
    }

    /** @return a new builder */
    public static Builder builder()
    {
        return new Builder();
    }

    @Override
    public int rank()
    {
        return rank;
    }

    @Override
    public int worldSize()
    {
        return worldSize;
    }

    @Override
    public Duration defaultTimeout()
    {
        return defaultTimeout;
    }

    /**
     * @return on rank 0 the port actually listened on (the ephemeral one when 0 was asked for); on
     *         other ranks the port of rank 0 they connected to
     */
    public int port()
    {
        return root != null ? root.port : member.port;
    }

    /** @return {@code host:port} that the other ranks connect to (with the actual port on rank 0) */
    public String endpoint()
    {
        String h = host.indexOf(':') >= 0 ? "[" + host + "]" : host;
        return h + ":" + port();
    }

    @Override
    public List<byte[]> allGather(final byte[] mine, final Duration timeout)
    {
        Objects.requireNonNull(mine, "mine");
        if (mine.length > maxFrameBytes)
        {
            throw new IllegalArgumentException("blob of " + mine.length + " bytes exceeds the frame limit of "
                    + maxFrameBytes + " bytes");
        }
        return collective(Frame.GATHER, mine, timeout);
    }

    @Override
    public void barrier(final Duration timeout)
    {
        collective(Frame.BARRIER, new byte[0], timeout);
    }

    /**
     * Closes the sockets and joins this instance's threads. A collective blocked in another thread
     * fails with a {@link RendezvousException}. Idempotent.
     */
    @Override
    public void close()
    {
        if (!closed.compareAndSet(false, true))
        {
            return;
        }
        if (root != null)
        {
            root.close();
        }
        else
        {
            member.close();
        }
        LOG.debug("rendezvous rank {} closed", rank);
    }

    @Override
    public String toString()
    {
        return "Rendezvous[rank " + rank + "/" + worldSize + ", " + endpoint() + ", session " + session + "]";
    }

    private List<byte[]> collective(final byte type, final byte[] mine, final Duration timeout)
    {
        long deadline = deadlineOf(timeout);
        synchronized (opLock)
        {
            if (closed.get())
            {
                throw new IllegalStateException("rendezvous is closed");
            }
            RendezvousException earlier = failure;
            if (earlier != null)
            {
                throw new RendezvousException(null, "rendezvous is unusable after an earlier failure: "
                        + earlier.getMessage(), earlier);
            }
            int s = ++seq;
            String what = opName(type) + " #" + s;
            try
            {
                return root != null
                        ? root.collect(type, s, mine, deadline, timeout, what)
                        : member.collect(type, s, mine, deadline, timeout, what);
            }
            catch (RendezvousException e)
            {
                failure = e;
                if (root != null && !closed.get())
                {
                    root.abortPeers(e);
                }
                throw e;
            }
        }
    }

    private static long deadlineOf(final Duration timeout)
    {
        Objects.requireNonNull(timeout, "timeout");
        if (timeout.isNegative() || timeout.isZero())
        {
            throw new IllegalArgumentException("timeout must be positive: " + timeout);
        }
        // Saturate so an absurdly long timeout cannot overflow nanoTime arithmetic.
        long nanos = timeout.compareTo(Duration.ofDays(10_000)) > 0 ? TimeUnit.DAYS.toNanos(10_000) : timeout.toNanos();
        return System.nanoTime() + nanos;
    }

    private static String opName(final byte type)
    {
        return type == Frame.BARRIER ? "barrier" : "allGather";
    }

    private static int millisLeft(final long deadline)
    {
        long left = deadline - System.nanoTime();
        if (left <= 0)
        {
            return 0;
        }
        return (int) Math.max(1, Math.min(Integer.MAX_VALUE, TimeUnit.NANOSECONDS.toMillis(left) + 1));
    }

    private byte[] mac(final byte[] label, final byte[] serverNonce, final byte[] clientNonce, final int peerRank)
    {
        try
        {
            Mac m = Mac.getInstance("HmacSHA256");
            m.init(new SecretKeySpec(secret, "HmacSHA256"));
            m.update(label);
            m.update(serverNonce);
            m.update(clientNonce);
            m.update(ByteBuffer.allocate(8).putInt(peerRank).putInt(worldSize).array());
            m.update(sessionBytes);
            return m.doFinal();
        }
        catch (GeneralSecurityException e)
        {
            throw new IllegalStateException("HmacSHA256 unavailable", e);
        }
    }

    private static byte[] nonce()
    {
        byte[] n = new byte[NONCE_BYTES];
        RANDOM.nextBytes(n);
        return n;
    }

    private static Thread daemon(final String name, final Runnable body)
    {
        Thread t = new Thread(body, THREAD_PREFIX + name);
        t.setDaemon(true);
        return t;
    }

    private static void closeQuietly(final Socket s)
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

    private static String describe(final Socket s)
    {
        Object a = s.getRemoteSocketAddress();
        return a == null ? "unconnected socket" : a.toString();
    }

    private static byte[] utf8(final String s)
    {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static String reasonOf(final Frame f)
    {
        return new String(f.payload(), StandardCharsets.UTF_8);
    }

    static byte[] encodeResult(final byte[][] blobs)
    {
        long total = 4;
        for (byte[] b : blobs)
        {
            total += 4L + b.length;
        }
        ByteBuffer buf = ByteBuffer.allocate((int) total);
        buf.putInt(blobs.length);
        for (byte[] b : blobs)
        {
            buf.putInt(b.length).put(b);
        }
        return buf.array();
    }

    static List<byte[]> decodeResult(final byte[] payload, final int expectedCount, final String peer)
    {
        ByteBuffer buf = ByteBuffer.wrap(payload);
        if (buf.remaining() < 4)
        {
            throw new RendezvousException(peer, "RESULT payload too short");
        }
        int count = buf.getInt();
        if (count != expectedCount)
        {
            throw new RendezvousException(peer, "RESULT carries " + count + " blobs, expected " + expectedCount);
        }
        byte[][] out = new byte[count][];
        for (int i = 0; i < count; i++)
        {
            if (buf.remaining() < 4)
            {
                throw new RendezvousException(peer, "RESULT truncated at blob " + i);
            }
            int len = buf.getInt();
            if (len < 0 || len > buf.remaining())
            {
                throw new RendezvousException(peer, "RESULT blob " + i + " has bad length " + len);
            }
            out[i] = new byte[len];
            buf.get(out[i]);
        }
        if (buf.hasRemaining())
        {
            throw new RendezvousException(peer, "RESULT has " + buf.remaining() + " trailing bytes");
        }
        return Collections.unmodifiableList(Arrays.asList(out));
    }

    private byte[] encodeHello(final byte[] clientNonce)
    {
        ByteBuffer b = ByteBuffer.allocate(4 + 1 + NONCE_BYTES + 2 + sessionBytes.length);
        b.putInt(worldSize).put(secret != null ? FLAG_SECRET : 0).put(clientNonce);
        b.putShort((short) sessionBytes.length).put(sessionBytes);
        return b.array();
    }

    // ---------------------------------------------------------------------------------------------
    // Rank 0

    /** A joined rank's connection, as seen by rank 0. */
    private static final class PeerConn
    {
        final int rank;
        final Socket socket;
        final DataOutputStream out;
        final String name;

        PeerConn(final int rank, final Socket socket, final DataOutputStream out)
        {
            this.rank = rank;
            this.socket = socket;
            this.out = out;
            this.name = "rank " + rank + " (" + describe(socket) + ")";
        }

        void send(final Frame f) throws IOException
        {
            synchronized (out)
            {
                Frame.write(out, f);
            }
        }
    }

    /** A contribution to the next collective that arrived before rank 0 collected it. */
    private record Contribution(byte type, byte[] payload)
    {
    }

    /** Rank 0: accepts connections, tracks the joined ranks, runs collectives as the hub. */
    private final class Root
    {
        final ServerSocket server;
        final int port;
        final Thread acceptor;

        final Object lock = new Object();
        // All guarded by lock.
        final PeerConn[] peers = new PeerConn[worldSize];
        final String[] lostReason = new String[worldSize];
        final Contribution[] pending = new Contribution[worldSize];
        int completed;
        /** Connections in their handshake, oldest first. */
        final ArrayDeque<Socket> handshaking = new ArrayDeque<>();
        /** Pending handshakes dropped to make room (strangers, or a flood). */
        int evicted;
        final Set<Socket> sockets = new HashSet<>();
        final Set<Thread> threads = new HashSet<>();

        Root(final int requestedPort)
        {
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
            this.acceptor = daemon("accept-" + port, this::acceptLoop);
            acceptor.start();
            LOG.info("rendezvous rank 0 listening on {}:{} for {} ranks (session {}, {})", bindAddress, port,
                    worldSize, session, secret != null ? "shared secret" : "no secret");
        }

        private void acceptLoop()
        {
            while (!closed.get())
            {
                Socket s;
                try
                {
                    s = server.accept();
                }
                catch (IOException e)
                {
                    if (!closed.get())
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
                Thread t;
                synchronized (lock)
                {
                    if (closed.get())
                    {
                        closeQuietly(s);
                        return;
                    }
                    evictForNewHandshake(s);
                    handshaking.addLast(s);
                    sockets.add(s);
                    // Threads stay in the set until they are dead, so close() joins every live one.
                    threads.removeIf(old -> !old.isAlive());
                    t = daemon("conn-" + describe(s), () -> servePeer(s));
                    threads.add(t);
                    // Started under the lock so close() never snapshots a thread that starts later.
                    t.start();
                }
            }
        }

        /**
         * Makes room for {@code s}'s handshake under the caps: drops the oldest pending handshake
         * from the same source when that source is at its cap, else the oldest overall when all
         * slots are taken. Under lock.
         */
        private void evictForNewHandshake(final Socket s)
        {
            InetAddress source = s.getInetAddress();
            Socket oldestSameSource = null;
            int sameSource = 0;
            for (Socket p : handshaking)
            {
                if (Objects.equals(p.getInetAddress(), source))
                {
                    if (oldestSameSource == null)
                    {
                        oldestSameSource = p;
                    }
                    sameSource++;
                }
            }
            Socket victim = sameSource >= MAX_HANDSHAKING_PER_SOURCE ? oldestSameSource
                    : handshaking.size() >= MAX_HANDSHAKING ? handshaking.peekFirst() : null;
            if (victim != null)
            {
                handshaking.remove(victim);
                evicted++;
                LOG.warn("rendezvous dropped the pending handshake of {} for a new connection from {} ({} pending, {}"
                        + " from that source)", describe(victim), describe(s), handshaking.size() + 1, sameSource);
                // Its thread's read fails at once and the thread ends.
                closeQuietly(victim);
            }
        }

        private void servePeer(final Socket s)
        {
            String remote = describe(s);
            PeerConn conn = null;
            DataOutputStream out = null;
            try
            {
                s.setTcpNoDelay(true);
                s.setKeepAlive(true);
                DeadlineInput raw = new DeadlineInput(s);
                // One deadline for the whole handshake: a stranger dripping bytes cannot stretch it.
                raw.deadline(System.nanoTime() + handshakeTimeout.toNanos());
                DataInputStream in = new DataInputStream(new BufferedInputStream(raw));
                out = new DataOutputStream(new BufferedOutputStream(s.getOutputStream()));
                conn = handshake(s, in, out, remote);
                synchronized (lock)
                {
                    handshaking.remove(s);
                }
                Thread.currentThread().setName(THREAD_PREFIX + "rank-" + conn.rank);
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
                    if (!closed.get())
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
                closeQuietly(s);
                synchronized (lock)
                {
                    handshaking.remove(s);
                    sockets.remove(s);
                }
            }
        }

        private void sendErrorQuietly(final PeerConn conn, final DataOutputStream out, final String reason)
        {
            if (out == null || closed.get())
            {
                return;
            }
            try
            {
                Frame f = new Frame(Frame.ERROR, 0, 0, utf8(reason));
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

        private PeerConn handshake(final Socket s, final DataInputStream in, final DataOutputStream out, final String remote)
                throws IOException
        {
            Frame hello = Frame.read(in, HANDSHAKE_MAX_FRAME, remote);
            if (hello == null)
            {
                throw new EOFException("closed before HELLO");
            }
            if (hello.type() != Frame.HELLO)
            {
                throw new RendezvousException(remote, "expected HELLO, got " + Frame.typeName(hello.type()));
            }
            int r = hello.rank();
            String who = "rank " + r + " (" + remote + ")";
            ByteBuffer p = ByteBuffer.wrap(hello.payload());
            if (p.remaining() < 4 + 1 + NONCE_BYTES + 2)
            {
                throw new RendezvousException(who, "HELLO payload too short");
            }
            int peerWorld = p.getInt();
            byte flags = p.get();
            byte[] clientNonce = new byte[NONCE_BYTES];
            p.get(clientNonce);
            int sessionLen = p.getShort() & 0xffff;
            if (sessionLen != p.remaining() || sessionLen > MAX_SESSION_BYTES)
            {
                throw new RendezvousException(who, "HELLO session field malformed");
            }
            byte[] peerSession = new byte[sessionLen];
            p.get(peerSession);
            if (r < 1 || r >= worldSize)
            {
                throw new RendezvousException(who, "rank " + r + " out of range 1.." + (worldSize - 1));
            }
            if (peerWorld != worldSize)
            {
                throw new RendezvousException(who, "worldSize mismatch: peer has " + peerWorld + ", rank 0 has "
                        + worldSize);
            }
            if (!Arrays.equals(peerSession, sessionBytes))
            {
                throw new RendezvousException(who, "session mismatch: peer has '"
                        + new String(peerSession, StandardCharsets.UTF_8) + "'");
            }
            boolean peerHasSecret = (flags & FLAG_SECRET) != 0;
            if (peerHasSecret != (secret != null))
            {
                throw new RendezvousException(who, "authentication failed: shared secret configured on "
                        + (secret != null ? "rank 0 only" : "the peer only"));
            }
            byte[] serverNonce = nonce();
            Frame.write(out, new Frame(Frame.CHALLENGE, 0, 0, serverNonce));
            Frame auth = Frame.read(in, HANDSHAKE_MAX_FRAME, who);
            if (auth == null)
            {
                throw new EOFException("closed before AUTH");
            }
            if (auth.type() != Frame.AUTH || auth.rank() != r)
            {
                throw new RendezvousException(who, "expected AUTH from rank " + r + ", got "
                        + Frame.typeName(auth.type()) + " from rank " + auth.rank());
            }
            byte[] expected = secret != null ? mac(CLIENT_LABEL, serverNonce, clientNonce, r) : new byte[0];
            if (!MessageDigest.isEqual(expected, auth.payload()))
            {
                throw new RendezvousException(who, "authentication failed (wrong shared secret)");
            }
            PeerConn conn = new PeerConn(r, s, out);
            synchronized (lock)
            {
                if (closed.get())
                {
                    throw new RendezvousException(who, "rank 0 is closing");
                }
                RendezvousException failed = failure;
                if (failed != null)
                {
                    throw new RendezvousException(who, "the session already failed: " + failed.getMessage());
                }
                if (peers[r] != null)
                {
                    throw new RendezvousException(who, lostReason[r] != null
                            ? "rank " + r + " already joined and was lost (" + lostReason[r] + ")"
                            : "duplicate rank " + r + ": already connected from " + describe(peers[r].socket));
                }
                peers[r] = conn;
                lock.notifyAll();
            }
            conn.send(new Frame(Frame.WELCOME, 0, 0,
                    secret != null ? mac(SERVER_LABEL, serverNonce, clientNonce, r) : new byte[0]));
            LOG.info("rendezvous rank {} joined from {}", r, remote);
            return conn;
        }

        private void readLoop(final PeerConn conn, final DataInputStream in) throws IOException
        {
            while (true)
            {
                Frame f = Frame.read(in, maxFrameBytes, conn.name);
                if (f == null)
                {
                    markLost(conn.rank, closed.get() ? "rank 0 closed" : "disconnected (EOF)");
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
                int expected = completed + 1;
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
            if (!closed.get())
            {
                LOG.debug("rendezvous rank {} lost: {}", r, reason);
            }
        }

        List<byte[]> collect(final byte type, final int s, final byte[] mine, final long deadline, final Duration timeout, final String what)
        {
            byte[][] gathered = new byte[worldSize][];
            PeerConn[] targets;
            synchronized (lock)
            {
                while (true)
                {
                    if (closed.get())
                    {
                        throw new RendezvousException(null, "closed while waiting for " + what);
                    }
                    List<Integer> missing = new ArrayList<>();
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
                    long left = deadline - System.nanoTime();
                    if (left <= 0)
                    {
                        List<Integer> never = new ArrayList<>();
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
                    Contribution c = pending[r];
                    if (c.type() != type)
                    {
                        throw new RendezvousException("rank " + r, "called " + opName(c.type()) + " as op #" + s
                                + " while rank 0 called " + opName(type));
                    }
                    gathered[r] = c.payload();
                    total += 4L + c.payload().length;
                }
                gathered[0] = mine.clone();
                total += 4L + mine.length;
                if (type == Frame.GATHER && total > maxFrameBytes)
                {
                    throw new RendezvousException(null, "gathered result of " + total
                            + " bytes exceeds the frame limit of " + maxFrameBytes + " bytes in " + what);
                }
                // Advance before sending: a rank that has its result may send its next op at once.
                Arrays.fill(pending, null);
                completed = s;
                targets = peers.clone();
            }
            byte[] payload = type == Frame.GATHER ? encodeResult(gathered) : new byte[0];
            Frame result = new Frame(Frame.RESULT, 0, s, payload);
            for (int r = 1; r < worldSize; r++)
            {
                try
                {
                    targets[r].send(result);
                }
                catch (IOException e)
                {
                    if (closed.get())
                    {
                        throw new RendezvousException(null, "closed during " + what, e);
                    }
                    throw new PeerLostException(r, "sending the result of " + what + " failed: " + e);
                }
            }
            return type == Frame.GATHER ? Collections.unmodifiableList(Arrays.asList(gathered)) : List.of();
        }

        /** Tells every joined rank why the session failed, so they do not wait out their timeouts. */
        void abortPeers(final RendezvousException e)
        {
            PeerConn[] targets;
            synchronized (lock)
            {
                targets = peers.clone();
            }
            Frame err = new Frame(Frame.ERROR, 0, 0, utf8(e.getMessage()));
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

        void close()
        {
            List<Socket> toClose;
            List<Thread> toJoin;
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
                closeQuietly(s);
            }
            toJoin.add(acceptor);
            long until = System.nanoTime() + JOIN_BUDGET_NANOS;
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

    // ---------------------------------------------------------------------------------------------
    // Ranks 1..n-1

    /** A rank other than 0: one socket to rank 0, used synchronously by the calling thread. */
    private final class Member
    {
        final int port;
        final String name;
        /** Guards writes; close() only tries it, so it never waits behind a large send. */
        final ReentrantLock writeLock = new ReentrantLock();
        volatile Socket socket;
        volatile DeadlineInput raw;
        volatile DataInputStream in;
        volatile DataOutputStream out;

        Member(final int port)
        {
            this.port = port;
            this.name = "rank 0 at " + host + ":" + port;
            connect();
        }

        private void connect()
        {
            long deadline = System.nanoTime() + connectTimeout.toNanos();
            long backoffMs = 20;
            int attempts = 0;
            IOException last = null;
            while (true)
            {
                // Read the clock once: a 0 passed to connect() or setSoTimeout() would mean "wait forever".
                int left = millisLeft(deadline);
                if (left <= 0)
                {
                    break;
                }
                Socket s = new Socket();
                try
                {
                    attempts++;
                    s.setTcpNoDelay(true);
                    s.setKeepAlive(true);
                    s.connect(new InetSocketAddress(host, port), Math.min(left, 5000));
                    DeadlineInput r = new DeadlineInput(s);
                    // The handshake ends by the connect deadline whatever rank 0 (or a stranger
                    // on its port) sends, and takes at most handshakeTimeout of it.
                    r.deadline(Math.min(deadline, System.nanoTime() + handshakeTimeout.toNanos()));
                    DataInputStream i = new DataInputStream(new BufferedInputStream(r));
                    DataOutputStream o = new DataOutputStream(new BufferedOutputStream(s.getOutputStream()));
                    handshake(i, o);
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
                    closeQuietly(s);
                    throw e;
                }
                catch (IOException e)
                {
                    closeQuietly(s);
                    last = e;
                    LOG.debug("rendezvous rank {}: attempt {} to reach {} failed: {}", rank, attempts, name,
                            e.toString());
                }
                long sleep = Math.min(backoffMs + ThreadLocalRandom.current().nextLong(backoffMs / 2 + 1),
                        millisLeft(deadline));
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
                    + " attempts, last error: " + last + ")", List.of(0), connectTimeout);
        }

        private void handshake(final DataInputStream i, final DataOutputStream o) throws IOException
        {
            byte[] clientNonce = nonce();
            Frame.write(o, new Frame(Frame.HELLO, rank, 0, encodeHello(clientNonce)));
            Frame ch = expect(i, Frame.CHALLENGE);
            if (ch.payload().length != NONCE_BYTES)
            {
                throw new RendezvousException(name, "CHALLENGE nonce has " + ch.payload().length + " bytes");
            }
            byte[] serverNonce = ch.payload();
            Frame.write(o, new Frame(Frame.AUTH, rank, 0,
                    secret != null ? mac(CLIENT_LABEL, serverNonce, clientNonce, rank) : new byte[0]));
            Frame welcome = expect(i, Frame.WELCOME);
            byte[] expected = secret != null ? mac(SERVER_LABEL, serverNonce, clientNonce, rank) : new byte[0];
            if (!MessageDigest.isEqual(expected, welcome.payload()))
            {
                throw new RendezvousException(name, "authentication failed: rank 0 did not prove the shared secret");
            }
        }

        private Frame expect(final DataInputStream i, final byte type) throws IOException
        {
            Frame f = Frame.read(i, HANDSHAKE_MAX_FRAME, name);
            if (f == null)
            {
                // Possibly a listener that is shutting down or full: worth another attempt.
                throw new EOFException("rank 0 closed the connection during the handshake");
            }
            if (f.type() == Frame.ERROR)
            {
                throw new RendezvousException(name, "rank 0 refused rank " + rank + ": " + reasonOf(f));
            }
            if (f.type() != type)
            {
                throw new RendezvousException(name, "expected " + Frame.typeName(type) + ", got "
                        + Frame.typeName(f.type()));
            }
            return f;
        }

        List<byte[]> collect(final byte type, final int s, final byte[] mine, final long deadline, final Duration timeout, final String what)
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
                int left = millisLeft(deadline);
                if (left <= 0)
                {
                    throw timedOut(what, timeout);
                }
                Frame f;
                try
                {
                    // The collective's deadline bounds the whole frame, not each read of it.
                    raw.deadline(deadline);
                    f = Frame.read(in, maxFrameBytes, name);
                }
                catch (SocketTimeoutException e)
                {
                    throw timedOut(what, timeout);
                }
                catch (RendezvousException e)
                {
                    closeQuietly(socket);
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
                        throw new RendezvousException(name, "rank 0 aborted " + what + ": " + reasonOf(f));
                    case Frame.BYE:
                        throw new PeerLostException(0, "rank 0 closed its rendezvous during " + what);
                    case Frame.RESULT:
                        if (f.seq() != s)
                        {
                            closeQuietly(socket);
                            throw new RendezvousException(name, "sequence mismatch: result for op #" + f.seq()
                                    + " while waiting for " + what);
                        }
                        if (type == Frame.BARRIER)
                        {
                            if (f.payload().length != 0)
                            {
                                closeQuietly(socket);
                                throw new RendezvousException(name, "barrier RESULT with a payload");
                            }
                            return List.of();
                        }
                        try
                        {
                            return decodeResult(f.payload(), worldSize, name);
                        }
                        catch (RendezvousException e)
                        {
                            closeQuietly(socket);
                            throw e;
                        }
                    default:
                        closeQuietly(socket);
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
            if (closed.get())
            {
                return new RendezvousException(null, "closed: " + reason, cause);
            }
            return new PeerLostException(0, reason);
        }

        void close()
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
            closeQuietly(socket);
        }
    }

    // ---------------------------------------------------------------------------------------------

    /** Configuration of a {@link Rendezvous}; {@link #build()} starts it. Not thread-safe. */
    public static final class Builder
    {
        private int rank = -1;
        private int worldSize = -1;
        private String host;
        private int port = -1;
        private String bindAddress = DEFAULT_BIND_ADDRESS;
        private byte[] secret;
        private String session = DEFAULT_SESSION;
        private Duration connectTimeout = Duration.ofSeconds(60);
        private Duration defaultTimeout = Duration.ofSeconds(60);
        private Duration handshakeTimeout = Duration.ofSeconds(10);
        private int maxFrameBytes = DEFAULT_MAX_FRAME_BYTES;

        private Builder()
        {
        }

        /**
         * @param rank this process's rank, {@code 0 <= rank < worldSize}; rank 0 listens
         * @return this builder
         */
        public Builder rank(final int rank)
        {
            this.rank = rank;
            return this;
        }

        /**
         * @param worldSize number of ranks, 1..{@value #MAX_WORLD_SIZE}
         * @return this builder
         */
        public Builder worldSize(final int worldSize)
        {
            this.worldSize = worldSize;
            return this;
        }

        /**
         * @param hostPort rank 0's endpoint as {@code host:port} ({@code [v6addr]:port} for IPv6). Rank 0
         *                 listens on this port (0 = ephemeral, see {@link Rendezvous#port()}); the others
         *                 connect to host:port. Required on ranks other than 0.
         * @return this builder
         */
        public Builder endpoint(final String hostPort)
        {
            Objects.requireNonNull(hostPort, "hostPort");
            int colon = hostPort.lastIndexOf(':');
            if (colon <= 0 || colon == hostPort.length() - 1)
            {
                throw new IllegalArgumentException("endpoint must be host:port, got '" + hostPort + "'");
            }
            String h = hostPort.substring(0, colon);
            if (h.startsWith("[") && h.endsWith("]"))
            {
                h = h.substring(1, h.length() - 1);
            }
            int p;
            try
            {
                p = Integer.parseInt(hostPort.substring(colon + 1));
            }
            catch (NumberFormatException e)
            {
                throw new IllegalArgumentException("endpoint port is not a number: '" + hostPort + "'", e);
            }
            return endpoint(h, p);
        }

        /**
         * @param host rank 0's host name or address
         * @param port rank 0's port (0 = ephemeral, rank 0 only)
         * @return this builder
         */
        public Builder endpoint(final String host, final int port)
        {
            Objects.requireNonNull(host, "host");
            if (host.isEmpty())
            {
                throw new IllegalArgumentException("empty endpoint host");
            }
            if (port < 0 || port > 65535)
            {
                throw new IllegalArgumentException("port out of range 0..65535: " + port);
            }
            this.host = host;
            this.port = port;
            return this;
        }

        /**
         * @param address the address rank 0 binds to: default {@value #DEFAULT_BIND_ADDRESS}; "0.0.0.0" for
         *                all interfaces, or e.g. a network namespace's veth address. Ignored on other ranks.
         * @return this builder
         */
        public Builder bindAddress(final String address)
        {
            this.bindAddress = Objects.requireNonNull(address, "address");
            return this;
        }

        /**
         * @param secret a shared secret for HMAC-SHA256 challenge/response at connect (copied); null for none.
         *               All ranks must agree.
         * @return this builder
         */
        public Builder secret(final byte[] secret)
        {
            if (secret != null && secret.length == 0)
            {
                throw new IllegalArgumentException("empty secret: pass null for none");
            }
            this.secret = secret == null ? null : secret.clone();
            return this;
        }

        /**
         * @param secret a shared secret, used as its UTF-8 bytes; null for none
         * @return this builder
         */
        public Builder secret(final String secret)
        {
            return secret(secret == null ? null : utf8(secret));
        }

        /**
         * @param session a name all ranks of one job share (default {@value #DEFAULT_SESSION}); a rank with
         *                another session name is refused. At most 256 UTF-8 bytes.
         * @return this builder
         */
        public Builder session(final String session)
        {
            Objects.requireNonNull(session, "session");
            if (utf8(session).length > MAX_SESSION_BYTES)
            {
                throw new IllegalArgumentException("session name longer than " + MAX_SESSION_BYTES + " bytes");
            }
            this.session = session;
            return this;
        }

        /**
         * @param timeout how long ranks other than 0 keep trying to reach rank 0 in {@link #build()} (default 60 s)
         * @return this builder
         */
        public Builder connectTimeout(final Duration timeout)
        {
            this.connectTimeout = positive(timeout, "connectTimeout");
            return this;
        }

        /**
         * @param timeout the limit of the collectives called without one (default 60 s)
         * @return this builder
         */
        public Builder defaultTimeout(final Duration timeout)
        {
            this.defaultTimeout = positive(timeout, "defaultTimeout");
            return this;
        }

        /**
         * @param timeout how long rank 0 gives a new connection to complete its handshake (default 10 s);
         *                bounds how long a silent stranger holds a thread
         * @return this builder
         */
        public Builder handshakeTimeout(final Duration timeout)
        {
            this.handshakeTimeout = positive(timeout, "handshakeTimeout");
            return this;
        }

        /**
         * @param bytes the largest frame payload accepted or sent (default 64 MiB); a gathered result
         *              (all blobs plus 4 bytes each) must fit too
         * @return this builder
         */
        public Builder maxFrameBytes(final int bytes)
        {
            if (bytes < 1024)
            {
                throw new IllegalArgumentException("maxFrameBytes must be at least 1024: " + bytes);
            }
            this.maxFrameBytes = bytes;
            return this;
        }

        /**
         * Starts the rendezvous: rank 0 binds and returns at once; other ranks connect and complete the
         * handshake, retrying until the connect timeout.
         *
         * @return the started rendezvous
         * @throws IllegalArgumentException on an invalid configuration
         * @throws RendezvousTimeoutException when rank 0 could not be reached in time
         * @throws RendezvousException when rank 0 cannot listen, or refused this rank
         */
        public Rendezvous build()
        {
            if (worldSize < 1 || worldSize > MAX_WORLD_SIZE)
            {
                throw new IllegalArgumentException("worldSize must be 1.." + MAX_WORLD_SIZE + ": " + worldSize);
            }
            if (rank < 0 || rank >= worldSize)
            {
                throw new IllegalArgumentException("rank " + rank + " out of range 0.." + (worldSize - 1));
            }
            int p = port;
            if (rank == 0)
            {
                if (host == null)
                {
                    host = bindAddress;
                    p = 0;
                }
            }
            else
            {
                if (host == null)
                {
                    throw new IllegalArgumentException("rank " + rank + " needs rank 0's endpoint");
                }
                if (p == 0)
                {
                    throw new IllegalArgumentException("rank " + rank + " needs rank 0's actual port, not 0");
                }
            }
            return new Rendezvous(this, p);
        }

        private static Duration positive(final Duration d, final String what)
        {
            Objects.requireNonNull(d, what);
            if (d.isNegative() || d.isZero())
            {
                throw new IllegalArgumentException(what + " must be positive: " + d);
            }
            return d;
        }
    }
}
