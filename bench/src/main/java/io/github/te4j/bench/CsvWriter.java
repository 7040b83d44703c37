package io.github.te4j.bench;

import java.util.List;
import java.util.Locale;

/** Rows as CSV (RFC 4180 quoting), one header line; times in nanoseconds, bandwidth in GB/s. */
final class CsvWriter
{
    static final String HEADER = "mode,series,role,platform,bytes,blocks,threads,batch,samples,median_ns,p99_ns,"
        + "gbps,gbps_p99,ops_per_s,ok,failure,note,ranks";

    private CsvWriter()
    {
    }

    static String write(final List<Row> rows)
    {
        final StringBuilder sb = new StringBuilder(HEADER).append('\n');
        for (final Row r : rows)
        {
            sb.append(String.join(",", r.mode().label(), quote(r.series()), r.role().name().toLowerCase(Locale.ROOT),
                r.platform(), Long.toString(r.bytes()), Integer.toString(r.blocks()), Integer.toString(r.threads()),
                Integer.toString(r.batch()), Integer.toString(r.samples()), num(r.medianNs()), num(r.p99Ns()),
                num(r.gbps()), num(r.gbpsP99()), num(r.opsPerSecond()), Boolean.toString(r.ok()),
                quote(r.failure() == null ? "" : r.failure()), quote(r.note()),
                Integer.toString(r.ranks()))).append('\n');
        }
        return sb.toString();
    }

    private static String num(final double v)
    {
        return Double.isNaN(v) || Double.isInfinite(v) ? "" : String.format(Locale.ROOT, "%.6g", v);
    }

    static String quote(final String s)
    {
        if (s.indexOf(',') < 0 && s.indexOf('"') < 0 && s.indexOf('\n') < 0)
        {
            return s;
        }
        return '"' + s.replace("\"", "\"\"") + '"';
    }
}
