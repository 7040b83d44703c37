package io.github.te4j;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.testng.Assert;
import org.testng.annotations.Test;

/**
 * The software NIC against a hostile network: a peer endpoint that drips its handshake (the
 * connect timeout bounds the whole of connectPeers), hundreds of silent strangers on the NIC's
 * port (no thread each, dropped by the handshake timeout, a real rank still connects), and a
 * client that knows every field of a rank's metadata but its NIC key (refused before any
 * request, the window unchanged).
 */
public class RdmaNicAdversaryTest
{
    /** What a deadline may overrun by on a loaded 2-core machine: scheduling, accept latency. */
    private static final long SLACK_MS = 2000;

    @Test(groups = "host", timeOut = 120_000)
    public void drippingEndpointCannotStretchConnectPeers() throws Exception
    {
        try (TransferEngine e = TransferEngine.builder().platform(Platform.HOST).build();
            ServerSocket fake = new ServerSocket(0, 8, InetAddress.getLoopbackAddress()))
        {
            final Thread dripper = new Thread(() -> dripForever(fake), "drip-nic");
            dripper.setDaemon(true);
            dripper.start();
            final RdmaTransport rdma = e.getOrCreateRdmaTransport("soft");
            rdma.initialize(2, 1);
            final DeviceBuffer w = e.getOrCreateP2pTransport(2).allocateBuffer(1 << 16);
            rdma.register(w);
            rdma.createQueuePairs();
            final RdmaMetadata mine = rdma.localMetadata();
            final RdmaMetadata fakePeer = new RdmaMetadata(1, true, 2, 1, 0, fake.getLocalPort(), mine.raddr(),
                mine.rkey(), mine.registeredBytes(), 0, mine.interfaceId(), new int[] {0x777, 0x778},
                new byte[RdmaMetadata.KEY_BYTES]);
            final List<RdmaMetadata> all = List.of(mine, fakePeer);
            final long t0 = System.nanoTime();
            final Te4jException ex = Assert.expectThrows(Te4jException.class,
                () -> rdma.connectPeers(0, MetadataBytes.of(all), 3, Duration.ofSeconds(3)));
            final long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            System.out.println("dripping NIC endpoint: connectPeers(3 s) returned after " + ms + " ms: "
                + ex.getMessage());
            Assert.assertTrue(ms <= 3000 + SLACK_MS, "connectPeers(3 s) took " + ms + " ms");
            Assert.assertTrue(ex.getMessage().contains("connect timeout"), ex.getMessage());
            dripper.interrupt();
        }
    }

    @Test(groups = "host", timeOut = 180_000)
    public void silentStrangersHoldNoThreadsAndKeepNoRankOut() throws Exception
    {
        final int strangers = 400;
        try (TransferEngine e0 = TransferEngine.builder().platform(Platform.HOST).build();
            TransferEngine e1 = TransferEngine.builder().platform(Platform.HOST).build())
        {
            final RdmaTransport[] rdma = pair(e0, e1);
            final RdmaMetadata target = rdma[1].localMetadata();
            final int before = nativeThreads();
            final List<Socket> held = new ArrayList<>();
            final long[] connectedAt = new long[strangers];
            for (int i = 0; i < strangers; i++)
            {
                final Socket s = new Socket();
                s.connect(new InetSocketAddress("127.0.0.1", target.lid()), 2000);
                connectedAt[i] = System.nanoTime();
                held.add(s);
            }
            Thread.sleep(500);
            final int during = nativeThreads();
            System.out.println("silent strangers: " + strangers + " connections, process threads " + before + " -> "
                + during);
            Assert.assertTrue(during - before < 8, "threads grew from " + before + " to " + during);
            // The real ranks connect among them (both NICs are flooded by the same source).
            final long t0 = System.nanoTime();
            final List<RdmaMetadata> all = List.of(rdma[0].localMetadata(), target);
            rdma[0].connectPeers(0, MetadataBytes.of(all), 3, Duration.ofSeconds(10));
            rdma[1].connectPeers(1, MetadataBytes.of(all), 3, Duration.ofSeconds(10));
            System.out.println("silent strangers: both ranks connected after "
                + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0) + " ms");
            long longest = 0;
            int closed = 0;
            for (int i = 0; i < strangers; i++)
            {
                final long ms = millisUntilClosed(held.get(i), connectedAt[i], 15_000);
                if (ms != Long.MAX_VALUE)
                {
                    closed++;
                    longest = Math.max(longest, ms);
                }
            }
            System.out.println("silent strangers: " + closed + " of " + strangers + " dropped, the last "
                + longest + " ms after it connected; NIC counters " + rdma[1].statistics());
            Assert.assertEquals(closed, strangers, "strangers still connected");
            Assert.assertTrue(longest <= 5000 + SLACK_MS, "a stranger stayed " + longest + " ms");
            for (final Socket s : held)
            {
                s.close();
            }
        }
    }

    @Test(groups = "host", timeOut = 120_000)
    public void clientWithoutTheNicKeyIsRefusedBeforeAnyRequest() throws Exception
    {
        try (TransferEngine e0 = TransferEngine.builder().platform(Platform.HOST).build();
            TransferEngine e1 = TransferEngine.builder().platform(Platform.HOST).build())
        {
            final RdmaTransport[] rdma = pair(e0, e1);
            final List<RdmaMetadata> all = List.of(rdma[0].localMetadata(), rdma[1].localMetadata());
            rdma[0].connectPeers(0, MetadataBytes.of(all), 3);
            rdma[1].connectPeers(1, MetadataBytes.of(all), 3);
            final RdmaMetadata victim = all.get(1);
            final DeviceBuffer window = windowOf(e1);
            final byte[] beforeBytes = window.read(0, 4096);
            try (Socket s = new Socket())
            {
                s.connect(new InetSocketAddress("127.0.0.1", victim.lid()), 2000);
                s.setSoTimeout(10_000);
                final InputStream in = s.getInputStream();
                final OutputStream out = s.getOutputStream();
                final byte[] challenge = in.readNBytes(64);
                Assert.assertEquals(challenge.length, 64, "no challenge");
                // Claims rank 0 and its QP numbers, everything the metadata says, with a guessed MAC.
                out.write(frame(1, 0, 0, 0, 1, 2, 32, 0, 0));
                out.write(new byte[32]);
                final byte[] data = new byte[256];
                Arrays.fill(data, (byte)0x5a);
                out.write(frame(3, all.get(0).qpn(1), victim.qpn(0), 0, victim.rkey(), victim.raddr(), data.length,
                    0, 0));
                out.write(data);
                out.flush();
                // All the NIC may send is its refusal (a HELLO_ACK with status 2), then EOF: never a
                // RESPONSE to the WRITE.
                final byte[] answer = readUntilEof(in);
                Assert.assertTrue(answer.length == 0 || answer.length == 80, answer.length + " bytes answered");
                if (answer.length == 80)
                {
                    final ByteBuffer a = ByteBuffer.wrap(answer).order(ByteOrder.LITTLE_ENDIAN);
                    Assert.assertEquals(a.getShort(6), (short)2, "answer type");
                    Assert.assertEquals(a.getInt(20), 2, "answer status: not proven");
                }
            }
            catch (final IOException reset)
            {
                // a reset instead of a FIN: refused all the same
            }
            Assert.assertEquals(window.read(0, 4096), beforeBytes, "a client without the NIC key changed the window");
            final long refused = rdma[1].statistics().get("handshakes_refused");
            System.out.println("spoofing client: refused before any request (handshakes_refused " + refused
                + "), window unchanged; diagnostics: " + rdma[1].diagnostics().trim());
            Assert.assertTrue(refused >= 1, "handshakes_refused " + refused);
        }
    }

    private static final List<DeviceBuffer> WINDOWS = new ArrayList<>();

    private static DeviceBuffer windowOf(final TransferEngine e)
    {
        synchronized (WINDOWS)
        {
            for (final DeviceBuffer b : WINDOWS)
            {
                if (b.owner().engine() == e)
                {
                    return b;
                }
            }
        }
        throw new IllegalStateException("no window");
    }

    /** Two initialized soft transports with a registered window each and queue pairs. */
    private static RdmaTransport[] pair(final TransferEngine e0, final TransferEngine e1)
    {
        final TransferEngine[] es = {e0, e1};
        final RdmaTransport[] rdma = new RdmaTransport[2];
        for (int r = 0; r < 2; r++)
        {
            final DeviceBuffer w = es[r].getOrCreateP2pTransport(2).allocateBuffer(1 << 16);
            synchronized (WINDOWS)
            {
                WINDOWS.add(w);
            }
            rdma[r] = es[r].getOrCreateRdmaTransport("soft");
            rdma[r].initialize(2, 1);
            rdma[r].register(w);
            rdma[r].createQueuePairs();
        }
        return rdma;
    }

    /** A software NIC wire header (wire_format.h), little-endian. */
    private static byte[] frame(final int type, final int srcQpn, final int dstQpn, final int seq, final int rkey,
        final long raddr, final int length, final int arg0, final int arg1)
    {
        final ByteBuffer b = ByteBuffer.allocate(48).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(0x464e5354).putShort((short)2).putShort((short)type).putInt(srcQpn).putInt(dstQpn).putInt(seq)
            .putInt(rkey).putLong(raddr).putInt(length).putInt(arg0).putInt(arg1).putInt(0);
        return b.array();
    }

    private static void dripForever(final ServerSocket fake)
    {
        try (Socket s = fake.accept())
        {
            final OutputStream out = s.getOutputStream();
            final byte[] challenge = frame(6, 0, 0, 0, 0, 0, 16, 0, 0);
            for (int i = 0; i < 1000; i++)
            {
                out.write(challenge[i % challenge.length]);
                out.flush();
                Thread.sleep(500);
            }
        }
        catch (final IOException | InterruptedException e)
        {
            // the NIC gave up, as it must
        }
    }

    /** Everything until EOF (the socket's 10 s timeout fails the test by exception). */
    private static byte[] readUntilEof(final InputStream in) throws IOException
    {
        return in.readAllBytes();
    }

    private static long millisUntilClosed(final Socket s, final long since, final int waitMs) throws IOException
    {
        s.setSoTimeout(waitMs);
        try
        {
            final InputStream in = s.getInputStream();
            while (in.read() >= 0)
            {
                // the challenge comes first
            }
        }
        catch (final SocketTimeoutException e)
        {
            return Long.MAX_VALUE;
        }
        catch (final IOException e)
        {
            // reset: dropped
        }
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - since);
    }

    /** Threads of this process, native ones included (/proc/self/status). */
    private static int nativeThreads() throws IOException
    {
        for (final String line : Files.readAllLines(Path.of("/proc/self/status")))
        {
            if (line.startsWith("Threads:"))
            {
                return Integer.parseInt(line.substring(8).trim());
            }
        }
        throw new IOException("no Threads line in /proc/self/status");
    }
}
