package io.github.te4j;

import io.github.te4j.launcher.RankProcesses;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.testng.Assert;
import org.testng.annotations.Test;

/**
 * Issue 6, target 1: at least 10,000 random and adversarial calls on the public API
 * ({@link ApiFuzzer}), in batches, each batch in a forked JVM. A batch whose JVM dies (non-zero
 * exit other than "contract violated", an hs_err file, or no exit in time) is replayed call by
 * call, each in a fresh JVM, to name the call that crashes. Pass: no JVM crash and no call that
 * broke the contract. Figures land in target/reliability/fuzz.txt.
 *
 * <p>Knobs: {@code -Dte4j.fuzz.calls} (10000), {@code -Dte4j.fuzz.batch} (1000),
 * {@code -Dte4j.fuzz.seed} (fixed, so CI is reproducible), {@code -Dte4j.fuzz.rdmaPercent} (15:
 * the share of calls on the RDMA objects, {@link FuzzRdmaCalls}).
 */
public class ApiFuzzTest
{
    private static final int CONTRACT_VIOLATED = 3;
    private static final Pattern SUMMARY = Pattern.compile(
        "FUZZ calls=(\\d+) refused=(\\d+) violations=(\\d+) rdma=(\\d+) refusedBy=\\{([^}]*)\\}");

    /** Outcome of one forked JVM. */
    static final class Run
    {
        int exit;
        boolean crashed;
        String output = "";
        String lastCall = "";
    }

    @Test(groups = "host", timeOut = 1_800_000)
    public void tenThousandCallsNoCrash() throws Exception
    {
        final int total = Integer.getInteger("te4j.fuzz.calls", 10_000);
        final int batch = Integer.getInteger("te4j.fuzz.batch", 1_000);
        final long seed = Long.getLong("te4j.fuzz.seed", 0x7e4_1_2024L);
        final Path dir = Files.createDirectories(Path.of("target", "reliability"));
        long calls = 0;
        long refused = 0;
        long rdma = 0;
        final TreeMap<String, Long> refusedBy = new TreeMap<>();
        int crashes = 0;
        final List<String> problems = new ArrayList<>();
        for (int from = 0; from < total; from += batch)
        {
            final int to = Math.min(total, from + batch);
            final Run run = fork(seed, from, to, dir);
            final Matcher m = SUMMARY.matcher(run.output);
            if (m.find())
            {
                calls += Long.parseLong(m.group(1));
                refused += Long.parseLong(m.group(2));
                rdma += Long.parseLong(m.group(4));
                for (final String kv : m.group(5).split(", "))
                {
                    final int eq = kv.indexOf('=');
                    if (eq > 0)
                    {
                        refusedBy.merge(kv.substring(0, eq), Long.parseLong(kv.substring(eq + 1)), Long::sum);
                    }
                }
            }
            if (run.crashed)
            {
                crashes++;
                problems.add("batch [" + from + ", " + to + ") crashed (exit " + run.exit + ") during call "
                    + run.lastCall + "; alone: " + replay(seed, from, to, run.lastCall, dir) + "\n" + tail(run.output));
            }
            else if (run.exit != 0)
            {
                problems.add("batch [" + from + ", " + to + ") broke the contract:\n" + tail(run.output));
            }
        }
        final String figures = "seed=" + seed + "\ncalls=" + calls + "\nrdmaCalls=" + rdma + "\nrefused=" + refused
            + "\nrefusedBy=" + refusedBy + "\njvmCrashes=" + crashes
            + "\nproblems=" + problems.size() + "\n";
        Files.writeString(dir.resolve("fuzz.txt"), figures);
        System.out.println("API fuzz: " + figures.replace('\n', ' '));
        Assert.assertTrue(problems.isEmpty(), String.join("\n\n", problems));
        Assert.assertEquals(crashes, 0);
        Assert.assertTrue(calls >= total, "only " + calls + " calls were made");
    }

    /** Runs calls [from, to) in a fresh JVM, with its hs_err file (if any) in a known place. */
    static Run fork(final long seed, final int from, final int to, final Path dir)
        throws IOException, InterruptedException
    {
        final Path work = Files.createTempDirectory(dir, "fuzz-" + from + "-");
        final Path progress = work.resolve("progress");
        final List<String> cmd = List.of(RankProcesses.javaExecutable(), "--enable-native-access=ALL-UNNAMED",
            "-Xmx512m", "-XX:ErrorFile=" + work.resolve("hs_err_%p.log"),
            "-Dte4j.fuzz.rdmaPercent=" + Integer.getInteger("te4j.fuzz.rdmaPercent", 15),
            "-cp", System.getProperty("java.class.path"),
            ApiFuzzer.class.getName(), Long.toString(seed), Integer.toString(from), Integer.toString(to),
            progress.toString());
        final Path log = work.resolve("output.txt");
        final Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        final Run run = new Run();
        if (!p.waitFor(10, TimeUnit.MINUTES))
        {
            // The JVM's own SIGQUIT handler prints every thread's stack into the log: what hung.
            new ProcessBuilder("kill", "-QUIT", Long.toString(p.pid())).start().waitFor(10, TimeUnit.SECONDS);
            Thread.sleep(3000);
            p.destroyForcibly().waitFor();
            run.crashed = true;
            run.exit = -1;
        }
        else
        {
            run.exit = p.exitValue();
        }
        run.output = Files.readString(log, StandardCharsets.UTF_8);
        run.lastCall = Files.exists(progress) ? Files.readString(progress).trim() : "?";
        final File[] errs = work.toFile().listFiles((d, n) -> n.startsWith("hs_err"));
        run.crashed |= (run.exit != 0 && run.exit != CONTRACT_VIOLATED) || (errs != null && errs.length > 0);
        if (!run.crashed && run.exit == 0)
        {
            deleteTree(work);
        }
        return run;
    }

    /** Replays the calls up to the one that was running, one per JVM, newest first; names those that crash alone. */
    private static String replay(final long seed, final int from, final int to, final String last, final Path dir)
        throws IOException, InterruptedException
    {
        int end;
        try
        {
            end = Integer.parseInt(last);
        }
        catch (final NumberFormatException e)
        {
            end = to - 1;
        }
        final List<Integer> culprits = new ArrayList<>();
        for (int i = end; i >= Math.max(from, end - 20); i--)
        {
            if (fork(seed, i, i + 1, dir).crashed)
            {
                culprits.add(i);
            }
        }
        return culprits.isEmpty() ? "no single call crashes alone (needs the sequence)" : "calls " + culprits;
    }

    private static String tail(final String s)
    {
        return s.length() <= 6000 ? s : s.substring(s.length() - 6000);
    }

    private static void deleteTree(final Path p) throws IOException
    {
        try (var files = Files.walk(p))
        {
            files.sorted((a, b) -> b.compareTo(a)).forEach(x -> x.toFile().delete());
        }
    }
}
