package io.github.te4j.bench;

import io.github.te4j.Platform;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;

/**
 * The end of a run: the results on standard output (the chosen format, or the table when they go
 * to --output), the chart in --chart, the performance targets with --targets. Notes about files
 * written go to the notes stream (standard error), so that {@code --format json} or {@code csv}
 * on standard output is nothing but the data.
 */
final class Report
{
    private final BenchConfig config;
    private final Platform platform;
    private final List<String> infos;
    private final List<Row> rows;

    Report(final BenchConfig config, final Platform platform, final List<String> infos, final List<Row> rows)
    {
        this.config = config;
        this.platform = platform;
        this.infos = new ArrayList<>(infos);
        this.rows = new ArrayList<>(rows);
    }

    /** Prints the results to {@code out} and the notes to {@code notes}. */
    void print(final PrintStream out, final PrintStream notes) throws IOException
    {
        final String table = TableWriter.write(infos, rows);
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
                formatted = table;
        }
        if (config.output != null)
        {
            Files.writeString(config.output, formatted, StandardCharsets.UTF_8);
            out.print(table);
            notes.println("results written to " + config.output + " (" + config.format.name().toLowerCase() + ")");
        }
        else
        {
            out.print(formatted);
        }
        if (config.chart != null)
        {
            final String when = ZonedDateTime.now().format(DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm z"));
            Charts.write(config.chart, rows, ChartRenderer.title(platform == null ? "saved runs" : BenchMain.platformName(platform), when));
            notes.println("chart written to " + config.chart);
        }
        if (config.targets)
        {
            // Beside a table on the terminal; never inside machine-readable output.
            (config.format == OutputFormat.TABLE || config.output != null ? out : notes).print(TargetReport.write(rows));
        }
        out.flush();
        notes.flush();
    }
}
