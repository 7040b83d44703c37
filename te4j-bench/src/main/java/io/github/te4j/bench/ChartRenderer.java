package io.github.te4j.bench;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.ToDoubleFunction;

/**
 * Draws a run's chart: bandwidth against message size (log2 axis), and below it round-trip
 * latency against size when the run measured latency. te4j's series are solid, baselines
 * dashed, peer programs' figures are points; failed rows are left out (the table shows them).
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
        double ymax = 0;
        for (final Row r : p.rows())
        {
            lines.computeIfAbsent(r.lineKey(), k -> new ArrayList<>()).add(r);
            final double lx = log2(r.bytes());
            xmin = Math.min(xmin, lx);
            xmax = Math.max(xmax, lx);
            ymax = Math.max(ymax, p.value().applyAsDouble(r));
        }
        if (p.rows().isEmpty())
        {
            xmin = 3;
            xmax = 30;
        }
        if (xmax - xmin < 2)
        {
            xmin -= 1;
            xmax += 1;
        }
        final double yTop = niceCeiling(ymax <= 0 ? 1 : ymax * 1.08);
        final double bottom = top + PANEL;
        final double x0 = xmin;
        final double x1 = xmax;
        final ToDoubleFunction<Double> sx = lx -> LEFT + (lx - x0) / (x1 - x0) * PLOT_W;
        final ToDoubleFunction<Double> sy = v -> bottom - v / yTop * PANEL;

        c.text(LEFT, top - 12, p.title(), 14, "start", AXIS, false);
        // grid and y ticks
        for (int i = 0; i <= 5; i++)
        {
            final double v = yTop * i / 5;
            final double y = sy.applyAsDouble(v);
            c.line(LEFT, y, LEFT + PLOT_W, y, GRID, 1, false);
            c.text(LEFT - 8, y + 4, TableWriter.num(v, yTop >= 50 ? 0 : yTop >= 5 ? 1 : 2), 11, "end", AXIS, false);
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
        c.text(LEFT - 55, top + PANEL / 2.0, p.unit(), 12, "middle", AXIS, true);

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

    /** The smallest of 1, 2, 2.5, 5 times a power of ten that is >= v. */
    static double niceCeiling(final double v)
    {
        final double p = Math.pow(10, Math.floor(Math.log10(v)));
        for (final double m : new double[] {1, 2, 2.5, 5, 10})
        {
            if (m * p >= v * (1 - 1e-12))
            {
                return m * p;
            }
        }
        return 10 * p;
    }

    /** The chart's title line. */
    static String title(final String platform, final String when)
    {
        return String.format(Locale.ROOT, "te4j-bench, %s platform, %s", platform, when);
    }
}
