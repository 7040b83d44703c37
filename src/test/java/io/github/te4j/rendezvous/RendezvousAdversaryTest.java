package io.github.te4j.rendezvous;

import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.testng.annotations.Test;

/**
 * The rendezvous against a hostile network: a rank 0 that drips its bytes (a member's deadline is
 * for the whole call, not for each read) and strangers that send their HELLO one byte at a time
 * (slowloris: each is dropped at most handshakeTimeout after its accept, they cannot fill the
 * handshake slots, and the real rank joins at once).
 */
public class RendezvousAdversaryTest
{

    /** What a deadline may overrun by: scheduling, one socket timeout rounding, the exception. */
    private static final long SLACK_MS = 2000;
    private static final long DRIP_MS = 400;

    @Test(timeOut = 60_000)
    public void drippingRankZeroCannotStretchAllGather() throws Exception
    {
        try (ServerSocket fake = new ServerSocket(0, 16, java.net.InetAddress.getLoopbackAddress()))
        {
            Thread server = new Thread(() -> dripAfterHandshake(fake), "drip-result");
            server.setDaemon(true);
            server.start();
            try (Rendezvous member = Rendezvous.builder().rank(1).worldSize(2)
                    .endpoint("127.0.0.1", fake.getLocalPort()).connectTimeout(Duration.ofSeconds(10)).build())
            {
                long t0 = System.nanoTime();
                expectThrows(RendezvousTimeoutException.class,
                        () -> member.allGather(new byte[8], Duration.ofSeconds(3)));
                long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
                System.out.println("dripping rank 0: allGather(3 s) returned after " + ms + " ms");
                assertTrue(ms >= 2900 && ms <= 3000 + SLACK_MS, "allGather(3 s) took " + ms + " ms");
            }
            server.interrupt();
        }
    }

    @Test(timeOut = 60_000)
    public void drippingRankZeroCannotStretchConnect() throws Exception
    {
        try (ServerSocket fake = new ServerSocket(0, 16, java.net.InetAddress.getLoopbackAddress()))
        {
            Thread server = new Thread(() -> dripChallenges(fake), "drip-challenge");
            server.setDaemon(true);
            server.start();
            long t0 = System.nanoTime();
            expectThrows(RendezvousTimeoutException.class, () -> Rendezvous.builder().rank(1).worldSize(2)
                    .endpoint("127.0.0.1", fake.getLocalPort()).connectTimeout(Duration.ofSeconds(4))
                    .handshakeTimeout(Duration.ofSeconds(30)).build());
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            System.out.println("dripping rank 0: build() with a 4 s connect timeout returned after " + ms + " ms");
            assertTrue(ms <= 4000 + SLACK_MS, "build() took " + ms + " ms");
            fake.close();
            server.interrupt();
        }
    }

    @Test(timeOut = 120_000)
    public void slowlorisStrangersCannotHoldRankZero() throws Exception
    {
        int strangers = 100;
        Duration handshake = Duration.ofSeconds(2);
        try (Rendezvous root = Rendezvous.builder().rank(0).worldSize(2).endpoint("127.0.0.1", 0)
                .handshakeTimeout(handshake).build())
        {
            int port = Integer.parseInt(root.endpoint().substring(root.endpoint().lastIndexOf(':') + 1));
            List<Socket> held = new ArrayList<>();
            long[] connectedAt = new long[strangers];
            for (int i = 0; i < strangers; i++)
            {
                Socket s = new Socket();
                s.connect(new InetSocketAddress("127.0.0.1", port), 2000);
                connectedAt[i] = System.nanoTime();
                held.add(s);
            }
            Thread dripper = new Thread(() -> dripOneByteEach(held, 1500), "slowloris");
            dripper.setDaemon(true);
            dripper.start();
            Thread.sleep(300);
            // Only the threads serving these strangers count: threads of earlier tests' rendezvous
            // may still be winding down in this JVM.
            int threads = threadsServing(held);
            System.out.println("slowloris: " + strangers + " strangers, " + threads + " rendezvous threads serving them, "
                    + rendezvousThreads() + " in the JVM");
            assertTrue(threads <= Rendezvous.MAX_HANDSHAKING,
                    threads + " rendezvous threads for " + strangers + " strangers");
            long t0 = System.nanoTime();
            CompletableFuture<Rendezvous> rank1 = new CompletableFuture<>();
            Thread joiner = new Thread(() ->
            {
                try
                {
                    Rendezvous m = Rendezvous.builder().rank(1).worldSize(2).endpoint("127.0.0.1", port)
                            .connectTimeout(Duration.ofSeconds(15)).build();
                    m.barrier(Duration.ofSeconds(15));
                    rank1.complete(m);
                }
                catch (RuntimeException e)
                {
                    rank1.completeExceptionally(e);
                }
            }, "rank-1");
            joiner.start();
            root.barrier(Duration.ofSeconds(15));
            try (Rendezvous member = rank1.get(15, TimeUnit.SECONDS))
            {
                long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
                System.out.println("slowloris: rank 1 joined and passed a barrier after " + ms + " ms");
                assertTrue(ms < 5000, "rank 1 needed " + ms + " ms among " + strangers + " strangers");
            }
            // Every stranger is gone by handshakeTimeout after its accept, however it paces its bytes.
            long longest = 0;
            for (int i = 0; i < strangers; i++)
            {
                longest = Math.max(longest, millisUntilClosed(held.get(i), connectedAt[i], 10_000));
            }
            System.out.println("slowloris: the last stranger was dropped " + longest + " ms after it connected");
            // The deadline runs from the accept, which trails the connect on a loaded machine: twice the slack.
            assertTrue(longest <= handshake.toMillis() + 2 * SLACK_MS, "a stranger stayed " + longest + " ms");
            dripper.interrupt();
            for (Socket s : held)
            {
                s.close();
            }
        }
    }

    /** Fake rank 0: completes the handshake (no secret), takes the GATHER, then drips a RESULT forever. */
    private static void dripAfterHandshake(final ServerSocket fake)
    {
        try (Socket s = fake.accept())
        {
            DataInputStream in = new DataInputStream(s.getInputStream());
            DataOutputStream out = new DataOutputStream(s.getOutputStream());
            Frame.read(in, 4096, "member");
            Frame.write(out, new Frame(Frame.CHALLENGE, 0, 0, new byte[16]));
            Frame.read(in, 4096, "member");
            Frame.write(out, new Frame(Frame.WELCOME, 0, 0, new byte[0]));
            Frame.read(in, 1 << 20, "member");
            drip(out, bytesOf(new Frame(Frame.RESULT, 0, 1, new byte[4096])));
        }
        catch (IOException | InterruptedException e)
        {
            // the member gave up, as it must
        }
    }

    /** Fake rank 0: on every connection, drips a CHALLENGE one byte at a time. */
    private static void dripChallenges(final ServerSocket fake)
    {
        List<Thread> conns = new ArrayList<>();
        try
        {
            serveDrips(fake, conns);
        }
        finally
        {
            conns.forEach(Thread::interrupt);
        }
    }

    private static void serveDrips(final ServerSocket fake, final List<Thread> conns)
    {
        while (!fake.isClosed())
        {
            try
            {
                Socket s = fake.accept();
                Thread t = new Thread(() ->
                {
                    try (s)
                    {
                        drip(s.getOutputStream(), bytesOf(new Frame(Frame.CHALLENGE, 0, 0, new byte[16])));
                    }
                    catch (IOException | InterruptedException e)
                    {
                        // the member gave up
                    }
                }, "drip-conn");
                t.setDaemon(true);
                t.start();
                conns.add(t);
            }
            catch (IOException e)
            {
                return;
            }
        }
    }

    private static void drip(final OutputStream out, final byte[] bytes) throws IOException, InterruptedException
    {
        for (byte b : bytes)
        {
            out.write(b);
            out.flush();
            Thread.sleep(DRIP_MS);
        }
        // Then silence, until the test ends (interrupt) or the member closes.
        Thread.sleep(60_000);
    }

    private static byte[] bytesOf(final Frame f) throws IOException
    {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        DataOutputStream d = new DataOutputStream(bytes);
        Frame.write(d, f);
        d.flush();
        return bytes.toByteArray();
    }

    /** A valid HELLO's bytes, one byte per socket every periodMs, until interrupted. */
    private static void dripOneByteEach(final List<Socket> sockets, final long periodMs)
    {
        byte[] hello;
        try
        {
            hello = bytesOf(new Frame(Frame.HELLO, 1, 0, new byte[64]));
        }
        catch (IOException e)
        {
            return;
        }
        for (int i = 0; !Thread.currentThread().isInterrupted(); i++)
        {
            for (Socket s : sockets)
            {
                try
                {
                    s.getOutputStream().write(hello[i % hello.length]);
                }
                catch (IOException e)
                {
                    // dropped by rank 0, as it must be
                }
            }
            try
            {
                Thread.sleep(periodMs);
            }
            catch (InterruptedException e)
            {
                return;
            }
        }
    }

    /** Milliseconds from {@code since} until {@code s} reads EOF or fails (rank 0 dropped it). */
    private static long millisUntilClosed(final Socket s, final long since, final int waitMs) throws IOException
    {
        s.setSoTimeout(waitMs);
        InputStream in = s.getInputStream();
        try
        {
            while (in.read() >= 0)
            {
                // rank 0 may send an ERROR frame before closing
            }
        }
        catch (SocketTimeoutException e)
        {
            return Long.MAX_VALUE;
        }
        catch (IOException e)
        {
            // reset: dropped
        }
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - since);
    }

    /** Rendezvous threads whose connection is one of these sockets (named by its remote end: the socket's local port). */
    private static int threadsServing(final List<Socket> sockets)
    {
        final Set<String> ends = new HashSet<>();
        for (Socket s : sockets)
        {
            ends.add(":" + s.getLocalPort());
        }
        int n = 0;
        for (Thread t : Thread.getAllStackTraces().keySet())
        {
            final String name = t.getName();
            final int colon = name.lastIndexOf(':');
            if (name.startsWith(Rendezvous.THREAD_PREFIX) && t.isAlive() && colon >= 0 && ends.contains(name.substring(colon)))
            {
                n++;
            }
        }
        return n;
    }

    private static int rendezvousThreads()
    {
        int n = 0;
        for (Thread t : Thread.getAllStackTraces().keySet())
        {
            if (t.getName().startsWith(Rendezvous.THREAD_PREFIX) && t.isAlive())
            {
                n++;
            }
        }
        return n;
    }
}
