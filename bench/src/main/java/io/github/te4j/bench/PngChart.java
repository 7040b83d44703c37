package io.github.te4j.bench;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.geom.AffineTransform;
import java.awt.geom.Ellipse2D;
import java.awt.geom.Line2D;
import java.awt.geom.Path2D;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import javax.imageio.ImageIO;

/**
 * The PNG form of the chart, drawn with AWT. Only loaded (by name, from {@link Charts}) on
 * runtimes that have {@code java.desktop}.
 */
final class PngChart implements ChartCanvas
{
    private final Graphics2D g;

    private PngChart(final Graphics2D g)
    {
        this.g = g;
    }

    /** Draws {@code rows} into a PNG file. */
    static void write(final Path file, final List<Row> rows, final String title) throws IOException
    {
        final BufferedImage img = new BufferedImage(ChartRenderer.WIDTH, ChartRenderer.height(rows),
            BufferedImage.TYPE_INT_RGB);
        final Graphics2D g = img.createGraphics();
        try
        {
            g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
            g.setRenderingHint(RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
            g.setColor(Color.WHITE);
            g.fillRect(0, 0, img.getWidth(), img.getHeight());
            ChartRenderer.draw(new PngChart(g), rows, title);
        }
        finally
        {
            g.dispose();
        }
        ImageIO.write(img, "png", file.toFile());
    }

    private void stroke(final String color, final double width, final boolean dashed)
    {
        g.setColor(Color.decode(color));
        g.setStroke(dashed ? new BasicStroke((float)width, BasicStroke.CAP_BUTT, BasicStroke.JOIN_ROUND, 10f,
            new float[] {6f, 4f}, 0f) : new BasicStroke((float)width));
    }

    @Override
    public void line(final double x1, final double y1, final double x2, final double y2, final String color,
        final double width, final boolean dashed)
    {
        stroke(color, width, dashed);
        g.draw(new Line2D.Double(x1, y1, x2, y2));
    }

    @Override
    public void polyline(final double[] xs, final double[] ys, final String color, final double width,
        final boolean dashed)
    {
        stroke(color, width, dashed);
        final Path2D.Double path = new Path2D.Double();
        path.moveTo(xs[0], ys[0]);
        for (int i = 1; i < xs.length; i++)
        {
            path.lineTo(xs[i], ys[i]);
        }
        g.draw(path);
    }

    @Override
    public void marker(final double x, final double y, final String color)
    {
        g.setColor(Color.decode(color));
        g.fill(new Ellipse2D.Double(x - 3.5, y - 3.5, 7, 7));
    }

    @Override
    public void text(final double x, final double y, final String text, final int size, final String anchor,
        final String color, final boolean vertical)
    {
        g.setColor(Color.decode(color));
        g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, size));
        final int w = g.getFontMetrics().stringWidth(text);
        final double dx = "middle".equals(anchor) ? -w / 2.0 : "end".equals(anchor) ? -w : 0;
        final AffineTransform saved = g.getTransform();
        g.translate(x, y);
        if (vertical)
        {
            g.rotate(-Math.PI / 2);
        }
        g.drawString(text, (float)dx, 0f);
        g.setTransform(saved);
    }
}
