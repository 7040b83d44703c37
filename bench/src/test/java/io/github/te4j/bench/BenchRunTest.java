package io.github.te4j.bench;

import io.github.te4j.Availability;
import io.github.te4j.Platform;
import io.github.te4j.launcher.DeviceMap;
import io.github.te4j.launcher.RankProcesses;
import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import javax.xml.parsers.DocumentBuilderFactory;
import org.testng.Assert;
import org.testng.SkipException;
import org.testng.annotations.Test;

/**
 * Small real runs: two ranks as child JVMs on the host platform (CI), ranks started by hand, and
 * on a GPU host the same on CUDA, the ranks placed round-robin on the GPUs present (both on GPU 0
 * where there is one, then also with an explicit --gpus 0,0). Every row must be verified and its numbers finite and positive;
 * no assertion on how fast anything is.
 */
public class BenchRunTest
{
    private static final String[] SMALL = {"--sizes", "8,4K,1M", "--latency-sizes", "8,256", "--rate-sizes", "4K",
        "--warmup", "1", "--iterations", "3", "--timeout", "60s"};

    static List<String[]> csvRows(final Path csv) throws Exception
    {
        final List<String> lines = Files.readAllLines(csv, StandardCharsets.UTF_8);
        Assert.assertEquals(lines.get(0), CsvWriter.HEADER);
        final List<String[]> out = new ArrayList<>();
        for (final String line : lines.subList(1, lines.size()))
        {
            out.add(splitCsv(line));
        }
        return out;
    }

    /** One CSV line into fields (RFC 4180 quotes; no line breaks inside fields here). */
    static String[] splitCsv(final String line)
    {
        final List<String> fields = new ArrayList<>();
        final StringBuilder f = new StringBuilder();
        boolean quoted = false;
        for (int i = 0; i < line.length(); i++)
        {
            final char c = line.charAt(i);
            if (quoted)
            {
                if (c == '"' && i + 1 < line.length() && line.charAt(i + 1) == '"')
                {
                    f.append('"');
                    i++;
                }
                else if (c == '"')
                {
                    quoted = false;
                }
                else
                {
                    f.append(c);
                }
            }
            else if (c == '"')
            {
                quoted = true;
            }
            else if (c == ',')
            {
                fields.add(f.toString());
                f.setLength(0);
            }
            else
            {
                f.append(c);
            }
        }
        fields.add(f.toString());
        return fields.toArray(new String[0]);
    }

    /** Every row ok, times finite and positive, bandwidth positive where it applies. */
    static Set<String> checkRows(final List<String[]> rows)
    {
        Assert.assertFalse(rows.isEmpty(), "no rows");
        final Set<String> series = new TreeSet<>();
        for (final String[] r : rows)
        {
            final String what = String.join(",", r);
            Assert.assertEquals(r[14], "true", "row failed: " + what);
            final double median = Double.parseDouble(r[9]);
            final double p99 = Double.parseDouble(r[10]);
            Assert.assertTrue(Double.isFinite(median) && median > 0, "median: " + what);
            Assert.assertTrue(Double.isFinite(p99) && p99 >= median, "p99: " + what);
            Assert.assertTrue(Integer.parseInt(r[8]) >= 1, "samples: " + what);
            if (!r[0].equals("latency"))
            {
                final double gbps = Double.parseDouble(r[11]);
                Assert.assertTrue(Double.isFinite(gbps) && gbps > 0, "GB/s: " + what);
            }
            series.add(r[1]);
        }
        return series;
    }

    private static void ensureHost()
    {
        Availability.ensureAvailability(Platform.HOST);
    }

    @Test(groups = "host", timeOut = 300_000)
    public void launchedHostRunVerifiesEverything() throws Exception
    {
        ensureHost();
        final Path dir = Files.createTempDirectory("te4j-bench-test");
        final Path csv = dir.resolve("rows.csv");
        final Path svg = dir.resolve("chart.svg");
        final List<String> args = new ArrayList<>(List.of("--platform", "host", "--format", "csv", "--output",
            csv.toString(), "--chart", svg.toString(), "--targets"));
        args.addAll(List.of(SMALL));
        Assert.assertEquals(BenchMain.run(args.toArray(new String[0])), 0);
        final Set<String> series = checkRows(csvRows(csv));
        for (final Series s : new Series[] {Series.TE4J_PUT, Series.MEMCPY, Series.TE4J_PING_PONG,
            Series.TE4J_STREAM_PING_PONG, Series.TE4J_LL_PING_PONG, Series.RAW_FLAG, Series.TE4J_RATE_JAVA,
            Series.TE4J_RATE_CPP})
        {
            Assert.assertTrue(series.contains(s.label()), "missing " + s.label() + " in " + series);
        }
        // bandwidth: 3 sizes x (te4j, memcpy); latency: 2 sizes x (te4j, OpStream, LL) + raw flag; rate: 3.
        Assert.assertEquals(csvRows(csv).size(), 3 * 2 + 2 * 3 + 1 + 3);
        DocumentBuilderFactory.newInstance().newDocumentBuilder()
            .parse(new ByteArrayInputStream(Files.readAllBytes(svg)));
    }

    @Test(groups = "host", timeOut = 300_000)
    public void aWrongByteIsALoudFailure() throws Exception
    {
        ensureHost();
        final Path csv = Files.createTempFile("te4j-bench", ".csv");
        Assert.assertEquals(BenchMain.run("--platform", "host", "--mode", "bandwidth", "--sizes", "4K,64K",
            "--warmup", "0", "--iterations", "2", "--format", "csv", "--output", csv.toString(), "--timeout", "60s",
            "--corrupt-for-test"), BenchMain.EXIT_FAILED);
        final List<String[]> rows = csvRows(csv);
        Assert.assertEquals(rows.get(0)[14], "false", "the corrupted case must fail");
        Assert.assertTrue(rows.get(0)[15].contains("data check failed"), rows.get(0)[15]);
        for (final String[] r : rows.subList(1, rows.size()))
        {
            Assert.assertEquals(r[14], "true", "only the corrupted case fails: " + String.join(",", r));
        }
    }

    @Test(groups = "host", timeOut = 300_000)
    public void jsonAndDurationMode() throws Exception
    {
        ensureHost();
        final Path json = Files.createTempFile("te4j-bench", ".json");
        Assert.assertEquals(BenchMain.run("--platform", "host", "--mode", "latency,rate", "--sizes", "64",
            "--rate-sizes", "64K", "--duration", "100ms", "--warmup", "1", "--format", "json", "--output",
            json.toString(), "--timeout", "60s"), 0);
        final String text = Files.readString(json);
        Assert.assertTrue(text.contains("\"series\": \"te4j put+signal ping-pong\""), text);
        Assert.assertFalse(text.contains("\"ok\": false"), text);
    }

    @Test(groups = "host", timeOut = 300_000)
    public void ranksStartedByHand() throws Exception
    {
        ensureHost();
        final int port = RankProcesses.freePort();
        final Path csv = Files.createTempFile("te4j-bench", ".csv");
        final List<String> common = List.of("--platform", "host", "--mode", "bandwidth,latency", "--sizes", "4K,64K",
            "--warmup", "1", "--iterations", "3", "--world-size", "2", "--rendezvous", "127.0.0.1:" + port,
            "--timeout", "60s");
        try (RankProcesses other = new RankProcesses())
        {
            final List<String> cmd = new ArrayList<>(List.of(RankProcesses.javaExecutable(),
                "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"),
                BenchMain.class.getName(), "--rank", "1"));
            cmd.addAll(common);
            other.startCommand(1, cmd);
            final List<String> mine = new ArrayList<>(List.of("--rank", "0", "--format", "csv", "--output",
                csv.toString()));
            mine.addAll(common);
            Assert.assertEquals(BenchMain.run(mine.toArray(new String[0])), 0);
            final RankProcesses.Result r1 = other.await(Duration.ofMinutes(2)).get(0);
            Assert.assertEquals(r1.exitCode, 0, "rank 1:\n" + r1.output);
        }
        checkRows(csvRows(csv));
    }

    @Test(groups = "cuda", timeOut = 600_000)
    public void launchedCudaRunVerifiesEverything() throws Exception
    {
        final String why = DeviceMap.cudaUnavailableFor(2);
        if (why != null)
        {
            throw new SkipException(why);
        }
        launchedCudaRun(List.of());
    }

    /** Both ranks on GPU 0 whatever the host has: the one-GPU layout, asked for explicitly. */
    @Test(groups = "cuda", timeOut = 600_000)
    public void launchedCudaRunOnOneSharedGpu() throws Exception
    {
        if (Availability.cudaDeviceCount() < 1)
        {
            throw new SkipException("needs a CUDA device: " + Availability.describe());
        }
        launchedCudaRun(List.of("--gpus", "0,0"));
    }

    private static void launchedCudaRun(final List<String> extra) throws Exception
    {
        final Path csv = Files.createTempFile("te4j-bench", ".csv");
        final List<String> args = new ArrayList<>(List.of("--platform", "cuda", "--blocks", "16,0", "--format", "csv",
            "--output", csv.toString()));
        args.addAll(List.of(SMALL));
        args.addAll(extra);
        // Ranks sharing a GPU run in this JVM (one CUDA context), so their round trips take
        // microseconds and the default batch of 1000 stays short (BenchLaunchTest: two processes).
        Assert.assertEquals(BenchMain.run(args.toArray(new String[0])), 0);
        final Set<String> series = checkRows(csvRows(csv));
        for (final Series s : new Series[] {Series.TE4J_PUT, Series.COPY_ENGINE, Series.SM_COPY, Series.TE4J_PING_PONG,
            Series.TE4J_LL_PING_PONG, Series.RAW_FLAG, Series.TE4J_RATE_JAVA, Series.TE4J_RATE_CPP})
        {
            Assert.assertTrue(series.contains(s.label()), "missing " + s.label() + " in " + series);
        }
    }
}
