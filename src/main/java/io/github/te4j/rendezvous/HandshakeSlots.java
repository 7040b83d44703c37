package io.github.te4j.rendezvous;

import java.net.InetAddress;
import java.net.Socket;
import java.util.ArrayDeque;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Rank 0's connections still in their handshake, oldest first, under two caps: overall and from
 * one source address. Past either cap the oldest such pending handshake is dropped for the new one
 * (a flood and slowloris guard: a stranger cannot keep a real rank out by holding slots, since a
 * real rank's handshake takes a round trip and strangers are dropped oldest first). Bounds the
 * handshake threads as well. Not thread-safe: the hub calls it under its lock.
 */
final class HandshakeSlots
{
    static final int MAX_HANDSHAKING = 64;
    static final int MAX_HANDSHAKING_PER_SOURCE = 16;

    // The rendezvous logs under one name, whichever of its parts speaks.
    private static final Logger LOG = LoggerFactory.getLogger(Rendezvous.class);

    private final ArrayDeque<Socket> handshaking = new ArrayDeque<>();

    /**
     * Takes a slot for {@code s}, first making room under the caps: drops the oldest pending
     * handshake from the same source when that source is at its cap, else the oldest overall when
     * all slots are taken.
     */
    void admit(final Socket s)
    {
        final InetAddress source = s.getInetAddress();
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
        final Socket victim = sameSource >= MAX_HANDSHAKING_PER_SOURCE ? oldestSameSource
                : handshaking.size() >= MAX_HANDSHAKING ? handshaking.peekFirst() : null;
        if (victim != null)
        {
            handshaking.remove(victim);
            LOG.warn("rendezvous dropped the pending handshake of {} for a new connection from {} ({} pending, {}"
                    + " from that source)", Sockets.describe(victim), Sockets.describe(s), handshaking.size() + 1,
                    sameSource);
            // Its thread's read fails at once and the thread ends.
            Sockets.closeQuietly(victim);
        }
        handshaking.addLast(s);
    }

    /** Frees {@code s}'s slot: its handshake ended, one way or the other. */
    void release(final Socket s)
    {
        handshaking.remove(s);
    }
}
