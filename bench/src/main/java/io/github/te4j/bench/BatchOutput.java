package io.github.te4j.bench;

import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Where {@code --mode batch} writes, honouring --format, --output and --targets as every mode
 * does: its table (with each row's speed against the baseline of the same blocks) is printed as
 * the rows come, to standard output where that carries the table, else to standard error as
 * progress; every row is also kept as a {@link Row} (mode batch, size = the bytes of one whole
 * batch, series = shape, direction and what ran) for CSV, JSON, --output and --targets at the end.
 */
final class BatchOutput
{
    private final BenchConfig config;
    private final String platform;
    private final PrintStream out;
    private final PrintStream notes;
    /** The table as the terminal shows it: standard output, or standard error while json/csv go to standard output. */
    private final PrintStream live;
    private final StringBuilder table = new StringBuilder();
    private final List<String> infos = new ArrayList<>();
    private final List<Row> rows = new ArrayList<>();
    private final int samples;

    /**
     * @param platform the rows' platform column ({@link BenchConfig#rowPlatform})
     * @param samples  timed batches behind each median
     */
    BatchOutput(final BenchConfig config, final String platform, final int samples, final PrintStream out,
        final PrintStream notes)
    {
        this.config = config;
        this.platform = platform;
        this.samples = samples;
        this.out = out;
        this.notes = notes;
        this.live = config.format == OutputFormat.TABLE || config.output != null ? out : notes;
    }

    /** A line of the table; lines before the first row are also the run's facts (json "info"). */
    void printf(final String format, final Object... args)
    {
        final String text = String.format(Locale.ROOT, format, args);
        live.print(text);
        table.append(text);
        if (rows.isEmpty() && text.endsWith("\n") && infos.isEmpty())
        {
            infos.add(text.strip());
        }
    }

    /** As {@link #printf(String, Object...)}; the locale is always {@link Locale#ROOT}. */
    void printf(final Locale locale, final String format, final Object... args)
    {
        printf(format, args);
    }

    void println(final String line)
    {
        printf("%s%n", line);
    }

    /**
     * One row: {@code series} over the blocks of {@code shape} in direction {@code op}, median
     * {@code ns} per batch of {@code bytes} in all, against the baseline's {@code baseNs};
     * {@code failure} null when its bytes were verified (or it is a baseline).
     */
    void row(final String shape, final String op, final String series, final double ns, final long bytes,
        final double baseNs, final String failure)
    {
        if (failure != null)
        {
            printf("%-14s %-5s %-28s FAILED: %s%n", shape, op, series, failure);
        }
        else
        {
            printf("%-14s %-5s %-28s %12.1f %9.2f %8.2f%n", shape, op, series, ns / 1000.0, bytes / ns, baseNs / ns);
        }
        final Role role = series.startsWith("te4j") ? Role.TE4J : Role.BASELINE;
        rows.add(new Row(Mode.BATCH, shape + " " + op + ": " + series, role, platform, bytes, -1, 0, 1, samples, ns,
            Double.NaN, failure, String.format(Locale.ROOT, "%.2fx the baseline of the same blocks; median of %d"
                + " batches, timed from Java", baseNs / ns, samples)));
    }

    /** The rows so far. */
    List<Row> rows()
    {
        return rows;
    }

    /** Writes --output, prints json/csv to standard output, and the targets with --targets. */
    void finish()
    {
        final String formatted;
        switch (config.format)
        {
            case CSV:
                formatted = CsvWriter.write(rows);
                break;
            case JSON:
                formatted = JsonWriter.write(infos, rows);
                break;
            default:
                formatted = table.toString();
        }
        if (config.output != null)
        {
            try
            {
                Files.writeString(config.output, formatted, StandardCharsets.UTF_8);
            }
            catch (final IOException e)
            {
                throw new UncheckedIOException("cannot write --output " + config.output, e);
            }
            notes.println("results written to " + config.output + " (" + config.format.name().toLowerCase(Locale.ROOT)
                + ")");
        }
        else if (config.format != OutputFormat.TABLE)
        {
            out.print(formatted);
        }
        if (config.targets)
        {
            live.print(TargetReport.write(rows));
        }
        out.flush();
        notes.flush();
    }
}
