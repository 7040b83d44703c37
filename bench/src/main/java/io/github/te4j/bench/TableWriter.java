package io.github.te4j.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Rows as aligned text columns, one block per mode, with the run's facts above. The launch-shape
 * column (blocks x threads of a GPU grid) appears only in blocks with GPU rows or an all-to-all;
 * host rows show "-" there (or the all-to-all's ranks), since a host put has no grid.
 */
final class TableWriter
{
    private static final String[] HEADER = {"series", "size", "blocks x thr", "batch", "samples", "median us",
        "p99 us", "GB/s", "GB/s @p99", "Mop/s", "check"};
    private static final int SHAPE_COLUMN = 2;

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
        for (final Mode mode : new Mode[] {Mode.BANDWIDTH, Mode.LATENCY, Mode.RATE, Mode.ALLTOALL, Mode.KVCACHE})
        {
            final List<Row> block = new ArrayList<>();
            for (final Row r : rows)
            {
                if (r.mode() == mode)
                {
                    block.add(r);
                }
            }
            if (block.isEmpty())
            {
                continue;
            }
            // An all-to-all keeps the column on the host too: it names the ranks there.
            final boolean shapes = mode == Mode.ALLTOALL || block.stream().anyMatch(r -> !onHost(r));
            final List<String[]> lines = new ArrayList<>();
            for (final Row r : block)
            {
                lines.add(withoutShape(cells(r), shapes));
            }
            sb.append('\n').append(title(mode)).append('\n');
            append(sb, withoutShape(HEADER, shapes), lines);
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
            case KVCACHE:
                return "== KV-cache handoff, prefill -> decode, layer by layer (batch = blocks; layer rows: send to"
                    + " landed per layer; handoff rows: every layer)";
            default:
                return "== message rate: ops launched back to back on one stream (per-op time)";
        }
    }

    private static String[] cells(final Row r)
    {
        return new String[] {r.series(), Sizes.format(r.bytes()), shape(r), Integer.toString(r.batch()),
            Integer.toString(r.samples()), num(r.medianNs() / 1000, 3), num(r.p99Ns() / 1000, 3), num(r.gbps(), 2),
            num(r.gbpsP99(), 2), num(r.opsPerSecond() / 1e6, 3),
            r.ok() ? (r.role() == Role.PEER ? "peer's own" : r.timeSliced() ? "ok, " + Row.TIME_SLICED : "ok")
                : "FAILED: " + r.failure()};
    }

    /** The launch shape; an all-to-all's leads with its ranks (its shape only where a grid is launched). */
    private static String shape(final Row r)
    {
        if (onHost(r))
        {
            return r.mode() == Mode.ALLTOALL ? r.ranks() + " ranks" : "-";
        }
        if (r.mode() != Mode.ALLTOALL)
        {
            return r.shape();
        }
        final boolean grid = r.blocks() == 0 || r.blocks() > 1 || r.threads() > 1;
        return r.ranks() + " ranks" + (grid ? ", " + r.shape() : "");
    }

    /** Whether a row was measured on the host platform ("host", or "host+" a transport). */
    static boolean onHost(final Row r)
    {
        return r.platform().equals("host") || r.platform().startsWith("host+");
    }

    /** The cells without the shape column (the third) unless {@code keep}. */
    private static String[] withoutShape(final String[] cells, final boolean keep)
    {
        if (keep)
        {
            return cells;
        }
        final String[] out = new String[cells.length - 1];
        System.arraycopy(cells, 0, out, 0, SHAPE_COLUMN);
        System.arraycopy(cells, SHAPE_COLUMN + 1, out, SHAPE_COLUMN, cells.length - SHAPE_COLUMN - 1);
        return out;
    }

    static String num(final double v, final int decimals)
    {
        return Double.isNaN(v) || Double.isInfinite(v) ? "-" : String.format(Locale.ROOT, "%." + decimals + "f", v);
    }

    private static void append(final StringBuilder sb, final String[] header, final List<String[]> lines)
    {
        final int[] width = new int[header.length];
        for (int i = 0; i < header.length; i++)
        {
            width[i] = header[i].length();
        }
        for (final String[] l : lines)
        {
            for (int i = 0; i < l.length - 1; i++)  // the last column is left unpadded
            {
                width[i] = Math.max(width[i], l[i].length());
            }
        }
        line(sb, header, width);
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
