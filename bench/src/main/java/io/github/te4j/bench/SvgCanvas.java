package io.github.te4j.bench;

import java.util.Locale;

/** A {@link ChartCanvas} that writes SVG 1.1 text. */
final class SvgCanvas implements ChartCanvas
{
    private final StringBuilder body = new StringBuilder();
    private final int width;
    private final int height;

    SvgCanvas(final int width, final int height)
    {
        this.width = width;
        this.height = height;
    }

    @Override
    public void line(final double x1, final double y1, final double x2, final double y2, final String color,
        final double w, final boolean dashed)
    {
        body.append(String.format(Locale.ROOT,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"%.1f\"%s/>%n",
            x1, y1, x2, y2, color, w, dashed ? " stroke-dasharray=\"6,4\"" : ""));
    }

    @Override
    public void polyline(final double[] xs, final double[] ys, final String color, final double w, final boolean dashed)
    {
        final StringBuilder pts = new StringBuilder();
        for (int i = 0; i < xs.length; i++)
        {
            pts.append(String.format(Locale.ROOT, "%s%.1f,%.1f", i == 0 ? "" : " ", xs[i], ys[i]));
        }
        body.append(String.format(Locale.ROOT,
            "<polyline points=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"%.1f\"%s/>%n", pts, color, w,
            dashed ? " stroke-dasharray=\"6,4\"" : ""));
    }

    @Override
    public void marker(final double x, final double y, final String color)
    {
        body.append(String.format(Locale.ROOT, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"/>%n", x, y, color));
    }

    @Override
    public void text(final double x, final double y, final String text, final int size, final String anchor,
        final String color, final boolean vertical)
    {
        body.append(String.format(Locale.ROOT,
            "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%d\" text-anchor=\"%s\" fill=\"%s\"%s>%s</text>%n", x, y, size,
            anchor, color, vertical ? String.format(Locale.ROOT, " transform=\"rotate(-90 %.1f %.1f)\"", x, y) : "",
            escape(text)));
    }

    /** The whole document. */
    String document()
    {
        return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            + "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" + width + "\" height=\"" + height
            + "\" viewBox=\"0 0 " + width + " " + height + "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n"
            + "<rect x=\"0\" y=\"0\" width=\"" + width + "\" height=\"" + height + "\" fill=\"#ffffff\"/>\n"
            + body + "</svg>\n";
    }

    static String escape(final String s)
    {
        final StringBuilder sb = new StringBuilder(s.length());
        for (int i = 0; i < s.length(); i++)
        {
            final char c = s.charAt(i);
            switch (c)
            {
                case '<':
                    sb.append("&lt;");
                    break;
                case '>':
                    sb.append("&gt;");
                    break;
                case '&':
                    sb.append("&amp;");
                    break;
                case '"':
                    sb.append("&quot;");
                    break;
                default:
                    if (c >= 0x20 || c == '\t')
                    {
                        sb.append(c);
                    }
            }
        }
        return sb.toString();
    }
}
