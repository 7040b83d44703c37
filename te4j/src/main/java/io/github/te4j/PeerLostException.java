package io.github.te4j;

/** A peer rank disappeared (process exited or was killed, connection lost). */
public class PeerLostException extends Te4jException
{
    private static final long serialVersionUID = 1L;

    public PeerLostException(final String message)
    {
        super(Code.PEER_LOST, message);
    }

    public PeerLostException(final String message, final Throwable cause)
    {
        super(Code.PEER_LOST, message, cause);
    }
}
