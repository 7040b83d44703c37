package io.github.te4j.bench;

import io.github.te4j.Platform;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Collectors;
import org.testng.Assert;
import org.testng.annotations.Test;

/** --variant, --save-rows / --report and the target report over variants (no native code). */
public class BenchVariantsTest
{
    @Test
    public void variantsMultiplyTe4jSeriesOnly()
    {
        final BenchConfig c = BenchOptionsTest.parse("--mode", "all", "--sizes", "1M", "--blocks", "16",
            "--variant", "default", "--variant", "put=tma,pdl=1", "--variant", "put=u8,threads=1024");
        Assert.assertEquals(c.variants, List.of("", "put=tma,pdl=1", "put=u8,threads=1024"));
        final List<BenchCase> plan = BenchPlan.of(c, Platform.CUDA);
        final List<BenchCase> puts = plan.stream().filter(k -> k.series() == Series.TE4J_PUT).collect(Collectors.toList());
        Assert.assertEquals(puts.size(), 3);
        Assert.assertEquals(puts.get(2).threads(), 1024);
        Assert.assertEquals(puts.get(2).tuning(), "put=u8");
        Assert.assertEquals(puts.get(1).seriesLabel(), "te4j put [put=tma,pdl=1]");
        Assert.assertEquals(plan.stream().filter(k -> k.series() == Series.COPY_ENGINE).count(), 1);
        Assert.assertEquals(plan.stream().filter(k -> k.series() == Series.TE4J_RATE_GRAPH).count(), 3);
        Assert.assertEquals(plan.stream().filter(k -> k.series() == Series.RAW_FLAG_DATA).count(), 1);
        Assert.assertEquals(new BenchCase(Series.RAW_FLAG_DATA, 4, 1, 1).tuning(), "rawdata=1");
        Assert.assertTrue(BenchPlan.of(c, Platform.HOST).stream().noneMatch(k -> k.series() == Series.TE4J_RATE_GRAPH));
        // Launched ranks get the same plan.
        final BenchConfig child = BenchOptionsTest.parse(c.childArgs(Platform.CUDA, 1, "127.0.0.1:1234", null)
            .toArray(new String[0]));
        Assert.assertEquals(BenchPlan.of(child, Platform.CUDA), plan);
    }

    /**
     * The same-device body path before and after in one run: te4j's put under the NVLink threshold
     * (samedevce=32m, the old policy) and under te4j's choice, beside the copy engine of each size;
     * the native knob parser takes the variant (host platform: the natives load anywhere).
     */
    @Test(groups = "host")
    public void sameDeviceThresholdBeforeAndAfter()
    {
        final BenchConfig c = BenchOptionsTest.parse("--platform", "cuda", "--gpus", "0,0", "--mode", "bandwidth",
            "--sweep", "64K:64M", "--variant", "samedevce=32m", "--variant", "default");
        final List<BenchCase> plan = BenchPlan.of(c, Platform.CUDA);
        Assert.assertEquals(plan.size(), 11 * 4, plan.toString());
        Assert.assertEquals(plan.get(0).seriesLabel(), "te4j put [samedevce=32m]");
        Assert.assertEquals(plan.get(0).tuning(), "samedevce=32m");
        Assert.assertEquals(plan.get(1).seriesLabel(), "te4j put");
        Assert.assertEquals(plan.get(2).series(), Series.COPY_ENGINE);
        io.github.te4j.Availability.ensureAvailability(Platform.HOST);
        try
        {
            Assert.assertEquals(io.github.te4j.bench.internal.NativeBench.applyTuning("samedevce=32m"), 0,
                io.github.te4j.bench.internal.NativeBench.tuningText());
            Assert.assertTrue(io.github.te4j.bench.internal.NativeBench.tuningText().contains("samedevce=32m"),
                io.github.te4j.bench.internal.NativeBench.tuningText());
        }
        finally
        {
            io.github.te4j.bench.internal.NativeBench.applyTuning("");
        }
    }

    /**
     * The put kernel's experiment variants are the bench's knobs (libte4jbench), not the library's:
     * the bench takes them, shows them as the put in force, and names both value sets when a put
     * value is neither (host platform: the natives load anywhere).
     */
    @Test(groups = "host")
    public void putVariantsAreTheBenchsKnobs()
    {
        io.github.te4j.Availability.ensureAvailability(Platform.HOST);
        try
        {
            for (final String v : new String[] {"u8", "u16", "u8c", "tma", "tma8", "tma3", "tmah", "tmaq", "cluster"})
            {
                Assert.assertEquals(io.github.te4j.bench.internal.NativeBench.applyTuning("put=" + v + ",pdl=0"), 0,
                    io.github.te4j.bench.internal.NativeBench.tuningText());
                final String text = io.github.te4j.bench.internal.NativeBench.tuningText();
                Assert.assertTrue(text.startsWith("put=" + v + ",") && text.contains("pdl=0"), text);
            }
            Assert.assertNotEquals(io.github.te4j.bench.internal.NativeBench.applyTuning("put=nosuch"), 0);
            final String why = io.github.te4j.bench.internal.NativeBench.tuningText();
            Assert.assertTrue(why.contains("its values: base|auto|ce|cesm"), why);
            Assert.assertTrue(why.contains("put=u8|u16|u8c|tma|tma8|tma3|tmah|tmaq|cluster"), why);
        }
        finally
        {
            io.github.te4j.bench.internal.NativeBench.applyTuning("");
        }
    }

    @Test
    public void badVariantsAreRefused()
    {
        for (final String bad : new String[] {"put", "put=", "put=tma;pdl=1", "threads=1000", "threads=2048"})
        {
            Assert.assertThrows(IllegalArgumentException.class, () -> BenchConfig.parseVariant(bad));
        }
        Assert.assertEquals(BenchConfig.parseVariant(" Default "), "");
    }

    @Test
    public void savedRowsReportTargetsAcrossVariants() throws Exception
    {
        final List<Row> rows = List.of(
            row(Mode.BANDWIDTH, "te4j put", 1L << 30, 16, 3.2e6),
            row(Mode.BANDWIDTH, "te4j put [put=tma]", 1L << 30, 16, 2.8e6),
            row(Mode.BANDWIDTH, "copy engine (cudaMemcpyPeerAsync)", 1L << 30, -1, 2.72e6),
            row(Mode.LATENCY, "te4j put+signal ping-pong [wait=spin]", 8, 1, 4500),
            row(Mode.LATENCY, "raw flag ping-pong", 4, 1, 2600),
            row(Mode.LATENCY, "raw put(8 B)+release flag", 4, 1, 4400));
        final Path f = Files.createTempFile("te4j-rows-", ".txt");
        try
        {
            SavedRows.save(f, List.of("test"), rows);
            final String t = TargetReport.write(rows);
            Assert.assertTrue(t.contains("[put=tma]"), t);
            Assert.assertTrue(t.contains("floor: raw put(8 B)+release flag"), t);
            final BenchConfig c = BenchOptionsTest.parse("--report", f.toString());
            final java.io.ByteArrayOutputStream b = new java.io.ByteArrayOutputStream();
            final java.io.PrintStream ps = new java.io.PrintStream(b, true, "UTF-8");
            Assert.assertEquals(SavedRows.report(c, f.toString(), ps, ps), 0);
            Assert.assertTrue(b.toString("UTF-8").contains("performance targets"));
        }
        finally
        {
            Files.deleteIfExists(f);
        }
    }

    private static Row row(final Mode mode, final String series, final long bytes, final int blocks, final double ns)
    {
        return new Row(mode, series, series.startsWith("te4j") ? Role.TE4J : Role.BASELINE, "cuda", bytes, blocks,
            blocks > 0 ? 512 : 0, 1, 10, ns, ns, null, "");
    }
}
