package io.github.te4j.bench;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.ToDoubleFunction;

/**
 * Draws a run's chart: bandwidth against message size, and below it round-trip latency against
 * size when the run measured latency. Both axes are logarithmic (sizes in powers of two, values
 * in decades), since figures span several orders of magnitude between 8 B and 1 GiB. te4j's
 * series are solid, baselines dashed, peer programs' figures are points; failed rows are left out
 * (the table shows them).
 */
final class ChartRenderer
{
    static final int WIDTH = 1120;
    private static final int PANEL = 420;
    private static final int GAP = 70;
    private static final int LEFT = 80;
    private static final int PLOT_W = 640;
    private static final int LEGEND_X = LEFT + PLOT_W + 30;
    private static final String[] PALETTE = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
        "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#637939"};
    private static final String AXIS = "#333333";
    private static final String GRID = "#dddddd";

    private ChartRenderer()
    {
    }

    /** Height of the chart of {@code rows}. */
    static int height(final List<Row> rows)
    {
        return 70 + panels(rows).size() * (PANEL + GAP);
    }

    /** Draws the chart of {@code rows} with {@code title} on {@code c} (WIDTH x height(rows)). */
    static void draw(final ChartCanvas c, final List<Row> rows, final String title)
    {
        c.text(WIDTH / 2.0, 32, title, 17, "middle", AXIS, false);
        double top = 70;
        for (final Panel p : panels(rows))
        {
            panel(c, top, p);
            top += PANEL + GAP;
        }
    }

    private record Panel(String title, String unit, List<Row> rows, ToDoubleFunction<Row> value)
    {
    }

    private static List<Panel> panels(final List<Row> rows)
    {
        final List<Row> bw = new ArrayList<>();
        final List<Row> lat = new ArrayList<>();
        final List<Row> a2a = new ArrayList<>();
        for (final Row r : rows)
        {
            if (!r.ok() || !(r.medianNs() > 0) || Double.isInfinite(r.medianNs()))
            {
                continue;
            }
            if (r.mode() == Mode.BANDWIDTH)
            {
                bw.add(r);
            }
            else if (r.mode() == Mode.LATENCY)
            {
                lat.add(r);
            }
            else if (r.mode() == Mode.ALLTOALL)
            {
                a2a.add(r);
            }
        }
        final List<Panel> out = new ArrayList<>();
        if (!bw.isEmpty() || lat.isEmpty() && a2a.isEmpty())
        {
            out.add(new Panel("Bandwidth vs message size, rank 0 -> rank 1", "GB/s (1e9 B/s)", bw, Row::gbps));
        }
        if (!lat.isEmpty())
        {
            out.add(new Panel("Round-trip latency vs message size", "round trip, us", lat, r -> r.medianNs() / 1000));
        }
        if (!a2a.isEmpty())
        {
            out.add(new Panel("All-to-all bandwidth per GPU vs block size (" + a2a.get(0).ranks() + " ranks)",
                "GB/s per GPU, (N-1) x block / time", a2a, Row::gbps));
        }
        return out;
    }

    private static void panel(final ChartCanvas c, final double top, final Panel p)
    {
        final Map<String, List<Row>> lines = new LinkedHashMap<>();
        double xmin = Double.MAX_VALUE;
        double xmax = -Double.MAX_VALUE;
        double ymin = Double.MAX_VALUE;
        double ymax = 0;
        for (final Row r : p.rows())
        {
            final double v = p.value().applyAsDouble(r);
            if (!(v > 0) || Double.isInfinite(v))
            {
                continue;  // nothing to place on a log axis
            }
            lines.computeIfAbsent(r.lineKey(), k -> new ArrayList<>()).add(r);
            final double lx = log2(r.bytes());
            xmin = Math.min(xmin, lx);
            xmax = Math.max(xmax, lx);
            ymin = Math.min(ymin, v);
            ymax = Math.max(ymax, v);
        }
        if (lines.isEmpty())
        {
            xmin = 3;
            xmax = 30;
            ymin = 1;
            ymax = 10;
        }
        if (xmax - xmin < 2)
        {
            xmin -= 1;
            xmax += 1;
        }
        // Whole decades around the values, at least one.
        final int d0 = (int)Math.floor(Math.log10(ymin));
        final int d1 = Math.max(d0 + 1, (int)Math.ceil(Math.log10(ymax)));
        final double bottom = top + PANEL;
        final double x0 = xmin;
        final double x1 = xmax;
        final ToDoubleFunction<Double> sx = lx -> LEFT + (lx - x0) / (x1 - x0) * PLOT_W;
        final ToDoubleFunction<Double> sy = v -> bottom - (Math.log10(v) - d0) / (d1 - d0) * PANEL;

        c.text(LEFT, top - 12, p.title(), 14, "start", AXIS, false);
        // grid: a labelled line per decade, unlabelled ones at 2x and 5x
        for (int d = d0; d <= d1; d++)
        {
            final double v = Math.pow(10, d);
            final double y = sy.applyAsDouble(v);
            c.line(LEFT, y, LEFT + PLOT_W, y, GRID, 1, false);
            c.text(LEFT - 8, y + 4, TableWriter.num(v, Math.max(0, -d)), 11, "end", AXIS, false);
            for (final double m : d < d1 ? new double[] {2, 5} : new double[0])
            {
                final double ym = sy.applyAsDouble(m * v);
                c.line(LEFT, ym, LEFT + 6, ym, AXIS, 1, false);
                c.line(LEFT + 6, ym, LEFT + PLOT_W, ym, GRID, 0.5, true);
            }
        }
        // x ticks at powers of two, labelled sparsely enough to stay readable
        final int first = (int)Math.ceil(xmin);
        final int last = (int)Math.floor(xmax);
        final int step = Math.max(1, (last - first + 1 + 11) / 12);
        for (int e = first; e <= last; e++)
        {
            final double x = sx.applyAsDouble((double)e);
            c.line(x, bottom, x, bottom + 4, AXIS, 1, false);
            if ((e - first) % step == 0)
            {
                c.line(x, top, x, bottom, GRID, 1, false);
                c.text(x, bottom + 18, Sizes.format(1L << e).replace(" ", ""), 11, "middle", AXIS, false);
            }
        }
        c.line(LEFT, bottom, LEFT + PLOT_W, bottom, AXIS, 1.2, false);
        c.line(LEFT, top, LEFT, bottom, AXIS, 1.2, false);
        c.text(LEFT + PLOT_W / 2.0, bottom + 40, "message size", 12, "middle", AXIS, false);
        c.text(LEFT - 55, top + PANEL / 2.0, p.unit() + " (log scale)", 12, "middle", AXIS, true);

        int i = 0;
        double legendY = top + 8;
        for (final Map.Entry<String, List<Row>> line : lines.entrySet())
        {
            final String color = PALETTE[i++ % PALETTE.length];
            final List<Row> pts = line.getValue();
            pts.sort((a, b) -> Long.compare(a.bytes(), b.bytes()));
            final Role role = pts.get(0).role();
            final boolean dashed = role == Role.BASELINE;
            final double width = role == Role.TE4J ? 2.5 : 1.8;
            final double[] xs = new double[pts.size()];
            final double[] ys = new double[pts.size()];
            for (int k = 0; k < pts.size(); k++)
            {
                xs[k] = sx.applyAsDouble(log2(pts.get(k).bytes()));
                ys[k] = sy.applyAsDouble(p.value().applyAsDouble(pts.get(k)));
            }
            if (role != Role.PEER && pts.size() > 1)
            {
                c.polyline(xs, ys, color, width, dashed);
            }
            else if (role == Role.BASELINE && pts.size() == 1 && pts.get(0).series().equals(Series.RAW_FLAG.label()))
            {
                // The raw flag moves no data: one figure, drawn across every size.
                c.line(LEFT, ys[0], LEFT + PLOT_W, ys[0], color, width, true);
            }
            for (int k = 0; k < xs.length; k++)
            {
                c.marker(xs[k], ys[k], color);
            }
            // legend entry
            c.line(LEGEND_X, legendY, LEGEND_X + 26, legendY, color, width, dashed);
            c.marker(LEGEND_X + 13, legendY, color);
            c.text(LEGEND_X + 34, legendY + 4, (role == Role.PEER ? "peer: " : "") + line.getKey(), 11, "start", AXIS,
                false);
            legendY += 18;
        }
        if (lines.isEmpty())
        {
            c.text(LEFT + PLOT_W / 2.0, top + PANEL / 2.0, "no verified rows", 13, "middle", AXIS, false);
        }
    }

    private static double log2(final long bytes)
    {
        return Math.log(bytes) / Math.log(2);
    }

    /** The chart's title line. */
    static String title(final String platform, final String when)
    {
        return String.format(Locale.ROOT, "te4j-bench, %s platform, %s", platform, when);
    }
}
