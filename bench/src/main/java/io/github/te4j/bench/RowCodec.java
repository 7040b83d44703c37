package io.github.te4j.bench;

import java.util.Locale;

/**
 * Rows as single lines of tab-separated fields: how a launched rank 0 hands its results (and
 * the run's progress) to the launching JVM through a file. Lines:
 * <pre>
 * TOTAL  n                      the number of rows the run will produce
 * ROW    mode series role platform bytes blocks threads batch samples medianNs p99Ns failure note ranks
 * INFO   text                   a fact about the run (devices, SMs) shown above the table
 * </pre>
 * Tabs and line breaks inside texts are replaced by spaces; an empty failure means ok. Rows saved
 * before the all-to-all have no ranks field: they are pair rows (2 ranks).
 */
public final class RowCodec
{
    static final String TOTAL = "TOTAL";
    static final String ROW = "ROW";
    static final String INFO = "INFO";

    private RowCodec()
    {
    }

    /** The line of a row. */
    public static String encode(final Row r)
    {
        return String.join("\t", ROW, r.mode().name(), clean(r.series()), r.role().name(), r.platform(),
            Long.toString(r.bytes()), Integer.toString(r.blocks()), Integer.toString(r.threads()),
            Integer.toString(r.batch()), Integer.toString(r.samples()), Double.toString(r.medianNs()),
            Double.toString(r.p99Ns()), r.failure() == null ? "" : clean(r.failure()), clean(r.note()),
            Integer.toString(r.ranks()));
    }

    /** The row of a ROW line. */
    public static Row decode(final String line)
    {
        final String[] f = line.split("\t", -1);
        if (f.length != 14 && f.length != 15 || !ROW.equals(f[0]))
        {
            throw new IllegalArgumentException("not a row line: " + line);
        }
        return new Row(Mode.valueOf(f[1]), f[2], Role.valueOf(f[3]), f[4], Long.parseLong(f[5]),
            Integer.parseInt(f[6]), Integer.parseInt(f[7]), Integer.parseInt(f[8]), Integer.parseInt(f[9]),
            Double.parseDouble(f[10]), Double.parseDouble(f[11]), f[12].isEmpty() ? null : f[12], f[13],
            f.length == 15 ? Integer.parseInt(f[14]) : 2);
    }

    static String total(final int n)
    {
        return TOTAL + "\t" + n;
    }

    static String info(final String text)
    {
        return INFO + "\t" + clean(text);
    }

    static String clean(final String s)
    {
        return s.replace('\t', ' ').replace('\n', ' ').replace('\r', ' ');
    }

    /** The first field of a line, upper-cased (TOTAL, ROW, INFO). */
    static String kind(final String line)
    {
        final int tab = line.indexOf('\t');
        return (tab < 0 ? line : line.substring(0, tab)).toUpperCase(Locale.ROOT);
    }

    /** The text after the first tab. */
    static String rest(final String line)
    {
        final int tab = line.indexOf('\t');
        return tab < 0 ? "" : line.substring(tab + 1);
    }
}
