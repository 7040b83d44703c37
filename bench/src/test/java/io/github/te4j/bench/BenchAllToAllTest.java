package io.github.te4j.bench;

import io.github.te4j.Availability;
import io.github.te4j.Platform;
import io.github.te4j.launcher.DeviceMap;
import java.io.StringReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import javax.xml.parsers.DocumentBuilderFactory;
import org.testng.Assert;
import org.testng.SkipException;
import org.testng.annotations.Test;
import org.xml.sax.InputSource;

/**
 * --mode alltoall: real runs (4 host ranks as child JVMs in CI; 2 CUDA ranks on a GPU host, placed
 * round-robin on the GPUs present, both on GPU 0 where there is one) where every
 * row must be verified, and a wrong byte must fail loudly. No assertion on speed.
 */
public class BenchAllToAllTest
{
    private static final String[] SMALL = {"--mode", "alltoall", "--a2a-sizes", "4K,64K", "--warmup", "1",
        "--iterations", "3", "--timeout", "60s", "--format", "csv"};
    /** CSV column of the ranks (the last). */
    private static final int RANKS = 17;

    private static List<String[]> run(final int expectedExit, final String... args) throws Exception
    {
        final Path csv = Files.createTempFile("te4j-a2a", ".csv");
        try
        {
            final List<String> all = new ArrayList<>(List.of(args));
            all.addAll(List.of(SMALL));
            all.addAll(List.of("--output", csv.toString()));
            Assert.assertEquals(BenchMain.run(all.toArray(new String[0])), expectedExit);
            return BenchRunTest.csvRows(csv);
        }
        finally
        {
            Files.deleteIfExists(csv);
        }
    }

    @Test(groups = "host", timeOut = 300_000)
    public void fourHostRanksVerifyEveryBlock() throws Exception
    {
        Availability.ensureAvailability(Platform.HOST);
        final Path svg = Files.createTempFile("te4j-a2a", ".svg");
        final List<String[]> rows = run(0, "--platform", "host", "--ranks", "4", "--chart", svg.toString());
        final Set<String> series = BenchRunTest.checkRows(rows);
        Assert.assertEquals(series, Set.of(Series.TE4J_ALLTOALL.label(), Series.MEMCPY_ALLTOALL.label()));
        Assert.assertEquals(rows.size(), 4, "te4j and memcpy at 4K and 64K");
        final List<String> seen = new ArrayList<>();
        for (final String[] r : rows)
        {
            Assert.assertEquals(r[0], "alltoall");
            Assert.assertEquals(r[RANKS], "4", String.join(",", r));
            seen.add(r[1] + " " + r[4]);
        }
        Assert.assertEquals(seen, List.of("te4j all-to-all 4096", "memcpy all-to-all 4096", "te4j all-to-all 65536",
            "memcpy all-to-all 65536"));
        final String chart = Files.readString(svg);
        Files.delete(svg);
        DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(new InputSource(new StringReader(chart)));
        Assert.assertTrue(chart.contains("All-to-all bandwidth per GPU"), "the chart's all-to-all panel");
        Assert.assertFalse(chart.contains("rank 0 -&gt; rank 1") || chart.contains("rank 0 -> rank 1"),
            "no empty pair panel");
    }

    @Test(groups = "host", timeOut = 300_000)
    public void aWrongByteInABlockIsALoudFailure() throws Exception
    {
        Availability.ensureAvailability(Platform.HOST);
        // Two back-to-back all-to-alls per sample: the later cases check the signal counts of that path.
        final List<String[]> rows = run(BenchMain.EXIT_FAILED, "--platform", "host", "--ranks", "3", "--batch", "2",
            "--corrupt-for-test");
        Assert.assertEquals(rows.get(0)[14], "false", "the corrupted case must fail");
        Assert.assertTrue(rows.get(0)[15].contains("data check failed on rank 1, block from rank 0"), rows.get(0)[15]);
        for (final String[] r : rows.subList(1, rows.size()))
        {
            Assert.assertEquals(r[14], "true", "only the corrupted case fails: " + String.join(",", r));
            Assert.assertEquals(r[7], "2", "batch: " + String.join(",", r));
        }
    }

    @Test(groups = "cuda", timeOut = 600_000)
    public void twoCudaRanksVerifyEveryBlock() throws Exception
    {
        final String why = DeviceMap.cudaUnavailableFor(2);
        if (why != null)
        {
            throw new SkipException(why);
        }
        final List<String[]> rows = run(0, "--platform", "cuda", "--ranks", "2", "--blocks", "16,0");
        Assert.assertEquals(BenchRunTest.checkRows(rows), Set.of(Series.TE4J_ALLTOALL.label()));
        Assert.assertEquals(rows.size(), 2 * 2, "two sizes x two launch shapes");
        for (final String[] r : rows)
        {
            Assert.assertEquals(r[RANKS], "2", String.join(",", r));
        }
    }
}
