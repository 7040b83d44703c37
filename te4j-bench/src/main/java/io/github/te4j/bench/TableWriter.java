package io.github.te4j.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** Rows as aligned text columns, one block per mode, with the run's facts above. */
final class TableWriter
{
    private static final String[] HEADER = {"series", "size", "blocks x thr", "batch", "samples", "median us",
        "p99 us", "GB/s", "GB/s @p99", "Mop/s", "check"};

    private TableWriter()
    {
    }

    static String write(final List<String> infos, final List<Row> rows)
    {
        final StringBuilder sb = new StringBuilder();
        for (final String info : infos)
        {
            sb.append("# ").append(info).append('\n');
        }
        for (final Mode mode : new Mode[] {Mode.BANDWIDTH, Mode.LATENCY, Mode.RATE, Mode.ALLTOALL})
        {
            final List<String[]> lines = new ArrayList<>();
            for (final Row r : rows)
            {
                if (r.mode() == mode)
                {
                    lines.add(cells(r));
                }
            }
            if (lines.isEmpty())
            {
                continue;
            }
            sb.append('\n').append(title(mode)).append('\n');
            append(sb, lines);
        }
        final long failed = rows.stream().filter(r -> !r.ok()).count();
        sb.append('\n').append(failed == 0 ? "all " + rows.size() + " rows verified"
            : failed + " of " + rows.size() + " rows FAILED").append('\n');
        return sb.toString();
    }

    private static String title(final Mode mode)
    {
        switch (mode)
        {
            case BANDWIDTH:
                return "== bandwidth, rank 0 -> rank 1 (GB/s = 1e9 B/s; per-op time of back-to-back ops)";
            case LATENCY:
                return "== latency: round trip rank 0 -> rank 1 -> rank 0 (median and p99 per round trip)";
            case ALLTOALL:
                return "== all-to-all: every rank puts one block of <size> to every other rank (time per all-to-all;"
                    + " GB/s per GPU = (N-1) x size / time)";
            default:
                return "== message rate: ops launched back to back on one stream (per-op time)";
        }
    }

    private static String[] cells(final Row r)
    {
        return new String[] {r.series(), Sizes.format(r.bytes()), shape(r), Integer.toString(r.batch()),
            Integer.toString(r.samples()), num(r.medianNs() / 1000, 3), num(r.p99Ns() / 1000, 3), num(r.gbps(), 2),
            num(r.gbpsP99(), 2), num(r.opsPerSecond() / 1e6, 3),
            r.ok() ? (r.role() == Role.PEER ? "peer's own" : "ok") : "FAILED: " + r.failure()};
    }

    /** The launch shape; an all-to-all's leads with its ranks (its shape only where a grid is launched). */
    private static String shape(final Row r)
    {
        if (r.mode() != Mode.ALLTOALL)
        {
            return r.shape();
        }
        final boolean grid = r.blocks() == 0 || r.blocks() > 1 || r.threads() > 1;
        return r.ranks() + " ranks" + (grid ? ", " + r.shape() : "");
    }

    static String num(final double v, final int decimals)
    {
        return Double.isNaN(v) || Double.isInfinite(v) ? "-" : String.format(Locale.ROOT, "%." + decimals + "f", v);
    }

    private static void append(final StringBuilder sb, final List<String[]> lines)
    {
        final int[] width = new int[HEADER.length];
        for (int i = 0; i < HEADER.length; i++)
        {
            width[i] = HEADER[i].length();
        }
        for (final String[] l : lines)
        {
            for (int i = 0; i < l.length - 1; i++)  // the last column is left unpadded
            {
                width[i] = Math.max(width[i], l[i].length());
            }
        }
        line(sb, HEADER, width);
        for (final String[] l : lines)
        {
            line(sb, l, width);
        }
    }

    private static void line(final StringBuilder sb, final String[] cells, final int[] width)
    {
        for (int i = 0; i < cells.length; i++)
        {
            final boolean left = i == 0 || i == cells.length - 1;
            final String pad = " ".repeat(Math.max(0, width[i] - cells[i].length()));
            sb.append(left ? cells[i] + (i == cells.length - 1 ? "" : pad) : pad + cells[i]);
            sb.append(i == cells.length - 1 ? "\n" : "  ");
        }
    }
}
