package io.github.te4j.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;

/**
 * Writes a run's chart: SVG as text (works on the small Java runtime carried to GPU hosts, which
 * has no {@code java.desktop}), PNG only where that module exists.
 */
final class Charts
{
    private static final String PNG_WRITER = "io.github.te4j.bench.PngChart";

    private Charts()
    {
    }

    /** Whether this runtime can draw PNG (the java.desktop module is present). */
    static boolean pngSupported()
    {
        return ModuleLayer.boot().findModule("java.desktop").isPresent();
    }

    /** The SVG document of {@code rows}. */
    static String svg(final List<Row> rows, final String title)
    {
        final SvgCanvas canvas = new SvgCanvas(ChartRenderer.WIDTH, ChartRenderer.height(rows));
        ChartRenderer.draw(canvas, rows, title);
        return canvas.document();
    }

    /** Writes the chart to {@code file}: .svg or .png by its name. */
    static void write(final Path file, final List<Row> rows, final String title) throws IOException
    {
        if (file.getFileName().toString().toLowerCase(Locale.ROOT).endsWith(".png"))
        {
            if (!pngSupported())
            {
                throw new IOException("PNG needs the java.desktop module, which this Java runtime lacks: use .svg");
            }
            try
            {
                // Loaded by name: referencing it directly would load AWT classes on runtimes without them.
                Class.forName(PNG_WRITER).getDeclaredMethod("write", Path.class, List.class, String.class)
                    .invoke(null, file, rows, title);
            }
            catch (final ReflectiveOperationException e)
            {
                throw new IOException("cannot draw the PNG chart: " + e, e);
            }
            return;
        }
        Files.writeString(file, svg(rows, title), StandardCharsets.UTF_8);
    }
}
