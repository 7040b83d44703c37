package io.github.te4j.rendezvous;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Arrays;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * The join handshake of {@link Rendezvous} (HELLO, CHALLENGE, AUTH, WELCOME), both sides: the
 * checks rank 0 makes of a new connection and the mutual HMAC-SHA256 proof of the shared secret
 * over the transcript nonceS | nonceC | rank | worldSize | session. Claiming the rank's slot is
 * left to rank 0's hub, between {@link #accept} and {@link #welcome}.
 */
final class Handshake
{
    /** Bound on a frame during the handshake, before the peer has proven anything. */
    static final int MAX_FRAME = 4096;
    static final int MAX_SESSION_BYTES = 256;
    private static final int NONCE_BYTES = 16;
    private static final byte FLAG_SECRET = 1;
    private static final byte[] CLIENT_LABEL = "te4j-rdv-client".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] SERVER_LABEL = "te4j-rdv-server".getBytes(StandardCharsets.US_ASCII);
    private static final SecureRandom RANDOM = new SecureRandom();

    /** A connection that passed AUTH as {@code rank}: what rank 0 needs to claim the slot and answer. */
    record Accepted(int rank, String who, byte[] serverNonce, byte[] clientNonce)
    {
    }

    private final RendezvousSettings settings;

    Handshake(final RendezvousSettings settings)
    {
        this.settings = settings;
    }

    /**
     * Rank 0's side up to and including the AUTH check.
     *
     * @throws RendezvousException when the peer is refused (the reason goes back in an ERROR frame)
     * @throws IOException on a socket failure or an early EOF
     */
    Accepted accept(final DataInputStream in, final DataOutputStream out, final String remote) throws IOException
    {
        final Frame hello = Frame.read(in, MAX_FRAME, remote);
        if (hello == null)
        {
            throw new EOFException("closed before HELLO");
        }
        if (hello.type() != Frame.HELLO)
        {
            throw new RendezvousException(remote, "expected HELLO, got " + Frame.typeName(hello.type()));
        }
        final int r = hello.rank();
        final String who = "rank " + r + " (" + remote + ")";
        final ByteBuffer p = ByteBuffer.wrap(hello.payload());
        if (p.remaining() < 4 + 1 + NONCE_BYTES + 2)
        {
            throw new RendezvousException(who, "HELLO payload too short");
        }
        final int peerWorld = p.getInt();
        final byte flags = p.get();
        final byte[] clientNonce = new byte[NONCE_BYTES];
        p.get(clientNonce);
        final int sessionLen = p.getShort() & 0xffff;
        if (sessionLen != p.remaining() || sessionLen > MAX_SESSION_BYTES)
        {
            throw new RendezvousException(who, "HELLO session field malformed");
        }
        final byte[] peerSession = new byte[sessionLen];
        p.get(peerSession);
        final int worldSize = settings.worldSize;
        if (r < 1 || r >= worldSize)
        {
            throw new RendezvousException(who, "rank " + r + " out of range 1.." + (worldSize - 1));
        }
        if (peerWorld != worldSize)
        {
            throw new RendezvousException(who, "worldSize mismatch: peer has " + peerWorld + ", rank 0 has "
                    + worldSize);
        }
        if (!Arrays.equals(peerSession, settings.sessionBytes))
        {
            throw new RendezvousException(who, "session mismatch: peer has '"
                    + new String(peerSession, StandardCharsets.UTF_8) + "'");
        }
        final boolean peerHasSecret = (flags & FLAG_SECRET) != 0;
        if (peerHasSecret != settings.hasSecret())
        {
            throw new RendezvousException(who, "authentication failed: shared secret configured on "
                    + (settings.hasSecret() ? "rank 0 only" : "the peer only"));
        }
        final byte[] serverNonce = nonce();
        Frame.write(out, new Frame(Frame.CHALLENGE, 0, 0, serverNonce));
        final Frame auth = Frame.read(in, MAX_FRAME, who);
        if (auth == null)
        {
            throw new EOFException("closed before AUTH");
        }
        if (auth.type() != Frame.AUTH || auth.rank() != r)
        {
            throw new RendezvousException(who, "expected AUTH from rank " + r + ", got "
                    + Frame.typeName(auth.type()) + " from rank " + auth.rank());
        }
        final byte[] expected = proof(CLIENT_LABEL, serverNonce, clientNonce, r);
        if (!MessageDigest.isEqual(expected, auth.payload()))
        {
            throw new RendezvousException(who, "authentication failed (wrong shared secret)");
        }
        return new Accepted(r, who, serverNonce, clientNonce);
    }

    /** @return the WELCOME frame that proves to the accepted rank that rank 0 knows the secret too */
    Frame welcome(final Accepted a)
    {
        return new Frame(Frame.WELCOME, 0, 0, proof(SERVER_LABEL, a.serverNonce(), a.clientNonce(), a.rank()));
    }

    /**
     * A member's side, on a fresh connection to rank 0 ({@code name} names it).
     *
     * @throws RendezvousException when rank 0 refused this rank or failed its own proof (final)
     * @throws IOException on a socket failure or an early EOF (worth another attempt)
     */
    void join(final DataInputStream i, final DataOutputStream o, final String name) throws IOException
    {
        final int rank = settings.rank;
        final byte[] clientNonce = nonce();
        Frame.write(o, new Frame(Frame.HELLO, rank, 0, encodeHello(clientNonce)));
        final Frame ch = expect(i, Frame.CHALLENGE, name);
        if (ch.payload().length != NONCE_BYTES)
        {
            throw new RendezvousException(name, "CHALLENGE nonce has " + ch.payload().length + " bytes");
        }
        final byte[] serverNonce = ch.payload();
        Frame.write(o, new Frame(Frame.AUTH, rank, 0, proof(CLIENT_LABEL, serverNonce, clientNonce, rank)));
        final Frame welcome = expect(i, Frame.WELCOME, name);
        final byte[] expected = proof(SERVER_LABEL, serverNonce, clientNonce, rank);
        if (!MessageDigest.isEqual(expected, welcome.payload()))
        {
            throw new RendezvousException(name, "authentication failed: rank 0 did not prove the shared secret");
        }
    }

    private Frame expect(final DataInputStream i, final byte type, final String name) throws IOException
    {
        final Frame f = Frame.read(i, MAX_FRAME, name);
        if (f == null)
        {
            // Possibly a listener that is shutting down or full: worth another attempt.
            throw new EOFException("rank 0 closed the connection during the handshake");
        }
        if (f.type() == Frame.ERROR)
        {
            throw new RendezvousException(name, "rank 0 refused rank " + settings.rank + ": " + Sockets.reasonOf(f));
        }
        if (f.type() != type)
        {
            throw new RendezvousException(name, "expected " + Frame.typeName(type) + ", got "
                    + Frame.typeName(f.type()));
        }
        return f;
    }

    private byte[] encodeHello(final byte[] clientNonce)
    {
        final byte[] sessionBytes = settings.sessionBytes;
        final ByteBuffer b = ByteBuffer.allocate(4 + 1 + NONCE_BYTES + 2 + sessionBytes.length);
        b.putInt(settings.worldSize).put(settings.hasSecret() ? FLAG_SECRET : 0).put(clientNonce);
        b.putShort((short) sessionBytes.length).put(sessionBytes);
        return b.array();
    }

    /** The MAC of one side over the transcript; empty without a secret. */
    private byte[] proof(final byte[] label, final byte[] serverNonce, final byte[] clientNonce, final int peerRank)
    {
        if (!settings.hasSecret())
        {
            return new byte[0];
        }
        try
        {
            final Mac m = Mac.getInstance("HmacSHA256");
            m.init(new SecretKeySpec(settings.secret, "HmacSHA256"));
            m.update(label);
            m.update(serverNonce);
            m.update(clientNonce);
            m.update(ByteBuffer.allocate(8).putInt(peerRank).putInt(settings.worldSize).array());
            m.update(settings.sessionBytes);
            return m.doFinal();
        }
        catch (GeneralSecurityException e)
        {
            throw new IllegalStateException("HmacSHA256 unavailable", e);
        }
    }

    private static byte[] nonce()
    {
        final byte[] n = new byte[NONCE_BYTES];
        RANDOM.nextBytes(n);
        return n;
    }
}
