package io.github.te4j.rendezvous;

import io.github.te4j.PeerLostException;
import io.github.te4j.Te4jException;
import io.github.te4j.exchange.HandleExchange;
import java.time.Duration;
import java.util.List;
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
 *
 * @since 0.1
 */
public final class Rendezvous implements HandleExchange
{

    /**
     * Largest supported world size.
     *
     * @since 0.1
     */
    public static final int MAX_WORLD_SIZE = 64;
    /**
     * Default bound on a frame's payload: 64 MiB.
     *
     * @since 0.1
     */
    public static final int DEFAULT_MAX_FRAME_BYTES = 64 << 20;
    /**
     * Default bind address of rank 0: loopback.
     *
     * @since 0.1
     */
    public static final String DEFAULT_BIND_ADDRESS = "127.0.0.1";
    /**
     * Default session name.
     *
     * @since 0.1
     */
    public static final String DEFAULT_SESSION = "te4j";

    static final String THREAD_PREFIX = "te4j-rendezvous-";
    /** Connections in their handshake at once, overall and from one source (see {@link HandshakeSlots}). */
    static final int MAX_HANDSHAKING = HandshakeSlots.MAX_HANDSHAKING;
    static final int MAX_HANDSHAKING_PER_SOURCE = HandshakeSlots.MAX_HANDSHAKING_PER_SOURCE;

    private static final Logger LOG = LoggerFactory.getLogger(Rendezvous.class);

    private final RendezvousSettings settings;
    private final SessionState state = new SessionState();
    /** Rank 0's hub or this rank's link to it. */
    private final StarRole role;

    /** Serializes collectives: they must be issued in the same order on every rank. */
    private final Object opLock = new Object();
    private int seq;

    private Rendezvous(final RendezvousSettings settings, final int port)
    {
        this.settings = settings;
        this.role = settings.rank == 0 ? new RootHub(settings, state, port) : new MemberLink(settings, state, port);
    }

    /**
     * A builder of a rendezvous.
     *
     * @return a new builder
     * @since 0.1
     */
    public static Builder builder()
    {
        return new Builder();
    }

    @Override
    public int rank()
    {
        return settings.rank;
    }

    @Override
    public int worldSize()
    {
        return settings.worldSize;
    }

    @Override
    public Duration defaultTimeout()
    {
        return settings.defaultTimeout;
    }

    /**
     * The port of rank 0's listener.
     *
     * @return on rank 0 the port actually listened on (the ephemeral one when 0 was asked for); on
     *         other ranks the port of rank 0 they connected to
     * @since 0.1
     */
    public int port()
    {
        return role.port();
    }

    /**
     * The endpoint of rank 0.
     *
     * @return {@code host:port} that the other ranks connect to (with the actual port on rank 0)
     * @since 0.1
     */
    public String endpoint()
    {
        final String host = settings.host;
        final String h = host.indexOf(':') >= 0 ? "[" + host + "]" : host;
        return h + ":" + port();
    }

    @Override
    public List<byte[]> allGather(final byte[] mine, final Duration timeout)
    {
        BuilderChecks.notNull(mine, "mine");
        if (mine.length > settings.maxFrameBytes)
        {
            throw new IllegalArgumentException("blob of " + mine.length + " bytes exceeds the frame limit of "
                    + settings.maxFrameBytes + " bytes");
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
        if (!state.close())
        {
            return;
        }
        role.close();
        LOG.debug("rendezvous rank {} closed", settings.rank);
    }

    @Override
    public String toString()
    {
        return "Rendezvous[rank " + settings.rank + "/" + settings.worldSize + ", " + endpoint() + ", session "
                + settings.session + "]";
    }

    private List<byte[]> collective(final byte type, final byte[] mine, final Duration timeout)
    {
        final long deadline = Deadlines.deadlineOf(timeout);
        synchronized (opLock)
        {
            if (state.closed())
            {
                throw new IllegalStateException("rendezvous is closed");
            }
            final Te4jException earlier = state.failure();
            if (earlier != null)
            {
                throw new RendezvousException(null, "rendezvous is unusable after an earlier failure: "
                        + earlier.getMessage(), earlier);
            }
            final int s = ++seq;
            final String what = Frame.opName(type) + " #" + s;
            try
            {
                return role.collect(type, s, mine, deadline, timeout, what);
            }
            catch (RendezvousException | PeerLostException e)
            {
                // Either ends the session: the ranks no longer agree on where they are. Rank 0
                // tells every member (the ERROR frame) so that none waits out its timeout.
                state.fail(e);
                if (!state.closed())
                {
                    role.abort(e);
                }
                throw e;
            }
        }
    }

    /** The payload of a gather's RESULT frame (see {@link GatherResult}). */
    static byte[] encodeResult(final byte[][] blobs)
    {
        return GatherResult.encode(blobs);
    }

    /** Decodes and checks a gather's RESULT payload (see {@link GatherResult}). */
    static List<byte[]> decodeResult(final byte[] payload, final int expectedCount, final String peer)
    {
        return GatherResult.decode(payload, expectedCount, peer);
    }

    // ---------------------------------------------------------------------------------------------

    /**
     * Configuration of a {@link Rendezvous}; {@link #build()} starts it. Not thread-safe.
     *
     * @since 0.1
     */
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
         * Sets this process's rank; required.
         *
         * @param rank this process's rank, {@code 0 <= rank < worldSize}; rank 0 listens
         * @return this builder
         * @since 0.1
         */
        public Builder rank(final int rank)
        {
            this.rank = rank;
            return this;
        }

        /**
         * Sets the number of ranks; required.
         *
         * @param worldSize number of ranks, 1..{@value #MAX_WORLD_SIZE}
         * @return this builder
         * @since 0.1
         */
        public Builder worldSize(final int worldSize)
        {
            this.worldSize = worldSize;
            return this;
        }

        /**
         * Sets rank 0's endpoint from a {@code host:port} string.
         *
         * @param hostPort rank 0's endpoint as {@code host:port} ({@code [v6addr]:port} for IPv6). Rank 0
         *                 listens on this port (0 = ephemeral, see {@link Rendezvous#port()}); the others
         *                 connect to host:port. Required on ranks other than 0.
         * @return this builder
         * @throws IllegalArgumentException when {@code hostPort} is null, not host:port, or its port is not a
         *     number in [0, 65535]
         * @since 0.1
         */
        public Builder endpoint(final String hostPort)
        {
            BuilderChecks.notNull(hostPort, "hostPort");
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
         * Sets rank 0's endpoint from a host and a port.
         *
         * @param host rank 0's host name or address
         * @param port rank 0's port (0 = ephemeral, rank 0 only)
         * @return this builder
         * @throws IllegalArgumentException when {@code host} is null or empty, or {@code port} is outside
         *     [0, 65535]
         * @since 0.1
         */
        public Builder endpoint(final String host, final int port)
        {
            BuilderChecks.notNull(host, "host");
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
         * Sets the address rank 0 listens on.
         *
         * @param address the address rank 0 binds to: default {@value #DEFAULT_BIND_ADDRESS}; "0.0.0.0" for
         *                all interfaces, or e.g. a network namespace's veth address. Ignored on other ranks.
         * @return this builder
         * @since 0.1
         */
        public Builder bindAddress(final String address)
        {
            this.bindAddress = BuilderChecks.notNull(address, "address");
            return this;
        }

        /**
         * Sets the secret that every connection must prove.
         *
         * @param secret a shared secret for HMAC-SHA256 challenge/response at connect (copied); null for none.
         *               All ranks must agree.
         * @return this builder
         * @throws IllegalArgumentException when {@code secret} is empty
         * @since 0.1
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
         * Sets the secret that every connection must prove, from text.
         *
         * @param secret a shared secret, used as its UTF-8 bytes; null for none
         * @return this builder
         * @since 0.1
         */
        public Builder secret(final String secret)
        {
            return secret(secret == null ? null : Sockets.utf8(secret));
        }

        /**
         * Sets the job's session name, so that ranks of another job are refused.
         *
         * @param session a name all ranks of one job share (default {@value #DEFAULT_SESSION}); a rank with
         *                another session name is refused. At most 256 UTF-8 bytes.
         * @return this builder
         * @throws IllegalArgumentException when {@code session} is longer than the handshake carries
         * @since 0.1
         */
        public Builder session(final String session)
        {
            BuilderChecks.notNull(session, "session");
            if (Sockets.utf8(session).length > Handshake.MAX_SESSION_BYTES)
            {
                throw new IllegalArgumentException("session name longer than " + Handshake.MAX_SESSION_BYTES + " bytes");
            }
            this.session = session;
            return this;
        }

        /**
         * Sets how long ranks keep trying to reach rank 0.
         *
         * @param timeout how long ranks other than 0 keep trying to reach rank 0 in {@link #build()} (default 60 s)
         * @return this builder
         * @since 0.1
         */
        public Builder connectTimeout(final Duration timeout)
        {
            this.connectTimeout = BuilderChecks.positive(timeout, "connectTimeout");
            return this;
        }

        /**
         * Sets the timeout of the collectives called without one.
         *
         * @param timeout the limit of the collectives called without one (default 60 s)
         * @return this builder
         * @since 0.1
         */
        public Builder defaultTimeout(final Duration timeout)
        {
            this.defaultTimeout = BuilderChecks.positive(timeout, "defaultTimeout");
            return this;
        }

        /**
         * Sets how long a new connection has for its handshake.
         *
         * @param timeout how long rank 0 gives a new connection to complete its handshake (default 10 s);
         *                bounds how long a silent stranger holds a thread
         * @return this builder
         * @since 0.1
         */
        public Builder handshakeTimeout(final Duration timeout)
        {
            this.handshakeTimeout = BuilderChecks.positive(timeout, "handshakeTimeout");
            return this;
        }

        /**
         * Sets the largest frame a rank sends or accepts.
         *
         * @param bytes the largest frame payload accepted or sent (default 64 MiB); a gathered result
         *              (all blobs plus 4 bytes each) must fit too
         * @return this builder
         * @throws IllegalArgumentException when {@code bytes} is below 1024
         * @since 0.1
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
         * @since 0.1
         */
        public Rendezvous build()
        {
            BuilderChecks.rankInWorld(rank, worldSize);
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
            return new Rendezvous(new RendezvousSettings(rank, worldSize, host, bindAddress, secret, session,
                    connectTimeout, defaultTimeout, handshakeTimeout, maxFrameBytes), p);
        }
    }
}
