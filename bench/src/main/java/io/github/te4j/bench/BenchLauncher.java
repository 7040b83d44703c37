package io.github.te4j.bench;

import io.github.te4j.Availability;
import io.github.te4j.Platform;
import io.github.te4j.launcher.RankProcesses;
import java.io.IOException;
import java.io.PrintStream;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The no-argument path: picks the platform, starts every rank (as threads of this JVM where CUDA
 * ranks share one GPU, else as child JVMs: {@link BenchConfig#ranksInProcess}), follows rank 0's
 * result file for progress, and prints the report once the ranks are done.
 */
final class BenchLauncher
{
    private static final long POLL_MS = 200;

    private final BenchConfig config;
    /** Progress and notes: standard output carries only the report, so that json or csv there parses. */
    private final PrintStream out = System.err;

    BenchLauncher(final BenchConfig config)
    {
        this.config = config;
    }

    int run() throws IOException, InterruptedException
    {
        final Platform platform = config.resolvePlatform();
        final String unavailable = unavailable(platform);
        if (unavailable != null)
        {
            System.err.println("te4j-bench: " + unavailable);
            return BenchMain.EXIT_UNAVAILABLE;
        }
        final boolean inProcess = config.ranksInProcess(platform);
        warn(platform, inProcess);
        final List<BenchCase> plan = BenchPlan.of(config, platform);
        final Path rowsFile = Files.createTempFile("te4j-bench-", ".rows");
        final String endpoint = "127.0.0.1:" + RankProcesses.freePort();
        final List<Row> rows = new ArrayList<>();
        final List<String> infos = new ArrayList<>();
        boolean ranksFailed = false;
        try (LaunchedRanks ranks = inProcess
                ? new InProcessRanks(config.ranks, r -> config.childArgs(platform, r, endpoint, r == 0 ? rowsFile : null, true))
                : new ChildJvmRanks(config.ranks, childJvmArgs(),
                    r -> config.childArgs(platform, r, endpoint, r == 0 ? rowsFile : null, false));
            RandomAccessFile follow = new RandomAccessFile(rowsFile.toFile(), "r"))
        {
            out.println("te4j-bench: " + BenchMain.platformName(platform) + " platform, " + ranks.describe(config.ranks)
                + ", " + plan.size() + " cases");
            out.flush();
            final Progress progress = Progress.forTerminal(plan.size(), out);
            // Every wait inside a case is bounded by --timeout; this bounds the whole run.
            final long deadline = System.nanoTime() + config.timeout.toNanos() * (plan.size() + 4L);
            final StringBuilder partial = new StringBuilder();
            while (System.nanoTime() < deadline && ranks.anyAlive())
            {
                readLines(follow, partial, rows, infos, progress);
                if (ranks.crashed())
                {
                    break;  // a rank died: the others would only wait for it until their timeouts
                }
                Thread.sleep(POLL_MS);
            }
            final List<LaunchedRanks.Result> results = ranks.await(Duration.ofSeconds(30));
            readLines(follow, partial, rows, infos, progress);
            progress.finish();
            for (final LaunchedRanks.Result r : results)
            {
                // Rank 0 exits 1 when a row failed its check: that is in the rows, not a crash.
                final boolean ok = r.exitCode == 0 || r.rank == 0 && r.exitCode == BenchMain.EXIT_FAILED
                    && rows.size() == plan.size();
                if (!ok)
                {
                    ranksFailed = true;
                    System.err.println("te4j-bench: rank " + r.rank + " failed (exit " + r.exitCode + "); its output:");
                    System.err.println(r.output.isBlank() ? "(none)" : r.output);
                }
            }
        }
        finally
        {
            Files.deleteIfExists(rowsFile);
        }
        final int reported = rows.size();  // te4j's and the baselines' rows; peers' come on top
        if (config.peers)
        {
            final boolean allToAll = config.modes.contains(Mode.ALLTOALL);
            if (platform != Platform.CUDA)
            {
                out.println("peers: the peer programs need GPUs; skipped on the host platform");
            }
            else
            {
                if (config.modes.size() > (allToAll ? 1 : 0))
                {
                    rows.addAll(PeerPrograms.run(config.peersDir, Duration.ofMinutes(15), out));
                }
                if (allToAll)
                {
                    rows.addAll(NcclAllToAll.run(config, config.sizes(Mode.ALLTOALL, platform), Duration.ofMinutes(15),
                        out, infos));
                }
            }
        }
        if (config.saveRows != null)
        {
            SavedRows.save(config.saveRows, infos, rows);
        }
        if (!rows.isEmpty() || !ranksFailed)
        {
            new Report(config, platform, infos, rows).print(System.out, out);
        }
        if (reported < plan.size())
        {
            System.err.println("te4j-bench: only " + reported + " of " + plan.size() + " cases reported");
            return BenchMain.EXIT_FAILED;
        }
        return ranksFailed || !rows.stream().allMatch(Row::ok) ? BenchMain.EXIT_FAILED : 0;
    }

    /** Why the run cannot start on {@code platform}, or null. */
    private String unavailable(final Platform platform)
    {
        final Throwable cause = Availability.unavailabilityCause(platform);
        if (cause != null)
        {
            return cause.getMessage();
        }
        return platform == Platform.CUDA ? config.unreachableDevices() : null;
    }

    /** What makes this run's figures other than they look: oversubscribed CPUs, a shared GPU. */
    private void warn(final Platform platform, final boolean inProcess)
    {
        final int cpus = Runtime.getRuntime().availableProcessors();
        if (config.ranks > cpus)
        {
            out.println("te4j-bench: warning: " + config.ranks + " ranks on " + cpus + " CPUs: ranks that spin on a"
                + " signal share CPUs, so latency and rate figures include the OS scheduler's time slices");
        }
        if (platform == Platform.CUDA)
        {
            final int[] d = config.devices();
            if (d[0] == d[1])
            {
                out.println("te4j-bench: note: ranks 0 and 1 share CUDA device " + d[0] + ": bandwidth is a copy within"
                    + " one GPU" + (inProcess ? " (both ranks in this JVM, one CUDA context)"
                        : ", and latency and rate include the GPU's time slicing between the two processes (their rows"
                        + " say so; --launch in-process times te4j alone)"));
            }
        }
    }

    private static List<String> childJvmArgs()
    {
        final List<String> a = new ArrayList<>();
        a.add("-Dorg.slf4j.simpleLogger.defaultLogLevel="
            + System.getProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn"));
        final String cache = System.getProperty("org.bytedeco.javacpp.cachedir");
        if (cache != null)
        {
            a.add("-Dorg.bytedeco.javacpp.cachedir=" + cache);
        }
        return a;
    }

    /** Reads the complete lines rank 0 has appended since the last call. */
    private static void readLines(final RandomAccessFile f, final StringBuilder partial, final List<Row> rows,
        final List<String> infos, final Progress progress) throws IOException
    {
        final long len = f.length();
        if (len <= f.getFilePointer())
        {
            return;
        }
        final byte[] b = new byte[(int)Math.min(Integer.MAX_VALUE, len - f.getFilePointer())];
        f.readFully(b);
        partial.append(new String(b, StandardCharsets.UTF_8));
        int nl;
        while ((nl = partial.indexOf("\n")) >= 0)
        {
            final String line = partial.substring(0, nl);
            partial.delete(0, nl + 1);
            switch (RowCodec.kind(line))
            {
                case RowCodec.ROW:
                    final Row row = RowCodec.decode(line);
                    rows.add(row);
                    progress.update(rows.size(), row);
                    break;
                case RowCodec.INFO:
                    infos.add(RowCodec.rest(line));
                    break;
                default:
                    break;  // TOTAL: the launcher already knows the plan
            }
        }
    }
}
