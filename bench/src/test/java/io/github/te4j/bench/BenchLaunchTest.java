package io.github.te4j.bench;

import io.github.te4j.Availability;
import io.github.te4j.Platform;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.testng.Assert;
import org.testng.SkipException;
import org.testng.annotations.Test;

/**
 * How the launcher starts the ranks (--launch): CUDA ranks that share one GPU run as threads of
 * the launcher's JVM by default, so that their round trips time te4j and not the GPU switching
 * between two processes; ranks on several GPUs and host ranks stay child JVMs; two processes on
 * one GPU remain an option whose ping-pong rows say they time-slice. Real runs check every row;
 * nothing asserts how fast anything is.
 */
public class BenchLaunchTest
{
    private static final String[] SMALL = {"--sizes", "4K,1M", "--latency-sizes", "8", "--rate-sizes", "4K",
        "--warmup", "1", "--iterations", "3", "--timeout", "60s"};

    @Test
    public void autoRunsRanksSharingOneGpuInProcess()
    {
        Assert.assertTrue(BenchOptionsTest.parse("--gpus", "0,0").ranksInProcess(Platform.CUDA));
        Assert.assertTrue(BenchOptionsTest.parse("--ranks", "3", "--gpus", "1,1,1").ranksInProcess(Platform.CUDA));
        Assert.assertFalse(BenchOptionsTest.parse("--gpus", "0,1").ranksInProcess(Platform.CUDA));
        Assert.assertFalse(BenchOptionsTest.parse("--ranks", "3", "--gpus", "0,0,1").ranksInProcess(Platform.CUDA));
        // The host platform keeps a process per rank: ranks are processes sharing memory there.
        Assert.assertFalse(BenchOptionsTest.parse("--gpus", "0,0").ranksInProcess(Platform.HOST));
        Assert.assertFalse(BenchOptionsTest.parse("--gpus", "0,0", "--launch", "processes").ranksInProcess(Platform.CUDA));
        Assert.assertTrue(BenchOptionsTest.parse("--launch", "in-process").ranksInProcess(Platform.HOST));
        Assert.assertTrue(BenchOptionsTest.parse("--gpus", "0,1", "--launch", "IN-PROCESS").ranksInProcess(Platform.CUDA));
        Assert.assertThrows(IllegalArgumentException.class, () -> BenchOptionsTest.parse("--launch", "threads"));
    }

    @Test
    public void onlySeparateProcessesOnOneGpuTimeSlice()
    {
        final BenchConfig shared = BenchOptionsTest.parse("--gpus", "0,0", "--launch", "processes");
        Assert.assertTrue(shared.pairTimeSlicesGpu(Platform.CUDA));
        Assert.assertFalse(shared.pairTimeSlicesGpu(Platform.HOST));
        Assert.assertFalse(BenchOptionsTest.parse("--gpus", "0,1").pairTimeSlicesGpu(Platform.CUDA));
        // What each launched rank is told: a thread rank shares the context, a child JVM does not.
        final BenchConfig auto = BenchOptionsTest.parse("--gpus", "0,0");
        final BenchConfig thread = BenchOptionsTest.parse(
            auto.childArgs(Platform.CUDA, 1, "127.0.0.1:1", null, true).toArray(new String[0]));
        Assert.assertFalse(thread.pairTimeSlicesGpu(Platform.CUDA));
        final BenchConfig child = BenchOptionsTest.parse(
            auto.childArgs(Platform.CUDA, 1, "127.0.0.1:1", null, false).toArray(new String[0]));
        Assert.assertTrue(child.pairTimeSlicesGpu(Platform.CUDA));
        Assert.assertEquals(BenchPlan.of(thread, Platform.CUDA), BenchPlan.of(auto, Platform.CUDA));
    }

    @Test
    public void oneGpuDefaultSweepIsShorter()
    {
        Assert.assertEquals(BenchOptionsTest.parse("--gpus", "0,0").sizes(Mode.BANDWIDTH, Platform.CUDA),
            Sizes.parseSweep("8:256M"));
        Assert.assertEquals(BenchOptionsTest.parse("--gpus", "0,1").sizes(Mode.BANDWIDTH, Platform.CUDA),
            Sizes.parseSweep("8:1G"));
        // A rank started by hand without --gpus cannot know the others' devices: the common sweep.
        Assert.assertEquals(BenchOptionsTest.parse("--rank", "1").sizes(Mode.BANDWIDTH, Platform.CUDA),
            Sizes.parseSweep("8:1G"));
        Assert.assertEquals(BenchOptionsTest.parse("--gpus", "0,0", "--sweep", "8:1G").sizes(Mode.BANDWIDTH,
            Platform.CUDA), Sizes.parseSweep("8:1G"));
    }

    @Test
    public void peersDirDefaultsInsideTheWorkingDirectory()
    {
        final Path dir = BenchOptionsTest.parse().peersDir;
        Assert.assertFalse(dir.isAbsolute(), dir.toString());
        Assert.assertTrue(dir.normalize().equals(dir) && !dir.startsWith(".."), dir.toString());
    }

    @Test(groups = "host", timeOut = 300_000)
    public void hostRanksInOneJvm() throws Exception
    {
        Availability.ensureAvailability(Platform.HOST);
        final Path csv = Files.createTempFile("te4j-bench-inprocess", ".csv");
        final List<String> args = new ArrayList<>(List.of("--platform", "host", "--launch", "in-process", "--format",
            "csv", "--output", csv.toString()));
        args.addAll(List.of(SMALL));
        final String err = runCapturingErr(args, 0);
        Assert.assertTrue(err.contains("2 ranks in this JVM"), err);
        final List<String[]> rows = BenchRunTest.csvRows(csv);
        BenchRunTest.checkRows(rows);
        // bandwidth: 2 sizes x (te4j, memcpy); latency: te4j, OpStream, LL, raw flag; rate: Java, C++, memcpy.
        Assert.assertEquals(rows.size(), 2 * 2 + 4 + 3);
        for (final String[] r : rows)
        {
            Assert.assertFalse(r[16].contains(Row.TIME_SLICED), String.join(",", r));
        }
    }

    @Test(groups = "host", timeOut = 300_000)
    public void aFailedCheckInOneJvmIsLoud() throws Exception
    {
        Availability.ensureAvailability(Platform.HOST);
        final Path csv = Files.createTempFile("te4j-bench-inprocess", ".csv");
        runCapturingErr(List.of("--platform", "host", "--launch", "in-process", "--mode", "bandwidth", "--sizes",
            "4K,64K", "--warmup", "0", "--iterations", "2", "--format", "csv", "--output", csv.toString(), "--timeout",
            "60s", "--corrupt-for-test"), BenchMain.EXIT_FAILED);
        final List<String[]> rows = BenchRunTest.csvRows(csv);
        Assert.assertEquals(rows.get(0)[14], "false", "the corrupted case must fail");
        Assert.assertTrue(rows.get(0)[15].contains("data check failed"), rows.get(0)[15]);
    }

    /** Ranks on GPU 0 by default in one JVM, then as two processes whose ping-pongs say they time-slice. */
    @Test(groups = "cuda", timeOut = 600_000)
    public void cudaRanksSharingAGpu() throws Exception
    {
        if (Availability.cudaDeviceCount() < 1)
        {
            throw new SkipException("needs a CUDA device: " + Availability.describe());
        }
        final Path csv = Files.createTempFile("te4j-bench-onegpu", ".csv");
        final List<String> args = new ArrayList<>(List.of("--platform", "cuda", "--gpus", "0,0", "--format", "csv",
            "--output", csv.toString()));
        args.addAll(List.of(SMALL));
        Assert.assertTrue(runCapturingErr(args, 0).contains("2 ranks in this JVM"));
        for (final String[] r : BenchRunTest.csvRows(csv))
        {
            Assert.assertFalse(r[16].contains(Row.TIME_SLICED), String.join(",", r));
        }
        BenchRunTest.checkRows(BenchRunTest.csvRows(csv));

        // Two processes time-slice the GPU per round trip: a small batch keeps the run short.
        args.addAll(List.of("--launch", "processes", "--mode", "latency", "--batch", "10"));
        Assert.assertTrue(runCapturingErr(args, 0).contains("2 ranks as child JVMs"));
        final List<String[]> rows = BenchRunTest.csvRows(csv);
        BenchRunTest.checkRows(rows);
        for (final String[] r : rows)
        {
            Assert.assertTrue(r[16].contains(Row.TIME_SLICED), "a ping-pong of two processes: " + String.join(",", r));
        }
    }

    /**
     * Guard: the ping-pongs of two ranks in one JVM on one GPU (one CUDA context) run to the end.
     * Their kernels wait for each other; a CUDA call or a second queued item that makes one rank's
     * kernel wait behind the other's would stall both until the in-kernel deadline and fail the
     * rows. Several samples, both sizes, every ping-pong series (the variants add the raw
     * put+flag and the spin/red/set kernels) and a short --timeout bound the whole test.
     */
    @Test(groups = "cuda", timeOut = 240_000)
    public void cudaPingPongsInOneJvmOnOneGpuFinish() throws Exception
    {
        if (Availability.cudaDeviceCount() < 1)
        {
            throw new SkipException("needs a CUDA device: " + Availability.describe());
        }
        final Path csv = Files.createTempFile("te4j-bench-onegpu-latency", ".csv");
        final String err = runCapturingErr(List.of("--platform", "cuda", "--gpus", "0,0", "--launch", "in-process",
            "--mode", "latency", "--latency-sizes", "8,4K", "--variant", "default", "--variant", "wait=spin,signal=red",
            "--warmup", "2", "--iterations", "10", "--batch", "200", "--timeout", "20s", "--format", "csv", "--output",
            csv.toString()), 0);
        Assert.assertTrue(err.contains("2 ranks in this JVM"), err);
        final List<String[]> rows = BenchRunTest.csvRows(csv);
        final Set<String> series = BenchRunTest.checkRows(rows);
        for (final Series s : List.of(Series.TE4J_PING_PONG, Series.TE4J_LL_PING_PONG, Series.RAW_FLAG,
            Series.RAW_FLAG_DATA))
        {
            Assert.assertTrue(series.stream().anyMatch(l -> l.startsWith(s.label())), s + " missing from " + series);
        }
        for (final String[] r : rows)
        {
            Assert.assertEquals(Integer.parseInt(r[8]), 10, "samples: " + String.join(",", r));
        }
    }

    /**
     * The put kernel's experiment variants (libte4jbench's kernels, launched through libte4j's
     * launcher hook on te4j's op streams) move the puts of a bandwidth run with
     * the data and the guard checked, below and above the bulk variants' 256 KiB.
     */
    @Test(groups = "cuda", timeOut = 300_000)
    public void cudaPutVariantsRunFromTheBench() throws Exception
    {
        if (Availability.cudaDeviceCount() < 1)
        {
            throw new SkipException("needs a CUDA device: " + Availability.describe());
        }
        final List<String> variants = List.of("u8", "u16", "u8c", "tma", "tma8", "tma3", "tmah", "tmaq", "cluster");
        final List<String> args = new ArrayList<>(List.of("--platform", "cuda", "--gpus", "0,0", "--launch",
            "in-process", "--mode", "bandwidth", "--sizes", "4K,1M", "--warmup", "1", "--iterations", "3",
            "--timeout", "20s", "--format", "csv"));
        for (final String v : variants)
        {
            args.addAll(List.of("--variant", "put=" + v));
        }
        final Path csv = Files.createTempFile("te4j-bench-put-variants", ".csv");
        args.addAll(List.of("--output", csv.toString()));
        runCapturingErr(args, 0);
        final Set<String> series = BenchRunTest.checkRows(BenchRunTest.csvRows(csv));
        for (final String v : variants)
        {
            Assert.assertTrue(series.contains("te4j put [put=" + v + "]"), v + " missing from " + series);
        }
    }

    /** Runs te4j-bench with {@code args}, expects {@code exitCode}, returns what it wrote to standard error. */
    private static String runCapturingErr(final List<String> args, final int exitCode) throws Exception
    {
        final PrintStream old = System.err;
        final ByteArrayOutputStream err = new ByteArrayOutputStream();
        final int code;
        try
        {
            System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
            code = BenchMain.run(args.toArray(new String[0]));
        }
        finally
        {
            System.setErr(old);
        }
        final String text = err.toString(StandardCharsets.UTF_8);
        old.print(text);
        Assert.assertEquals(code, exitCode, text);
        return text;
    }
}
