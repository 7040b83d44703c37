package io.github.te4j.launcher;


import java.io.IOException;
import java.io.InputStream;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;

/**
 * Starts ranks as child JVMs of the current one (same java, same class path) and collects their
 * exit codes and output, under a deadline. Every child inherits the variables that keep NVLink
 * multicast off ({@link #NO_MULTICAST_ENV}), whatever the parent's environment says.
 */
public final class RankProcesses implements AutoCloseable
{
    /** Set in every child rank and peer program: NVLink multicast can take a shared host's GPUs down. */
    public static final Map<String, String> NO_MULTICAST_ENV = Map.of(
        "NCCL_NVLS_ENABLE", "0",
        "NVSHMEM_DISABLE_NVLS", "1",
        "TORCH_SYMM_MEM_DISABLE_MULTICAST", "1");

    /** How long the other ranks may run on after one rank failed. */
    public static final Duration FAIL_FAST_GRACE = Duration.ofSeconds(5);

    private final List<Process> processes = new ArrayList<>();
    private final List<StringBuilder> outputs = new ArrayList<>();
    private final List<Thread> pumps = new ArrayList<>();

    /** Result of one rank. */
    public static final class Result
    {
        public final int rank;
        public final int exitCode;
        public final String output;

        Result(final int rank, final int exitCode, final String output)
        {
            this.rank = rank;
            this.exitCode = exitCode;
            this.output = output;
        }

        @Override
        public String toString()
        {
            return "rank " + rank + " exit " + exitCode + ":\n" + output;
        }
    }

    /** A free TCP port on loopback (for a rendezvous that children then bind). */
    public static int freePort()
    {
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress()))
        {
            return s.getLocalPort();
        }
        catch (final IOException e)
        {
            throw new IllegalStateException("no free loopback port", e);
        }
    }

    /** The java executable of this JVM. */
    public static String javaExecutable()
    {
        final Path p = Paths.get(System.getProperty("java.home"), "bin", "java");
        return p.toString();
    }

    /**
     * Starts {@code worldSize} child JVMs running {@code mainClass} with the arguments that
     * {@code argsOfRank} gives each rank, with {@code extraJvmArgs} before the class name.
     */
    public void start(final int worldSize, final String mainClass, final List<String> extraJvmArgs,
        final IntFunction<List<String>> argsOfRank)
    {
        for (int r = 0; r < worldSize; r++)
        {
            final List<String> cmd = new ArrayList<>();
            cmd.add(javaExecutable());
            cmd.add("--enable-native-access=ALL-UNNAMED");
            cmd.add("-cp");
            cmd.add(System.getProperty("java.class.path"));
            cmd.addAll(extraJvmArgs);
            cmd.add(mainClass);
            cmd.addAll(argsOfRank.apply(r));
            startCommand(r, cmd);
        }
    }

    /** Starts one command as rank {@code rank} (output captured, multicast kept off). */
    public void startCommand(final int rank, final List<String> cmd)
    {
        startCommand(rank, cmd, Map.of());
    }

    /**
     * Starts one command as rank {@code rank} with {@code env} added to its environment (output
     * captured; multicast kept off whatever {@code env} says).
     */
    public void startCommand(final int rank, final List<String> cmd, final Map<String, String> env)
    {
        final ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        pb.environment().putAll(env);
        pb.environment().putAll(NO_MULTICAST_ENV);
        final Process p;
        try
        {
            p = pb.start();
        }
        catch (final IOException e)
        {
            throw new IllegalStateException("cannot start rank " + rank + ": " + cmd, e);
        }
        final StringBuilder out = new StringBuilder();
        final Thread pump = new Thread(() -> pump(p.getInputStream(), out), "te4j-rank-" + rank + "-output");
        pump.setDaemon(true);
        pump.start();
        synchronized (this)
        {
            processes.add(p);
            outputs.add(out);
            pumps.add(pump);
        }
    }

    private static void pump(final InputStream in, final StringBuilder out)
    {
        final byte[] buf = new byte[8192];
        try
        {
            int n;
            while ((n = in.read(buf)) > 0)
            {
                synchronized (out)
                {
                    out.append(new String(buf, 0, n, StandardCharsets.UTF_8));
                }
            }
        }
        catch (final IOException ignored)
        {
            // the process went away; what was read is kept
        }
    }

    /** The child processes, in rank order (for tests that kill one). */
    public synchronized List<Process> processes()
    {
        return new ArrayList<>(processes);
    }

    /**
     * Waits for every child until {@code timeout}. Fails fast: once one child exits non-zero, the
     * others get a short grace period (their own error reports) and are then killed, so a dead
     * rank never leaves its peers waiting out their timeouts. Children killed are reported with
     * exit code -1.
     */
    public List<Result> await(final Duration timeout) throws InterruptedException
    {
        final long deadline = System.nanoTime() + timeout.toNanos();
        final List<Process> ps = processes();
        long killAt = deadline;
        String killReason = "still running after " + timeout;
        while (ps.stream().anyMatch(Process::isAlive) && System.nanoTime() < killAt)
        {
            for (int r = 0; r < ps.size(); r++)
            {
                final Process p = ps.get(r);
                if (!p.isAlive() && p.exitValue() != 0 && killAt == deadline)
                {
                    killAt = Math.min(deadline, System.nanoTime() + FAIL_FAST_GRACE.toNanos());
                    killReason = "rank " + r + " failed with exit code " + p.exitValue();
                }
            }
            Thread.sleep(20);
        }
        final List<Result> results = new ArrayList<>();
        for (int r = 0; r < ps.size(); r++)
        {
            final Process p = ps.get(r);
            int code = -1;
            if (p.isAlive())
            {
                p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
            else
            {
                code = p.exitValue();
            }
            pumps.get(r).join(5000);
            final String out;
            synchronized (outputs.get(r))
            {
                out = outputs.get(r).toString();
            }
            results.add(new Result(r, code, code == -1 ? out + "\n[killed: " + killReason + "]" : out));
        }
        return results;
    }

    /** Kills whatever is still running. */
    @Override
    public void close()
    {
        for (final Process p : processes())
        {
            if (p.isAlive())
            {
                p.destroyForcibly();
            }
        }
    }

}
