package io.github.te4j.bench;

import io.github.te4j.Availability;
import io.github.te4j.Platform;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.testng.Assert;
import org.testng.annotations.Test;

/**
 * --mode batch honours --format, --output and --targets as every mode does: json or csv alone on
 * standard output (the table then goes to standard error), --output gets the chosen format while
 * the table stays on the terminal, and --targets adds the batch target. The rows themselves
 * come from the plumbing (no native code), then once from a real host run.
 */
public class BatchOutputTest
{
    private static final class Streams
    {
        final ByteArrayOutputStream out = new ByteArrayOutputStream();
        final ByteArrayOutputStream err = new ByteArrayOutputStream();
        final PrintStream outStream = new PrintStream(out, true, StandardCharsets.UTF_8);
        final PrintStream errStream = new PrintStream(err, true, StandardCharsets.UTF_8);

        String out()
        {
            return out.toString(StandardCharsets.UTF_8);
        }

        String err()
        {
            return err.toString(StandardCharsets.UTF_8);
        }
    }

    /** Two shapes' worth of rows as BatchBench writes them: te4j beside the memcpy loop. */
    private static void writeRows(final BatchOutput o)
    {
        o.printf(java.util.Locale.ROOT, "batch: HOST, %d iterations per row (median)%n", 3);
        o.printf("%-14s %-5s %-28s %12s%n", "shape", "op", "series", "median us");
        o.row("4096 x 4 KiB", "WRITE", TargetReport.BATCH_TE4J, 2000.0, 16L << 20, 4000.0, null);
        o.row("4096 x 4 KiB", "WRITE", "memcpy loop", 4000.0, 16L << 20, 4000.0, null);
        o.row("64 x 1 MiB", "READ", TargetReport.BATCH_TE4J, 8000.0, 64L << 20, 4000.0, null);
        o.row("64 x 1 MiB", "READ", "memcpy loop", 4000.0, 64L << 20, 4000.0, null);
        o.row("64 x 1 MiB", "READ", "te4j batch, descriptors", 9000.0, 64L << 20, 4000.0, "block 3 differs");
        o.println("vs base: the row's speed over the memcpy loop");
    }

    private static BatchOutput output(final Streams s, final String... args)
    {
        return new BatchOutput(BenchOptionsTest.parse(args), "host", 3, s.outStream, s.errStream);
    }

    @Test
    public void jsonAloneOnStandardOutput()
    {
        final Streams s = new Streams();
        final BatchOutput o = output(s, "--mode", "batch", "--format", "json");
        writeRows(o);
        o.finish();
        final Map<?, ?> json = (Map<?, ?>)JsonCheck.parse(s.out());
        final List<?> rows = (List<?>)json.get("rows");
        Assert.assertEquals(rows.size(), 5, s.out());
        final Map<?, ?> first = (Map<?, ?>)rows.get(0);
        Assert.assertEquals(first.get("mode"), "batch");
        Assert.assertEquals(first.get("series"), "4096 x 4 KiB WRITE: " + TargetReport.BATCH_TE4J);
        Assert.assertEquals(first.get("role"), "te4j");
        Assert.assertEquals(((Number)first.get("bytes")).longValue(), 16L << 20);
        Assert.assertEquals(((Map<?, ?>)rows.get(1)).get("role"), "baseline");
        Assert.assertEquals(((Map<?, ?>)rows.get(4)).get("ok"), false);
        Assert.assertTrue(s.err().contains("4096 x 4 KiB"), "the table goes to standard error: " + s.err());
        Assert.assertFalse(s.out().contains("vs base"), s.out());
    }

    @Test
    public void csvToOutputFileTableOnTerminal() throws Exception
    {
        final Path file = Files.createTempFile("te4j-batch", ".csv");
        final Streams s = new Streams();
        final BatchOutput o = output(s, "--mode", "batch", "--format", "csv", "--output", file.toString());
        writeRows(o);
        o.finish();
        final List<String[]> rows = BenchRunTest.csvRows(file);
        Assert.assertEquals(rows.size(), 5);
        Assert.assertEquals(rows.get(2)[0], "batch");
        Assert.assertEquals(rows.get(2)[1], "64 x 1 MiB READ: " + TargetReport.BATCH_TE4J);
        Assert.assertEquals(rows.get(4)[14], "false");
        Assert.assertTrue(s.out().contains("64 x 1 MiB") && s.out().contains("vs base"), s.out());
        Assert.assertTrue(s.err().contains("results written to " + file), s.err());
    }

    @Test
    public void tableToOutputFile() throws Exception
    {
        final Path file = Files.createTempFile("te4j-batch", ".txt");
        final Streams s = new Streams();
        final BatchOutput o = output(s, "--mode", "batch", "--output", file.toString());
        writeRows(o);
        o.finish();
        Assert.assertEquals(Files.readString(file), s.out());
        Assert.assertTrue(s.out().contains("FAILED: block 3 differs"), s.out());
    }

    @Test
    public void targetsNameTheBatchRatio()
    {
        final Streams s = new Streams();
        final BatchOutput o = output(s, "--mode", "batch", "--targets");
        writeRows(o);
        o.finish();
        // 2.00x on the 4 KiB blocks (4000 vs 2000 us), 0.50x on the 1 MiB ones.
        Assert.assertTrue(s.out().contains("2 shapes: 0.50x (64 x 1 MiB READ) .. 2.00x (4096 x 4 KiB WRITE)"),
            s.out());
    }

    /** A real --mode batch on the host platform, json to a file: every row verified. */
    @Test(groups = "host", timeOut = 900_000)
    public void hostBatchRunWritesJson() throws Exception
    {
        Availability.ensureAvailability(Platform.HOST);
        final Path file = Files.createTempFile("te4j-batch", ".json");
        Assert.assertEquals(BenchMain.run("--mode", "batch", "--platform", "host", "--iterations", "3",
            "--batch-region", "64M", "--format", "json", "--output", file.toString()), 0);
        final List<?> rows = (List<?>)((Map<?, ?>)JsonCheck.parse(Files.readString(file))).get("rows");
        Assert.assertFalse(rows.isEmpty());
        for (final Object r : rows)
        {
            final Map<?, ?> row = (Map<?, ?>)r;
            Assert.assertEquals(row.get("mode"), "batch", row.toString());
            Assert.assertEquals(row.get("ok"), true, row.toString());
            Assert.assertTrue(((Number)row.get("median_ns")).doubleValue() > 0, row.toString());
        }
    }
}
