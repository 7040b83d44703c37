package io.github.te4j.bench;

import java.io.PrintStream;
import java.util.Locale;

/**
 * Progress while a run goes on: a redrawn bar on a terminal ({@code System.console() != null}),
 * otherwise one plain line per finished case (logs and CI keep every line).
 */
final class Progress
{
    private static final int BAR = 30;

    private final int total;
    private final PrintStream out;
    private final boolean bar;
    private int lastWidth;

    Progress(final int total, final PrintStream out, final boolean bar)
    {
        this.total = Math.max(1, total);
        this.out = out;
        this.bar = bar;
    }

    /** A bar when this JVM has a terminal, plain lines otherwise. */
    static Progress forTerminal(final int total, final PrintStream out)
    {
        return new Progress(total, out, System.console() != null);
    }

    /** Case number {@code done} finished with {@code row}. */
    void update(final int done, final Row row)
    {
        final String text = row.series() + " " + Sizes.format(row.bytes()) + (row.blocks() > 1 ? " " + row.shape() : "")
            + ": " + summary(row);
        if (bar)
        {
            final int filled = (int)((long)BAR * Math.min(done, total) / total);
            final String line = String.format(Locale.ROOT, "\r[%s%s] %d/%d %s", "#".repeat(filled),
                ".".repeat(BAR - filled), done, total, text);
            // Pad over the rest of a longer previous line.
            out.print(line + " ".repeat(Math.max(0, lastWidth - line.length())));
            lastWidth = line.length();
        }
        else
        {
            out.printf(Locale.ROOT, "[%d/%d] %s%n", done, total, text);
        }
        out.flush();
    }

    /** Ends the bar's line. */
    void finish()
    {
        if (bar && lastWidth > 0)
        {
            out.println();
            out.flush();
        }
    }

    static String summary(final Row r)
    {
        if (!r.ok())
        {
            return "FAILED: " + r.failure();
        }
        if (r.mode() == Mode.LATENCY)
        {
            return String.format(Locale.ROOT, "round trip %.3f us", r.medianNs() / 1000);
        }
        if (r.mode() == Mode.ALLTOALL)
        {
            return String.format(Locale.ROOT, "%.2f GB/s per GPU, %.3f us per all-to-all of %d ranks", r.gbps(),
                r.medianNs() / 1000, r.ranks());
        }
        return String.format(Locale.ROOT, "%.2f GB/s, %.3f us/op", r.gbps(), r.medianNs() / 1000);
    }
}
