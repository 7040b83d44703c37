package io.github.te4j.rendezvous;

import java.io.DataOutputStream;
import java.io.IOException;
import java.net.Socket;

/**
 * A joined rank's connection, as rank 0 sees it. Its reader thread owns the input; sends come from
 * the collective's thread and from error reports, so they are serialized on the stream.
 */
final class PeerConn
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
        this.name = "rank " + rank + " (" + Sockets.describe(socket) + ")";
    }

    void send(final Frame f) throws IOException
    {
        synchronized (out)
        {
            Frame.write(out, f);
        }
    }
}
