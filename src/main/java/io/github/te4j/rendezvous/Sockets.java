package io.github.te4j.rendezvous;

import java.io.IOException;
import java.net.Socket;
import java.nio.charset.StandardCharsets;

/** Socket, thread and text helpers shared by both sides of the rendezvous. */
final class Sockets
{
    private Sockets()
    {
    }

    /** A daemon thread named with the prefix that tests and thread dumps recognise. */
    static Thread daemon(final String name, final Runnable body)
    {
        final Thread t = new Thread(body, Rendezvous.THREAD_PREFIX + name);
        t.setDaemon(true);
        return t;
    }

    static void closeQuietly(final Socket s)
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

    static String describe(final Socket s)
    {
        final Object a = s.getRemoteSocketAddress();
        return a == null ? "unconnected socket" : a.toString();
    }

    static byte[] utf8(final String s)
    {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** The UTF-8 reason an ERROR frame carries. */
    static String reasonOf(final Frame f)
    {
        return new String(f.payload(), StandardCharsets.UTF_8);
    }
}
