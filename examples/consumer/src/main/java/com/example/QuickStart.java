package com.example;

import io.github.te4j.Availability;
import io.github.te4j.CommContext;
import io.github.te4j.DeviceBuffer;
import io.github.te4j.OpStream;
import io.github.te4j.P2pTransport;
import io.github.te4j.Platform;
import io.github.te4j.TransferEngine;
import io.github.te4j.exchange.HandleExchange;
import io.github.te4j.rendezvous.Rendezvous;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * te4j's quick start on the host platform: two ranks (processes) share a window each; rank 0
 * writes random data into rank 1's window and raises a signal word there, rank 1 waits for the
 * signal and checks the data. Run it with no arguments: it starts both ranks itself.
 *
 * <p>Window layout rule: every rank allocates a window of the same size; data and signal words
 * are addressed by offset into the peer's window; a signal word is 8 bytes, 8-byte aligned, and
 * lies in the window but outside any data a put writes.
 */
public final class QuickStart
{
    static final int DATA_BYTES = 64 * 1024;
    static final long SIGNAL_OFFSET = DATA_BYTES;           // right after the data, 8-byte aligned
    static final long WINDOW_BYTES = DATA_BYTES + 64;
    static final Duration TIMEOUT = Duration.ofSeconds(30);

    private QuickStart()
    {
    }

    public static void main(final String[] args) throws Exception
    {
        if (args.length == 0)
        {
            System.out.println(Availability.describe());
            System.exit(launchBothRanks());
        }
        final int rank = Integer.parseInt(args[0]);
        final String endpoint = args[1];
        final long seed = Long.parseLong(args[2]);
        try (HandleExchange exchange = Rendezvous.builder().rank(rank).worldSize(2).endpoint(endpoint)
                 .connectTimeout(TIMEOUT).defaultTimeout(TIMEOUT).build();
             TransferEngine engine = TransferEngine.builder().platform(Platform.HOST).build())
        {
            final P2pTransport p2p = engine.getOrCreateP2pTransport(2);
            final DeviceBuffer window = p2p.allocateBuffer(WINDOW_BYTES);
            final CommContext ctx = p2p.connect(window, exchange, TIMEOUT);
            final OpStream stream = engine.createStream();
            final byte[] data = randomData(seed);
            boolean ok = true;
            if (rank == 0)
            {
                window.write(0, data);                                  // the source: own window
                stream.putWithSignal(ctx, 1, 0, window, 0, DATA_BYTES, SIGNAL_OFFSET, 1);
                stream.synchronize(TIMEOUT);                            // errors surface here
            }
            else
            {
                stream.waitSignal(ctx, SIGNAL_OFFSET, 1, TIMEOUT);      // signal >= 1: data landed
                stream.synchronize(TIMEOUT);
                ok = java.util.Arrays.equals(window.read(0, DATA_BYTES), data);
                System.out.println("rank 1: " + DATA_BYTES + " bytes " + (ok ? "verified" : "DIFFER"));
            }
            exchange.barrier(TIMEOUT);                                  // nobody frees while mapped
            System.exit(ok ? 0 : 1);
        }
    }

    private static byte[] randomData(final long seed)
    {
        final byte[] data = new byte[DATA_BYTES];
        new java.util.Random(seed).nextBytes(data);
        return data;
    }

    /** Starts ranks 0 and 1 as child JVMs, the same way this one was started (class or module path). */
    private static int launchBothRanks() throws IOException, InterruptedException
    {
        final int port;
        try (ServerSocket s = new ServerSocket(0))
        {
            port = s.getLocalPort();
        }
        final long seed = ThreadLocalRandom.current().nextLong();
        final List<Process> ranks = new ArrayList<>();
        for (int rank = 0; rank < 2; rank++)
        {
            final List<String> cmd = new ArrayList<>();
            cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
            cmd.add("--enable-native-access=ALL-UNNAMED");
            if (QuickStart.class.getModule().isNamed())
            {
                cmd.addAll(List.of("--enable-native-access=ALL-UNNAMED,io.github.te4j,org.bytedeco.javacpp",
                    "-p", System.getProperty("jdk.module.path"), "--add-modules", "ALL-MODULE-PATH",
                    "-m", QuickStart.class.getModule().getName() + "/" + QuickStart.class.getName()));
            }
            else
            {
                cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), QuickStart.class.getName()));
            }
            cmd.addAll(List.of("" + rank, "127.0.0.1:" + port, "" + seed));
            ranks.add(new ProcessBuilder(cmd).inheritIO().start());
        }
        int worst = 0;
        for (final Process p : ranks)
        {
            if (!p.waitFor(2, TimeUnit.MINUTES))
            {
                p.destroyForcibly();
                worst = 1;
            }
            else
            {
                worst = Math.max(worst, p.exitValue() == 0 ? 0 : 1);
            }
        }
        System.out.println(worst == 0 ? "example passed" : "example FAILED");
        return worst;
    }
}
