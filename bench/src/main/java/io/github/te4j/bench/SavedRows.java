package io.github.te4j.bench;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Rows kept between runs: {@code --save-rows FILE} writes a run's rows (and its INFO lines) as
 * {@link RowCodec} lines; {@code --report FILE[,FILE]} reads several such files and prints one
 * table and one performance-target table over all of them (scripts/perf-gpu.sh runs CUDA and host
 * cases in separate runs and ends with one report).
 */
final class SavedRows
{
    private SavedRows()
    {
    }

    static void save(final Path file, final List<String> infos, final List<Row> rows) throws IOException
    {
        final StringBuilder sb = new StringBuilder();
        for (final String info : infos)
        {
            sb.append(RowCodec.info(info)).append('\n');
        }
        for (final Row r : rows)
        {
            sb.append(RowCodec.encode(r)).append('\n');
        }
        Files.writeString(file, sb.toString(), StandardCharsets.UTF_8);
    }

    /** Prints the saved rows of {@code files} (comma-separated); exit code 1 when a row failed. */
    static int report(final BenchConfig config, final String files, final PrintStream out, final PrintStream notes)
        throws IOException
    {
        final List<Row> rows = new ArrayList<>();
        final List<String> infos = new ArrayList<>();
        for (final String name : files.split(","))
        {
            final Path f = Path.of(name.trim());
            if (!Files.isRegularFile(f))
            {
                notes.println("report: no rows file " + f + " (that run did not finish): skipped");
                continue;
            }
            for (final String line : Files.readAllLines(f, StandardCharsets.UTF_8))
            {
                final String kind = RowCodec.kind(line);
                if (RowCodec.ROW.equals(kind))
                {
                    rows.add(RowCodec.decode(line));
                }
                else if (RowCodec.INFO.equals(kind))
                {
                    infos.add(f.getFileName() + ": " + RowCodec.rest(line));
                }
            }
        }
        config.targets = true;
        new Report(config, null, infos, rows).print(out, notes);
        return rows.stream().allMatch(Row::ok) ? 0 : BenchMain.EXIT_FAILED;
    }
}
