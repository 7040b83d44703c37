package io.github.te4j.bench;

import io.github.te4j.Availability;
import io.github.te4j.Platform;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import org.testng.Assert;
import org.testng.annotations.Test;

/**
 * What te4j-bench prints where: results alone on standard output (so that --format json there
 * parses), progress and notes on standard error; -V names the build's version; --help names no
 * internal paths or tracker numbers; the default device map spells out a shared GPU.
 */
public class BenchCliTest
{
    /** Standard output and error of one in-process run, with its exit code. */
    private record Captured(int exitCode, String out, String err)
    {
    }

    private static Captured capture(final Callable<Integer> run) throws Exception
    {
        final PrintStream oldOut = System.out;
        final PrintStream oldErr = System.err;
        final ByteArrayOutputStream out = new ByteArrayOutputStream();
        final ByteArrayOutputStream err = new ByteArrayOutputStream();
        final int code;
        try
        {
            System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
            System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
            code = run.call();
        }
        finally
        {
            System.setOut(oldOut);
            System.setErr(oldErr);
        }
        final Captured c = new Captured(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
        oldErr.print(c.err());  // the run's own log, for whoever reads the test output
        return c;
    }

    @Test(groups = "host", timeOut = 300_000)
    public void jsonOnStandardOutputIsOnlyJson() throws Exception
    {
        Availability.ensureAvailability(Platform.HOST);
        final Captured c = capture(() -> BenchMain.run("--platform", "host", "--mode", "bandwidth,latency", "--sizes",
            "4K,64K", "--latency-sizes", "8", "--warmup", "0", "--iterations", "2", "--format", "json", "--timeout",
            "60s"));
        Assert.assertEquals(c.exitCode(), 0, c.err());
        final Object parsed = JsonCheck.parse(c.out());
        Assert.assertTrue(parsed instanceof Map, c.out());
        final Object rows = ((Map<?, ?>)parsed).get("rows");
        Assert.assertTrue(rows instanceof List && !((List<?>)rows).isEmpty(), c.out());
        for (final Object row : (List<?>)rows)
        {
            Assert.assertEquals(((Map<?, ?>)row).get("ok"), Boolean.TRUE, row.toString());
            Assert.assertEquals(((Map<?, ?>)row).get("platform"), "host", row.toString());
        }
        // The progress went to standard error: one line per case, and the run's header.
        Assert.assertTrue(c.err().contains("te4j-bench: host platform"), c.err());
        Assert.assertTrue(c.err().contains("[1/"), c.err());
    }

    @Test(groups = "host", timeOut = 300_000)
    public void csvOnStandardOutputIsOnlyCsv() throws Exception
    {
        Availability.ensureAvailability(Platform.HOST);
        final Captured c = capture(() -> BenchMain.run("--platform", "host", "--mode", "bandwidth", "--sizes", "4K",
            "--warmup", "0", "--iterations", "2", "--format", "csv", "--targets", "--timeout", "60s"));
        Assert.assertEquals(c.exitCode(), 0, c.err());
        final String[] lines = c.out().split("\n");
        Assert.assertEquals(lines[0], CsvWriter.HEADER, c.out());
        for (final String line : List.of(lines).subList(1, lines.length))
        {
            Assert.assertEquals(BenchRunTest.splitCsv(line).length, CsvWriter.HEADER.split(",").length, line);
        }
        // --targets beside machine-readable output goes to standard error.
        Assert.assertTrue(c.err().contains("performance targets"), c.err());
    }

    @Test
    public void versionIsTheBuildsVersion() throws Exception
    {
        final Captured c = capture(() -> BenchMain.run("-V"));
        Assert.assertEquals(c.exitCode(), 0);
        final String v = c.out().trim();
        Assert.assertTrue(v.matches("te4j-bench \\d+\\.\\d+\\.\\d+[-.\\w]*"), "-V printed '" + v + "'");
        Assert.assertEquals(v, "te4j-bench " + BenchMain.version());
    }

    @Test
    public void helpNamesNoInternals() throws Exception
    {
        final Captured c = capture(() -> BenchMain.run("--help"));
        Assert.assertEquals(c.exitCode(), 0);
        final String help = c.out();
        Assert.assertTrue(help.contains("--gpus"), help);
        for (final String internal : new String[] {"issue", "tuning.h", "te4j/", "src/", ".cpp", ".cu", "seed"})
        {
            Assert.assertFalse(help.toLowerCase().contains(internal), "--help names '" + internal + "':\n" + help);
        }
    }

    @Test
    public void explicitSharedGpuIsAccepted()
    {
        final BenchConfig c = BenchOptionsTest.parse("--gpus", "0,0");
        Assert.assertEquals(c.deviceOf(0), 0);
        Assert.assertEquals(c.deviceOf(1), 0);
        final List<String> child = c.childArgs(Platform.CUDA, 1, "127.0.0.1:1", null);
        Assert.assertTrue(child.contains("--gpus=0,0"), child.toString());
    }
}
