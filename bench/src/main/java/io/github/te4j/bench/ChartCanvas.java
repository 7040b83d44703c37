package io.github.te4j.bench;

/**
 * The few drawing primitives a chart needs, so one {@link ChartRenderer} draws both the SVG
 * (text written by hand: no AWT) and, where {@code java.desktop} exists, a PNG. Coordinates in
 * pixels, origin top left; colours as {@code #rrggbb}.
 */
interface ChartCanvas
{
    void line(double x1, double y1, double x2, double y2, String color, double width, boolean dashed);

    void polyline(double[] xs, double[] ys, String color, double width, boolean dashed);

    /** A small filled circle. */
    void marker(double x, double y, String color);

    /**
     * @param anchor   "start", "middle" or "end" (horizontal alignment at x)
     * @param vertical rotate 90 degrees counter-clockwise (y-axis titles)
     */
    void text(double x, double y, String text, int size, String anchor, String color, boolean vertical);
}
