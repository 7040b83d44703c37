package io.github.te4j.rendezvous;

import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * A rendezvous's configuration as {@link Rendezvous.Builder#build()} validated it, immutable and
 * shared by every part of one instance (the handshake, rank 0's hub, a member's link).
 */
final class RendezvousSettings
{
    final int rank;
    final int worldSize;
    /** Rank 0's host as the other ranks reach it. */
    final String host;
    final String bindAddress;
    /** The shared secret, or null for none; a private copy. */
    final byte[] secret;
    final String session;
    /** {@link #session} as UTF-8, as it travels in HELLO and enters the MACs. */
    final byte[] sessionBytes;
    final Duration connectTimeout;
    final Duration defaultTimeout;
    final Duration handshakeTimeout;
    final int maxFrameBytes;

    RendezvousSettings(final int rank, final int worldSize, final String host, final String bindAddress,
            final byte[] secret, final String session, final Duration connectTimeout, final Duration defaultTimeout,
            final Duration handshakeTimeout, final int maxFrameBytes)
    {
        this.rank = rank;
        this.worldSize = worldSize;
        this.host = host;
        this.bindAddress = bindAddress;
        this.secret = secret == null ? null : secret.clone();
        this.session = session;
        this.sessionBytes = session.getBytes(StandardCharsets.UTF_8);
        this.connectTimeout = connectTimeout;
        this.defaultTimeout = defaultTimeout;
        this.handshakeTimeout = handshakeTimeout;
        this.maxFrameBytes = maxFrameBytes;
    }

    boolean hasSecret()
    {
        return secret != null;
    }
}
