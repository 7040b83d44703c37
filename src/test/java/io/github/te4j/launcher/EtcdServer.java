package io.github.te4j.launcher;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.testng.SkipException;

/**
 * A real etcd for the tests: one member on free loopback ports with its data in a temporary
 * directory, which {@link #kill()} and {@link #restart()} keep so a restarted member has the
 * same keys and leases. Tests skip, saying why, where no etcd binary is installed (Debian:
 * {@code apt-get install etcd-server}).
 */
public final class EtcdServer implements AutoCloseable
{
    private final Path binary;
    private final Path dataDir;
    private final int clientPort;
    private final int peerPort;
    private final Path log;
    private Process process;

    private EtcdServer(final Path binary, final Path dataDir, final int clientPort, final int peerPort)
    {
        this.binary = binary;
        this.dataDir = dataDir;
        this.clientPort = clientPort;
        this.peerPort = peerPort;
        this.log = dataDir.resolveSibling(dataDir.getFileName() + ".log");
    }

    /** @return the etcd binary, if one is installed */
    public static Optional<Path> binary()
    {
        final String env = System.getenv("TE4J_ETCD");
        if (env != null && Files.isExecutable(Path.of(env)))
        {
            return Optional.of(Path.of(env));
        }
        for (final String dir : System.getenv().getOrDefault("PATH", "/usr/bin").split(":"))
        {
            final Path p = Path.of(dir, "etcd");
            if (Files.isExecutable(p))
            {
                return Optional.of(p);
            }
        }
        return Files.isExecutable(Path.of("/usr/bin/etcd")) ? Optional.of(Path.of("/usr/bin/etcd")) : Optional.empty();
    }

    /** Skips the calling test when there is no etcd binary. */
    public static Path requireBinary()
    {
        return binary().orElseThrow(() -> new SkipException("no etcd binary on PATH (or TE4J_ETCD): the real-etcd "
            + "tests need it; on Debian: apt-get install etcd-server"));
    }

    /** Starts a fresh member and waits until it answers. */
    public static EtcdServer start() throws IOException
    {
        final Path bin = requireBinary();
        // tmpfs where there is one: etcd fsyncs every write, and the tests measure te4j, not the disk
        final Path shm = Path.of("/dev/shm");
        final Path dir = Files.isDirectory(shm) && Files.isWritable(shm) ? Files.createTempDirectory(shm, "te4j-etcd-")
            : Files.createTempDirectory("te4j-etcd-");
        final EtcdServer s = new EtcdServer(bin, dir.resolve("data"), freePort(), freePort());
        s.launch();
        return s;
    }

    /** @return the client endpoint, host:port */
    public String endpoint()
    {
        return "127.0.0.1:" + clientPort;
    }

    /** @return an etcd:// address of {@code job} on this member, with {@code options} appended */
    public String uri(final String job, final String options)
    {
        return "etcd://" + endpoint() + "/" + job + (options.isEmpty() ? "" : "?" + options);
    }

    /** Kills the member with SIGKILL (no shutdown); its data stays. */
    public void kill() throws InterruptedException
    {
        if (process != null)
        {
            process.destroyForcibly();
            process.waitFor(10, TimeUnit.SECONDS);
            process = null;
        }
    }

    /** Starts the member again on the same ports with the same data. */
    public void restart() throws IOException
    {
        kill0();
        launch();
    }

    private void kill0()
    {
        try
        {
            kill();
        }
        catch (final InterruptedException e)
        {
            Thread.currentThread().interrupt();
        }
    }

    private void launch() throws IOException
    {
        final String peer = "http://127.0.0.1:" + peerPort;
        final String client = "http://127.0.0.1:" + clientPort;
        final ProcessBuilder pb = new ProcessBuilder(List.of(binary.toString(), "--name", "te4j-test",
            "--data-dir", dataDir.toString(), "--listen-client-urls", client, "--advertise-client-urls", client,
            "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", "te4j-test=" + peer,
            "--initial-cluster-state", "new", "--log-level", "warn", "--logger", "zap"))
            .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
        process = pb.start();
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (System.nanoTime() < deadline)
        {
            if (!process.isAlive())
            {
                throw new IllegalStateException("etcd exited with " + process.exitValue() + ": " + tail());
            }
            try
            {
                // java.base's URL connection: these classes are compiled into te4j's module
                // with the tests, which reads no java.net.http
                final java.net.HttpURLConnection c = (java.net.HttpURLConnection) URI.create(client + "/health")
                    .toURL().openConnection();
                c.setConnectTimeout(500);
                c.setReadTimeout(1000);
                try (java.io.InputStream in = c.getInputStream())
                {
                    if (c.getResponseCode() == 200
                        && new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8).contains("true"))
                    {
                        return;
                    }
                }
                finally
                {
                    c.disconnect();
                }
            }
            catch (final IOException e)
            {
                // not listening yet
            }
            try
            {
                Thread.sleep(50);
            }
            catch (final InterruptedException e)
            {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted", e);
            }
        }
        throw new IllegalStateException("etcd did not become healthy within 20 s: " + tail());
    }

    private String tail()
    {
        try
        {
            final String s = Files.readString(log);
            return s.substring(Math.max(0, s.length() - 2000));
        }
        catch (final IOException e)
        {
            return "(no log: " + e + ")";
        }
    }

    /** Stops the member and deletes its data. */
    @Override
    public void close()
    {
        kill0();
        try (Stream<Path> files = Files.walk(dataDir.getParent()))
        {
            files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
        catch (final IOException e)
        {
            // the temporary directory is best effort
        }
    }

    public static int freePort()
    {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress()))
        {
            return s.getLocalPort();
        }
        catch (final IOException e)
        {
            throw new IllegalStateException("no free loopback port", e);
        }
    }
}
