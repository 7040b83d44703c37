package io.github.te4j.bench;

import io.github.te4j.Availability;
import io.github.te4j.Platform;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.testng.Assert;
import org.testng.SkipException;
import org.testng.annotations.Test;

/**
 * {@code --mode kvcache} in a small shape: every row verified and its numbers finite, the
 * results in the format asked for (CSV in --output, JSON on standard output), a wrong byte a
 * FAILED te4j row and exit code 1, and a bad shape refused naming the option. No assertion on
 * how fast anything is.
 */
public class KvCacheBenchTest
{
    private static final String[] SMALL = {"--mode", "kvcache", "--kv-layers", "4", "--kv-blocks", "16",
        "--kv-block-size", "4K", "--kv-pool", "1M", "--warmup", "1", "--iterations", "3", "--timeout", "60s"};

    private static String[] args(final String platform, final String... more)
    {
        final String[] a = new String[SMALL.length + more.length + 2];
        a[0] = "--platform";
        a[1] = platform;
        System.arraycopy(SMALL, 0, a, 2, SMALL.length);
        System.arraycopy(more, 0, a, 2 + SMALL.length, more.length);
        return a;
    }

    @Test(groups = "host", timeOut = 300_000)
    public void hostRowsVerifiedInCsv() throws Exception
    {
        Availability.ensureAvailability(Platform.HOST);
        final Path csv = Files.createTempFile("te4j-bench-kvcache", ".csv");
        Assert.assertEquals(BenchMain.run(args("host", "--format", "csv", "--output", csv.toString())), 0);
        final List<String[]> rows = BenchRunTest.csvRows(csv);
        final Set<String> series = BenchRunTest.checkRows(rows);
        Assert.assertEquals(series, Set.of("te4j layer (send..landed)", "te4j handoff (all layers)",
            "te4j layer data (send..done)", "memcpy loop: layer", "memcpy loop: handoff"));
        for (final String[] r : rows)
        {
            Assert.assertEquals(r[0], "kvcache", String.join(",", r));
            final boolean whole = r[1].endsWith("handoff") || r[1].contains("handoff (");
            // bytes and requests: one layer (16 x 4 KiB) or all four; samples: every layer of every run, or one per run
            Assert.assertEquals(r[4], whole ? "262144" : "65536", String.join(",", r));
            Assert.assertEquals(r[7], whole ? "64" : "16", String.join(",", r));
            Assert.assertEquals(r[8], whole ? "3" : "12", String.join(",", r));
        }
    }

    @Test(groups = "host", timeOut = 300_000)
    @SuppressWarnings("unchecked")
    public void jsonOnStandardOutputIsNothingButJson() throws Exception
    {
        Availability.ensureAvailability(Platform.HOST);
        final java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
        final java.io.PrintStream saved = System.out;
        final int code;
        System.setOut(new java.io.PrintStream(bytes, true, "UTF-8"));
        try
        {
            code = BenchMain.run(args("host", "--format", "json"));
        }
        finally
        {
            System.setOut(saved);
        }
        final String text = bytes.toString("UTF-8");
        Assert.assertEquals(code, 0, text);
        final Map<String, Object> doc = (Map<String, Object>) JsonCheck.parse(text);
        final List<Object> rows = (List<Object>) doc.get("rows");
        Assert.assertEquals(rows.size(), 5, text);
        for (final Object o : rows)
        {
            Assert.assertEquals(((Map<String, Object>) o).get("ok"), Boolean.TRUE, text);
        }
    }

    @Test(groups = "host", timeOut = 300_000)
    public void aWrongByteFailsTheTe4jRows() throws Exception
    {
        Availability.ensureAvailability(Platform.HOST);
        final Path csv = Files.createTempFile("te4j-bench-kvcache", ".csv");
        Assert.assertEquals(BenchMain.run(args("host", "--format", "csv", "--output", csv.toString(),
            "--corrupt-for-test")), BenchMain.EXIT_FAILED);
        for (final String[] r : BenchRunTest.csvRows(csv))
        {
            final boolean te4j = r[1].startsWith("te4j");
            Assert.assertEquals(r[14], te4j ? "false" : "true", String.join(",", r));
            if (te4j)
            {
                Assert.assertTrue(r[15].contains("layer 0 block 0: byte 0 of 4096"), r[15]);
            }
        }
    }

    @Test(groups = "host")
    public void badShapesAreRefused()
    {
        for (final String[] bad : new String[][] {{"--kv-layers", "0"}, {"--kv-blocks", "0"},
            {"--kv-block-size", "12"}, {"--kv-pool", "64K"}, {"--kv-pool", "65G"}})
        {
            final String[] a = {"--mode", "kvcache", bad[0], bad[1]};
            Assert.assertEquals(BenchMain.run(a), BenchMain.EXIT_USAGE, String.join(" ", a));
        }
        Assert.assertEquals(BenchMain.run("--mode", "kvcache,bandwidth"), BenchMain.EXIT_USAGE);
        Assert.assertEquals(BenchMain.run("--mode", "kvcache", "--transport", "rdma-soft"), BenchMain.EXIT_USAGE);
    }

    /** GPU host: both engines on GPU 0, with the CUDA baselines. */
    @Test(groups = "cuda", timeOut = 600_000)
    public void cudaRowsVerified() throws Exception
    {
        if (!Availability.isAvailable(Platform.CUDA))
        {
            throw new SkipException("needs a CUDA device: " + Availability.describe());
        }
        final Path csv = Files.createTempFile("te4j-bench-kvcache", ".csv");
        Assert.assertEquals(BenchMain.run(args("cuda", "--format", "csv", "--output", csv.toString())), 0);
        Assert.assertEquals(BenchRunTest.checkRows(BenchRunTest.csvRows(csv)), Set.of(
            "te4j layer (send..landed)", "te4j handoff (all layers)", "te4j layer data (send..done)",
            "cudaMemcpyAsync per block: layer", "cudaMemcpyAsync per block: handoff",
            "cudaMemcpyBatchAsync: layer", "cudaMemcpyBatchAsync: handoff", "one contiguous copy: layer",
            "one contiguous copy: handoff"));
    }
}
