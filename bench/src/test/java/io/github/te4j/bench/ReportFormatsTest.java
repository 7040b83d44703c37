package io.github.te4j.bench;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import javax.xml.parsers.DocumentBuilderFactory;
import org.testng.Assert;
import org.testng.annotations.Test;
import org.w3c.dom.Document;

/** Row encoding, CSV/JSON/table output, the SVG chart and the peer-output parser (no native code). */
public class ReportFormatsTest
{
    static List<Row> sampleRows()
    {
        final List<Row> rows = new ArrayList<>();
        for (long b = 8; b <= (1L << 20); b <<= 4)
        {
            rows.add(new Row(Mode.BANDWIDTH, Series.TE4J_PUT.label(), Role.TE4J, "cuda", b, 16, 512, 10, 20, b / 100.0 + 2000,
                b / 90.0 + 2500, null, "CUDA events"));
            rows.add(new Row(Mode.BANDWIDTH, Series.COPY_ENGINE.label(), Role.BASELINE, "cuda", b, -1, 0, 10, 20,
                b / 120.0 + 6000, b / 110.0 + 6500, null, ""));
        }
        rows.add(new Row(Mode.LATENCY, Series.TE4J_PING_PONG.label(), Role.TE4J, "cuda", 8, 1, 32, 1000, 20, 2600, 2700,
            null, ""));
        rows.add(new Row(Mode.LATENCY, Series.RAW_FLAG.label(), Role.BASELINE, "cuda", 4, 1, 1, 1000, 20, 2520, 2600,
            null, ""));
        rows.add(new Row(Mode.LATENCY, Series.TE4J_LL_PING_PONG.label(), Role.TE4J, "cuda", 8, 1, 32, 1000, 20, 2570,
            2650, null, ""));
        rows.add(new Row(Mode.RATE, "weird <&> \"name\", with comma", Role.TE4J, "cuda", 65536, 0, 0, 1000, 20, 2400,
            2900, "data check failed: byte 3\tx", "note, \"quoted\""));
        rows.addAll(PeerPrograms.parse(PEER_OUTPUT));
        return rows;
    }

    static final String PEER_OUTPUT = String.join("\n",
        "devices=2",
        "CE memcpyPeer 1GiB: 395.9 GB/s",
        "SM put blocks=16 1GiB: 321.8 GB/s",
        "CE memcpyPeer 65536 B: 6.40 us/op",
        "flag ping-pong round trip: 2.520 us (iters=10000)",
        "NVSHMEM putmem_nbi_block blocks=16 1GiB: 319.1 GB/s",
        "NVSHMEM putmem_on_stream 65536 B: 2.83 us/op, 23.2 GB/s",
        "NVSHMEM putmem_signal ping-pong 8 B: round trip 4.260 us",
        "NCCL send/recv 16777216 B: 56.36 us/op, 297.7 GB/s",
        "torch not found: skipping the NCCL baseline");

    @Test
    public void rowCodecRoundTrips()
    {
        for (final Row r : sampleRows())
        {
            final Row back = RowCodec.decode(RowCodec.encode(r));
            Assert.assertEquals(back.series(), RowCodec.clean(r.series()));
            Assert.assertEquals(back.bytes(), r.bytes());
            Assert.assertEquals(back.shape(), r.shape());
            Assert.assertEquals(Double.doubleToLongBits(back.medianNs()), Double.doubleToLongBits(r.medianNs()));
            Assert.assertEquals(Double.doubleToLongBits(back.p99Ns()), Double.doubleToLongBits(r.p99Ns()));
            Assert.assertEquals(back.ok(), r.ok());
            Assert.assertEquals(back.role(), r.role());
            Assert.assertEquals(back.mode(), r.mode());
        }
    }

    @Test
    public void parsesPeerOutput()
    {
        final List<Row> peers = PeerPrograms.parse(PEER_OUTPUT);
        Assert.assertEquals(peers.size(), 8);
        final Row ce = peers.get(0);
        Assert.assertEquals(ce.bytes(), 1L << 30);
        Assert.assertEquals(ce.gbps(), 395.9, 1e-9);
        Assert.assertEquals(ce.role(), Role.PEER);
        final Row onStream = peers.stream().filter(r -> r.series().contains("putmem_on_stream")).findFirst().get();
        Assert.assertEquals(onStream.medianNs(), 2830.0, 1e-9);
        Assert.assertEquals(onStream.mode(), Mode.RATE);
        Assert.assertTrue(peers.stream().allMatch(Row::ok));
    }

    @Test
    public void csvAndJsonAndTable()
    {
        final List<Row> rows = sampleRows();
        final String csv = CsvWriter.write(rows);
        final String[] lines = csv.split("\n");
        Assert.assertEquals(lines[0], CsvWriter.HEADER);
        Assert.assertEquals(lines.length, rows.size() + 1);
        Assert.assertTrue(csv.contains("\"weird <&> \"\"name\"\", with comma\""), csv);
        final String json = JsonWriter.write(List.of("info \"1\""), rows);
        Assert.assertTrue(json.startsWith("{") && json.trim().endsWith("}"), json);
        Assert.assertTrue(json.contains("\"failure\": \"data check failed: byte 3\\tx\""), json);
        Assert.assertTrue(json.contains("\"p99_ns\": null"), "peer rows have no p99: " + json);
        final String table = TableWriter.write(List.of("platform cuda"), rows);
        Assert.assertTrue(table.contains("1 of " + rows.size() + " rows FAILED"), table);
        Assert.assertTrue(table.contains("== latency"), table);
        final String targets = TargetReport.write(rows);
        Assert.assertTrue(targets.contains("performance targets"), targets);
        // 2.570 / 2.520 = 1.020: the LL row beside the raw flag, within target 3's 1.03.
        Assert.assertTrue(targets.lines().anyMatch(l -> l.startsWith("3L") && l.contains("2.570 us vs 2.520 us")
            && l.contains("1.020") && l.trim().endsWith("yes")), targets);
    }

    @Test
    public void javaAndCppLoopsPairWithinOneStep()
    {
        // Two steps of one run: 20 samples (rate step) and 5 (peers step); the C++ loop of the
        // second was faster. Target 5 must compare the Java loop with the C++ loop of its own step.
        final List<Row> rows = new ArrayList<>();
        rows.add(new Row(Mode.RATE, Series.TE4J_RATE_JAVA.label(), Role.TE4J, "cuda", 65536, 0, 0, 1000, 20, 4608,
            4618, null, ""));
        rows.add(new Row(Mode.RATE, Series.TE4J_RATE_CPP.label(), Role.BASELINE, "cuda", 65536, 0, 0, 1000, 20, 4597,
            4606, null, ""));
        rows.add(new Row(Mode.RATE, Series.TE4J_RATE_CPP.label(), Role.BASELINE, "cuda", 65536, 0, 0, 1000, 5, 4110,
            4200, null, ""));
        final String targets = TargetReport.write(rows);
        Assert.assertTrue(targets.lines().anyMatch(l -> l.startsWith("5 ") && l.contains("0.998")
            && l.trim().endsWith("yes")), targets);
    }

    @Test
    public void svgChartIsWellFormedXml() throws Exception
    {
        final String svg = Charts.svg(sampleRows(), "te4j-bench <test> & chart");
        final DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
        f.setNamespaceAware(true);
        final Document doc = f.newDocumentBuilder().parse(new ByteArrayInputStream(svg.getBytes(StandardCharsets.UTF_8)));
        Assert.assertEquals(doc.getDocumentElement().getLocalName(), "svg");
        Assert.assertEquals(doc.getDocumentElement().getNamespaceURI(), "http://www.w3.org/2000/svg");
        Assert.assertTrue(doc.getElementsByTagName("polyline").getLength() >= 2, "te4j and copy-engine lines");
        Assert.assertTrue(svg.contains("Round-trip latency"), "latency panel present");
        Assert.assertTrue(svg.contains("peer: NVSHMEM putmem_nbi_block"), "peer figures in the legend");
    }

    @Test
    public void svgChartOfNothingIsStillWellFormed() throws Exception
    {
        final String svg = Charts.svg(List.of(), "empty");
        DocumentBuilderFactory.newInstance().newDocumentBuilder()
            .parse(new ByteArrayInputStream(svg.getBytes(StandardCharsets.UTF_8)));
        Assert.assertTrue(svg.contains("no verified rows"));
    }

    private static Row hostRow(final Mode mode, final String series, final long bytes, final double ns)
    {
        return new Row(mode, series, Role.TE4J, "host", bytes, 1, 512, 10, 20, ns, ns * 1.1, null, "");
    }

    @Test
    public void hostRowsShowNoLaunchShape()
    {
        final List<Row> host = List.of(hostRow(Mode.BANDWIDTH, Series.TE4J_PUT.label(), 4096, 3000),
            hostRow(Mode.LATENCY, Series.TE4J_PING_PONG.label(), 8, 20000));
        final String table = TableWriter.write(List.of(), host);
        Assert.assertFalse(table.contains("blocks x thr"), table);
        Assert.assertFalse(table.contains("1x512"), table);
        // A GPU row brings the column back, with "-" for the host rows beside it.
        final List<Row> mixed = new ArrayList<>(host);
        mixed.add(new Row(Mode.BANDWIDTH, Series.TE4J_PUT.label(), Role.TE4J, "cuda", 4096, 16, 512, 10, 20, 2000, 2100,
            null, ""));
        final String both = TableWriter.write(List.of(), mixed);
        Assert.assertTrue(both.contains("blocks x thr") && both.contains("16x512"), both);
        Assert.assertFalse(both.contains("1x512"), both);
    }

    /** Records where the renderer puts markers and which axis labels it writes. */
    private static final class Recorder implements ChartCanvas
    {
        final List<double[]> markers = new ArrayList<>();
        final List<String> texts = new ArrayList<>();

        @Override
        public void line(final double x1, final double y1, final double x2, final double y2, final String color,
            final double width, final boolean dashed)
        {
        }

        @Override
        public void polyline(final double[] xs, final double[] ys, final String color, final double width,
            final boolean dashed)
        {
        }

        @Override
        public void marker(final double x, final double y, final String color)
        {
            markers.add(new double[] {x, y});
        }

        @Override
        public void text(final double x, final double y, final String text, final int size, final String anchor,
            final String color, final boolean vertical)
        {
            texts.add(text);
        }
    }

    @Test
    public void chartValueAxisIsLogarithmic()
    {
        // One series whose bandwidth grows tenfold per size step: on a log axis the points are
        // evenly spaced in y, on a linear one they would not be.
        final List<Row> rows = new ArrayList<>();
        final long[] sizes = {1L << 10, 1L << 14, 1L << 18, 1L << 22};
        for (int i = 0; i < sizes.length; i++)
        {
            final double gbps = 0.5 * Math.pow(10, i);  // 0.5, 5, 50, 500 GB/s
            rows.add(new Row(Mode.BANDWIDTH, Series.TE4J_PUT.label(), Role.TE4J, "cuda", sizes[i], 16, 512, 1, 3,
                sizes[i] / gbps, sizes[i] / gbps, null, ""));
        }
        final Recorder r = new Recorder();
        ChartRenderer.draw(r, rows, "log");
        final List<double[]> pts = r.markers.subList(0, sizes.length);
        final double step = pts.get(0)[1] - pts.get(1)[1];
        Assert.assertTrue(step > 10, "points must rise: " + step);
        for (int i = 1; i + 1 < pts.size(); i++)
        {
            Assert.assertEquals(pts.get(i)[1] - pts.get(i + 1)[1], step, 1e-6, "even spacing per decade");
        }
        for (final String decade : new String[] {"0.1", "1", "10", "100", "1000"})
        {
            Assert.assertTrue(r.texts.contains(decade), "decade label " + decade + " in " + r.texts);
        }
        Assert.assertTrue(r.texts.stream().anyMatch(t -> t.endsWith("(log scale)")), r.texts.toString());
    }
}
