package io.github.te4j.rendezvous;

import io.github.te4j.PeerLostException;
import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertNotNull;
import static org.testng.Assert.assertNull;
import static org.testng.Assert.assertThrows;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import java.io.BufferedInputStream;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.Closeable;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.testng.annotations.DataProvider;
import org.testng.annotations.Test;

public class RendezvousTest
{

    private static final Duration LONG = Ranks.LONG;
    private static final String SECRET = "correct horse battery staple";

    private static Rendezvous.Builder builder(final int rank, final int n, final int port)
    {
        return Rendezvous.builder().rank(rank).worldSize(n).endpoint("127.0.0.1", port)
                .connectTimeout(LONG).defaultTimeout(LONG);
    }

    private static int freePort() throws IOException
    {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress()))
        {
            return s.getLocalPort();
        }
    }

    private static long rendezvousThreads()
    {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.isAlive() && t.getName().startsWith(Rendezvous.THREAD_PREFIX))
                .count();
    }

    private static <T extends Throwable> T failureOf(final List<Throwable> failures, final int rank, final Class<T> type)
    {
        Throwable t = failures.get(rank);
        assertNotNull(t, "rank " + rank + " should have failed");
        assertTrue(type.isInstance(t), "rank " + rank + " threw " + t + ", expected " + type.getSimpleName());
        return type.cast(t);
    }

    // ---------------------------------------------------------------------------------------------
    // Happy paths

    @DataProvider
    public Object[][] worldSizes()
    {
        return new Object[][] {{2}, {4}, {8}};
    }

    @Test(dataProvider = "worldSizes", timeOut = 120_000)
    public void allGatherBarrierBroadcast(final int n) throws Exception
    {
        Rendezvous root = builder(0, n, 0).build();
        int port = root.port();
        assertTrue(port > 0);
        Ranks.runAll(n, r -> r == 0 ? root : builder(r, n, port).build(), Ranks::exercise);
    }

    @Test(timeOut = 60_000)
    public void allGatherWithSharedSecretAndSession() throws Exception
    {
        int n = 3;
        Rendezvous root = builder(0, n, 0).secret(SECRET).session("job-42").build();
        int port = root.port();
        Ranks.runAll(n, r -> r == 0 ? root : builder(r, n, port).secret(SECRET).session("job-42").build(),
                Ranks::exercise);
    }

    @Test(timeOut = 30_000)
    public void worldSizeOneNeedsNoPeers()
    {
        try (Rendezvous rv = builder(0, 1, 0).build())
        {
            List<byte[]> all = rv.allGather(new byte[] {1, 2, 3}, LONG);
            assertEquals(all.size(), 1);
            assertEquals(all.get(0), new byte[] {1, 2, 3});
            rv.barrier(LONG);
            assertEquals(rv.broadcast(0, new byte[] {9}, LONG), new byte[] {9});
        }
    }

    @Test(timeOut = 60_000)
    public void ranksMayConnectBeforeRankZeroListens() throws Exception
    {
        int n = 4;
        int port = freePort();
        Ranks.runAll(n, r ->
        {
            if (r == 0)
            {
                // Give the others a head start so they go through their retry loop.
                try
                {
                    Thread.sleep(300);
                }
                catch (InterruptedException e)
                {
                    Thread.currentThread().interrupt();
                }
                return builder(0, n, port).build();
            }
            return builder(r, n, port).build();
        }, Ranks::exercise);
    }

    // ---------------------------------------------------------------------------------------------
    // Timeouts

    @Test(timeOut = 60_000)
    public void timeoutNamesTheMissingRank() throws Exception
    {
        int n = 3;
        Rendezvous root = builder(0, n, 0).build();
        int port = root.port();
        Rendezvous one = builder(1, n, port).build();
        List<Throwable> failures = Ranks.runCollect(2, r -> r == 0 ? root : one, x ->
        {
            if (x.rank() == 0)
            {
                try
                {
                    x.allGather(new byte[] {0}, Duration.ofMillis(800));
                }
                finally
                {
                    RendezvousException later = expectThrows(RendezvousException.class, () -> x.barrier(LONG));
                    assertTrue(later.getMessage().contains("unusable"), later.getMessage());
                }
            }
            else
            {
                x.allGather(new byte[] {1}, LONG);
            }
        });
        RendezvousTimeoutException t = failureOf(failures, 0, RendezvousTimeoutException.class);
        assertEquals(t.missingRanks(), List.of(2));
        assertTrue(t.getMessage().contains("allGather #1"), t.getMessage());
        assertTrue(t.getMessage().contains("never connected: [2]"), t.getMessage());
        // Rank 1 is told by rank 0 instead of waiting out its own, longer timeout.
        RendezvousException told = failureOf(failures, 1, RendezvousException.class);
        assertTrue(told.getMessage().contains("missing ranks [2]"), told.getMessage());
    }

    @Test(timeOut = 30_000)
    public void connectTimesOutWhenRankZeroNeverListens() throws Exception
    {
        int port = freePort();
        RendezvousTimeoutException e = expectThrows(RendezvousTimeoutException.class,
                () -> builder(1, 2, port).connectTimeout(Duration.ofMillis(500)).build());
        assertEquals(e.missingRanks(), List.of(0));
        assertTrue(e.getMessage().contains("rank 0"), e.getMessage());
    }

    @Test(timeOut = 30_000)
    public void memberTimeoutNamesRankZero()
    {
        try (Rendezvous root = builder(0, 2, 0).build();
             Rendezvous one = builder(1, 2, root.port()).build())
        {
            RendezvousTimeoutException e = expectThrows(RendezvousTimeoutException.class,
                    () -> one.barrier(Duration.ofMillis(300)));
            assertEquals(e.missingRanks(), List.of(0));
            assertTrue(e.getMessage().contains("barrier #1"), e.getMessage());
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Authentication and strangers

    @Test(timeOut = 60_000)
    public void wrongSecretIsRejectedAndTheSessionGoesOn() throws Exception
    {
        int n = 2;
        Rendezvous root = builder(0, n, 0).secret(SECRET).build();
        int port = root.port();
        RendezvousException wrong = expectThrows(RendezvousException.class,
                () -> builder(1, n, port).secret("guess").build());
        assertFalse(wrong instanceof RendezvousTimeoutException, "refusal must not be retried: " + wrong);
        assertTrue(wrong.getMessage().contains("authentication failed"), wrong.getMessage());
        RendezvousException none = expectThrows(RendezvousException.class, () -> builder(1, n, port).build());
        assertTrue(none.getMessage().contains("authentication failed"), none.getMessage());
        Ranks.runAll(n, r -> r == 0 ? root : builder(1, n, port).secret(SECRET).build(), Ranks::exercise);
    }

    @Test(timeOut = 30_000)
    public void mismatchedWorldSizeAndSessionAreRejected()
    {
        try (Rendezvous root = builder(0, 3, 0).build())
        {
            RendezvousException world = expectThrows(RendezvousException.class,
                    () -> builder(1, 4, root.port()).build());
            assertTrue(world.getMessage().contains("worldSize mismatch"), world.getMessage());
            RendezvousException session = expectThrows(RendezvousException.class,
                    () -> builder(1, 3, root.port()).session("other").build());
            assertTrue(session.getMessage().contains("session mismatch"), session.getMessage());
        }
    }

    @Test(timeOut = 60_000)
    public void duplicateRankIsRejected() throws Exception
    {
        int n = 3;
        Rendezvous root = builder(0, n, 0).build();
        int port = root.port();
        Rendezvous first = builder(1, n, port).build();
        RendezvousException dup = expectThrows(RendezvousException.class, () -> builder(1, n, port).build());
        assertTrue(dup.getMessage().contains("duplicate rank 1"), dup.getMessage());
        Ranks.runAll(n, r -> r == 0 ? root : r == 1 ? first : builder(2, n, port).build(), Ranks::exercise);
    }

    @DataProvider
    public Object[][] secrets()
    {
        return new Object[][] {{null}, {SECRET}};
    }

    @Test(dataProvider = "secrets", timeOut = 90_000)
    public void strangersCannotBreakTheSession(final String secret) throws Exception
    {
        int n = 3;
        Rendezvous root = builder(0, n, 0).secret(secret).handshakeTimeout(Duration.ofSeconds(20)).build();
        int port = root.port();
        try (RawPeer silent = RawPeer.connect(port);
             RawPeer http = RawPeer.connect(port);
             RawPeer noise = RawPeer.connect(port);
             RawPeer outOfRange = RawPeer.connect(port);
             RawPeer huge = RawPeer.connect(port);
             RawPeer badVersion = RawPeer.connect(port))
        {
            http.sendRaw("GET /index HTTP/1.0\n".getBytes(StandardCharsets.US_ASCII)); // one header's worth
            byte[] random = new byte[4096];
            new Random(7).nextBytes(random);
            noise.sendRaw(random);
            outOfRange.send(new Frame(Frame.HELLO, 9, 0, RawPeer.hello(n, false, Rendezvous.DEFAULT_SESSION)));
            huge.sendRaw(RawPeer.header(Frame.MAGIC, Frame.VERSION, Frame.HELLO, 1, 0, Integer.MAX_VALUE));
            badVersion.sendRaw(RawPeer.header(Frame.MAGIC, (short) 99, Frame.HELLO, 1, 0, 0));

            // Each is refused and its connection closed, the reason in an ERROR frame where it fits.
            assertTrue(http.drainUntilClosed().contains("bad magic"));
            noise.drainUntilClosed();
            assertTrue(outOfRange.drainUntilClosed().contains("out of range"));
            assertTrue(huge.drainUntilClosed().contains("out of bounds"));
            assertTrue(badVersion.drainUntilClosed().contains("unsupported protocol version"));

            // The real ranks still complete while the silent stranger holds its connection open.
            Ranks.runAll(n, r -> r == 0 ? root : builder(r, n, port).secret(secret).build(), Ranks::exercise);
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Malformed frames

    @DataProvider
    public Object[][] badHeaders()
    {
        return new Object[][] {
            {RawPeer.header(0x12345678, Frame.VERSION, Frame.GATHER, 1, 1, 0), "bad magic"},
            {RawPeer.header(Frame.MAGIC, (short) 2, Frame.GATHER, 1, 1, 0), "unsupported protocol version 2"},
            {RawPeer.header(Frame.MAGIC, Frame.VERSION, (byte) 42, 1, 1, 0), "unknown frame"},
            {RawPeer.header(Frame.MAGIC, Frame.VERSION, Frame.GATHER, 1, 1, 4096), "out of bounds"},
            {RawPeer.header(Frame.MAGIC, Frame.VERSION, Frame.GATHER, 1, 1, -1), "out of bounds"},
            {withFlags(RawPeer.header(Frame.MAGIC, Frame.VERSION, Frame.GATHER, 1, 1, 0)), "reserved flags"},
            {new byte[] {0x54, 0x45, 0x34}, "truncated frame header"},
            {RawPeer.header(Frame.MAGIC, Frame.VERSION, Frame.GATHER, 1, 1, 100), "truncated GATHER payload"},
        };
    }

    private static byte[] withFlags(final byte[] header)
    {
        header[7] = 1;
        return header;
    }

    @Test(dataProvider = "badHeaders", timeOut = 10_000)
    public void codecRejectsMalformedFrames(final byte[] bytes, final String reason)
    {
        DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes));
        RendezvousException e = expectThrows(RendezvousException.class, () -> Frame.read(in, 1024, "peer-x"));
        assertEquals(e.peer(), "peer-x");
        assertTrue(e.reason().contains(reason), e.reason());
    }

    @Test(timeOut = 10_000)
    public void codecRoundTripsAndReportsCleanEof() throws IOException
    {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        Frame.write(new DataOutputStream(bytes), new Frame(Frame.RESULT, 3, 17, new byte[] {5, 6}));
        byte[] wire = bytes.toByteArray();
        assertEquals(wire.length, Frame.HEADER_BYTES + 2);
        assertEquals(ByteBuffer.wrap(wire).getInt(), 0x54453452);
        DataInputStream in = new DataInputStream(new ByteArrayInputStream(wire));
        Frame f = Frame.read(in, 1024, "p");
        assertEquals(f.type(), Frame.RESULT);
        assertEquals(f.rank(), 3);
        assertEquals(f.seq(), 17);
        assertEquals(f.payload(), new byte[] {5, 6});
        assertNull(Frame.read(in, 1024, "p"));
    }

    @Test(timeOut = 10_000)
    public void resultDecodingRejectsBadPayloads()
    {
        byte[] good = Rendezvous.encodeResult(new byte[][] {{1}, {}, {2, 3}});
        assertEquals(Rendezvous.decodeResult(good, 3, "p").get(2), new byte[] {2, 3});
        assertThrows(RendezvousException.class, () -> Rendezvous.decodeResult(good, 4, "p"));
        byte[] trailing = java.util.Arrays.copyOf(good, good.length + 1);
        assertThrows(RendezvousException.class, () -> Rendezvous.decodeResult(trailing, 3, "p"));
        byte[] cut = java.util.Arrays.copyOf(good, good.length - 1);
        assertThrows(RendezvousException.class, () -> Rendezvous.decodeResult(cut, 3, "p"));
    }

    @DataProvider
    public Object[][] badFramesAfterJoining()
    {
        return new Object[][] {
            {RawPeer.frameBytes(new Frame(Frame.GATHER, 1, 5, new byte[] {1})), "sequence mismatch"},
            {RawPeer.frameBytes(new Frame(Frame.GATHER, 2, 1, new byte[] {1})), "claims rank 2"},
            {RawPeer.frameBytes(new Frame(Frame.HELLO, 1, 1, new byte[0])), "unexpected HELLO"},
            {RawPeer.header(Frame.MAGIC, Frame.VERSION, Frame.GATHER, 1, 1, 2048), "out of bounds"},
            {RawPeer.header(0xdeadbeef, Frame.VERSION, Frame.GATHER, 1, 1, 0), "bad magic"},
        };
    }

    @Test(dataProvider = "badFramesAfterJoining", timeOut = 30_000)
    public void joinedRankSendingABadFrameIsDropped(final byte[] bad, final String reason) throws Exception
    {
        try (Rendezvous root = builder(0, 2, 0).maxFrameBytes(1024).build();
             RawPeer peer = RawPeer.connect(root.port()))
        {
            peer.joinWithoutSecret(1, 2, Rendezvous.DEFAULT_SESSION);
            peer.sendRaw(bad);
            assertTrue(peer.drainUntilClosed().contains(reason));
            PeerLostException e = expectThrows(PeerLostException.class, () -> root.allGather(new byte[0], LONG));
            assertEquals(e.rank(), 1);
            assertTrue(e.reason().contains(reason), e.reason());
        }
    }

    @Test(timeOut = 30_000)
    public void oversizeResultIsRejected() throws Exception
    {
        int n = 2;
        Rendezvous root = builder(0, n, 0).maxFrameBytes(1024).build();
        int port = root.port();
        List<Throwable> failures = Ranks.runCollect(n, r -> r == 0 ? root : builder(1, n, port).maxFrameBytes(1024)
                .build(), x -> x.allGather(new byte[600], LONG));
        assertTrue(failureOf(failures, 0, RendezvousException.class).getMessage().contains("exceeds the frame limit"));
        assertTrue(failureOf(failures, 1, RendezvousException.class).getMessage().contains("exceeds the frame limit"));
        try (Rendezvous solo = builder(0, 1, 0).maxFrameBytes(1024).build())
        {
            assertThrows(IllegalArgumentException.class, () -> solo.allGather(new byte[1025], LONG));
        }
    }

    @Test(timeOut = 30_000)
    public void mismatchedOperationsAreReported() throws Exception
    {
        int n = 2;
        Rendezvous root = builder(0, n, 0).build();
        int port = root.port();
        List<Throwable> failures = Ranks.runCollect(n, r -> r == 0 ? root : builder(1, n, port).build(), x ->
        {
            if (x.rank() == 0)
            {
                x.allGather(new byte[] {1}, LONG);
            }
            else
            {
                x.barrier(LONG);
            }
        });
        RendezvousException e = failureOf(failures, 0, RendezvousException.class);
        assertEquals(e.peer(), "rank 1");
        assertTrue(e.reason().contains("called barrier"), e.reason());
        assertTrue(failureOf(failures, 1, RendezvousException.class).getMessage().contains("called barrier"));
    }

    // ---------------------------------------------------------------------------------------------
    // Lost peers

    @Test(timeOut = 30_000)
    public void disconnectingRankIsReportedAsLost() throws Exception
    {
        int n = 3;
        Rendezvous root = builder(0, n, 0).build();
        int port = root.port();
        try (RawPeer two = RawPeer.connect(port))
        {
            two.joinWithoutSecret(2, n, Rendezvous.DEFAULT_SESSION);
            Rendezvous one = builder(1, n, port).build();
            two.close();
            List<Throwable> failures = Ranks.runCollect(2, r -> r == 0 ? root : one,
                    x -> x.allGather(new byte[] {(byte) x.rank()}, LONG));
            PeerLostException lost = failureOf(failures, 0, PeerLostException.class);
            assertEquals(lost.rank(), 2);
            assertTrue(lost.getMessage().contains("EOF"), lost.getMessage());
            // Rank 1 hears either rank 0's report of rank 2 or, when rank 0 already closed after
            // its own failure, that rank 0 is gone: both are te4j exceptions naming who was lost.
            final String seen = failureOf(failures, 1, io.github.te4j.Te4jException.class).getMessage();
            assertTrue(seen.contains("rank 2") || seen.contains("rank 0 closed"), seen);
        }
    }

    @Test(timeOut = 30_000)
    public void closedRankIsReportedAsLost()
    {
        try (Rendezvous root = builder(0, 2, 0).build())
        {
            builder(1, 2, root.port()).build().close();
            PeerLostException lost = expectThrows(PeerLostException.class, () -> root.barrier(LONG));
            assertEquals(lost.rank(), 1);
            assertTrue(lost.reason().contains("closed its rendezvous"), lost.reason());
        }
    }

    @Test(timeOut = 30_000)
    public void losingRankZeroIsReportedOnMembers() throws Exception
    {
        Rendezvous root = builder(0, 2, 0).build();
        try (Rendezvous one = builder(1, 2, root.port()).build())
        {
            root.close();
            PeerLostException lost = expectThrows(PeerLostException.class, () -> one.allGather(new byte[] {1}, LONG));
            assertEquals(lost.rank(), 0);
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Resources and arguments

    @Test(timeOut = 120_000)
    public void closeReleasesThreadsAndSockets() throws Exception
    {
        Path fds = Path.of("/proc/self/fd");
        oneSession(4); // warm up class loading, logging, thread pools
        long fdBefore = Files.isDirectory(fds) ? countFds(fds) : -1;
        int port = -1;
        for (int i = 0; i < 3; i++)
        {
            port = oneSession(4);
            assertEquals(rendezvousThreads(), 0L, "rendezvous threads left after close");
        }
        if (fdBefore >= 0)
        {
            long fdAfter = countFds(fds);
            // Each session opens 7 sockets (plus a stranger's); a leak would show as several per round.
            assertTrue(fdAfter <= fdBefore + 2, "file descriptors grew from " + fdBefore + " to " + fdAfter);
        }
        try (ServerSocket again = new ServerSocket())
        {
            again.setReuseAddress(true);
            again.bind(new java.net.InetSocketAddress(InetAddress.getByName("127.0.0.1"), port));
        }
    }

    private static long countFds(final Path fds) throws IOException
    {
        try (Stream<Path> s = Files.list(fds))
        {
            return s.count();
        }
    }

    private static int oneSession(final int n) throws Exception
    {
        Rendezvous root = builder(0, n, 0).build();
        int port = root.port();
        try (RawPeer stranger = RawPeer.connect(port))
        {
            Ranks.runAll(n, r -> r == 0 ? root : builder(r, n, port).build(), Ranks::exercise);
        }
        finally
        {
            root.close();
        }
        return port;
    }

    @Test(timeOut = 10_000)
    public void invalidArgumentsAreRefused()
    {
        assertThrows(IllegalArgumentException.class, () -> Rendezvous.builder().rank(0).worldSize(0).build());
        assertThrows(IllegalArgumentException.class, () -> Rendezvous.builder().rank(0).worldSize(65).build());
        assertThrows(IllegalArgumentException.class, () -> Rendezvous.builder().rank(-1).worldSize(2).build());
        assertThrows(IllegalArgumentException.class, () -> Rendezvous.builder().rank(2).worldSize(2).build());
        assertThrows(IllegalArgumentException.class, () -> Rendezvous.builder().rank(1).worldSize(2).build());
        assertThrows(IllegalArgumentException.class,
                () -> Rendezvous.builder().rank(1).worldSize(2).endpoint("127.0.0.1:0").build());
        assertThrows(IllegalArgumentException.class, () -> Rendezvous.builder().endpoint("no-port"));
        assertThrows(IllegalArgumentException.class, () -> Rendezvous.builder().endpoint("host:99999"));
        assertThrows(IllegalArgumentException.class, () -> Rendezvous.builder().secret(new byte[0]));
        assertThrows(IllegalArgumentException.class, () -> Rendezvous.builder().connectTimeout(Duration.ZERO));
        Rendezvous.Builder v6 = Rendezvous.builder().endpoint("[::1]:1234");
        assertNotNull(v6);
        Rendezvous rv = builder(0, 1, 0).build();
        assertTrue(rv.endpoint().startsWith("127.0.0.1:"), rv.endpoint());
        assertThrows(IllegalArgumentException.class, () -> rv.allGather(null, LONG));  // the package's null rule
        assertThrows(IllegalArgumentException.class, () -> rv.barrier(Duration.ofSeconds(-1)));
        assertThrows(IllegalArgumentException.class, () -> rv.broadcast(3, new byte[0], LONG));
        rv.close();
        rv.close();
        assertThrows(IllegalStateException.class, () -> rv.barrier(LONG));
    }

    @Test(timeOut = 10_000)
    public void listeningOnABusyPortFails() throws IOException
    {
        try (ServerSocket busy = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1")))
        {
            RendezvousException e = expectThrows(RendezvousException.class,
                    () -> builder(0, 2, busy.getLocalPort()).build());
            assertTrue(e.getMessage().contains("cannot listen"), e.getMessage());
        }
    }

    // ---------------------------------------------------------------------------------------------

    /** A hand-driven client, to play strangers and misbehaving ranks. */
    static final class RawPeer implements Closeable
    {
        final Socket socket;
        final DataInputStream in;
        final DataOutputStream out;

        private RawPeer(final Socket socket) throws IOException
        {
            this.socket = socket;
            socket.setSoTimeout(20_000);
            this.in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
            this.out = new DataOutputStream(socket.getOutputStream());
        }

        static RawPeer connect(final int port) throws IOException
        {
            return new RawPeer(new Socket(InetAddress.getByName("127.0.0.1"), port));
        }

        static byte[] hello(final int worldSize, final boolean secret, final String session)
        {
            byte[] s = session.getBytes(StandardCharsets.UTF_8);
            return ByteBuffer.allocate(4 + 1 + 16 + 2 + s.length).putInt(worldSize).put((byte) (secret ? 1 : 0))
                    .put(new byte[16]).putShort((short) s.length).put(s).array();
        }

        static byte[] header(final int magic, final short version, final byte type, final int rank, final int seq, final int length)
        {
            return ByteBuffer.allocate(Frame.HEADER_BYTES).putInt(magic).putShort(version).put(type).put((byte) 0)
                    .putInt(rank).putInt(seq).putInt(length).array();
        }

        static byte[] frameBytes(final Frame f)
        {
            try
            {
                ByteArrayOutputStream b = new ByteArrayOutputStream();
                Frame.write(new DataOutputStream(b), f);
                return b.toByteArray();
            }
            catch (IOException e)
            {
                throw new AssertionError(e);
            }
        }

        void joinWithoutSecret(final int rank, final int worldSize, final String session) throws IOException
        {
            send(new Frame(Frame.HELLO, rank, 0, hello(worldSize, false, session)));
            assertEquals(Frame.read(in, 4096, "root").type(), Frame.CHALLENGE);
            send(new Frame(Frame.AUTH, rank, 0, new byte[0]));
            assertEquals(Frame.read(in, 4096, "root").type(), Frame.WELCOME);
        }

        void send(final Frame f) throws IOException
        {
            Frame.write(out, f);
        }

        void sendRaw(final byte[] bytes) throws IOException
        {
            out.write(bytes);
            out.flush();
        }

        /** Reads until rank 0 closes the connection; returns the ERROR reasons it sent, joined. */
        String drainUntilClosed() throws IOException
        {
            StringBuilder reasons = new StringBuilder();
            try
            {
                while (true)
                {
                    Frame f = Frame.read(in, 1 << 20, "root");
                    if (f == null)
                    {
                        return reasons.toString();
                    }
                    if (f.type() == Frame.ERROR)
                    {
                        reasons.append(new String(f.payload(), StandardCharsets.UTF_8)).append('\n');
                    }
                }
            }
            catch (SocketTimeoutException e)
            {
                throw new AssertionError("rank 0 did not close the connection", e);
            }
            catch (IOException e)
            {
                // a reset also counts as closed
                return reasons.toString();
            }
        }

        @Override
        public void close() throws IOException
        {
            socket.close();
        }
    }
}
