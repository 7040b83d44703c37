package io.github.te4j.bench;

import java.util.List;
import java.util.Locale;

/** Rows as one JSON object: {@code {"info": [...], "rows": [{...}, ...]}}; NaN becomes null. */
final class JsonWriter
{
    private JsonWriter()
    {
    }

    static String write(final List<String> infos, final List<Row> rows)
    {
        final StringBuilder sb = new StringBuilder("{\n  \"info\": [");
        for (int i = 0; i < infos.size(); i++)
        {
            sb.append(i == 0 ? "" : ", ").append(string(infos.get(i)));
        }
        sb.append("],\n  \"rows\": [");
        for (int i = 0; i < rows.size(); i++)
        {
            final Row r = rows.get(i);
            sb.append(i == 0 ? "\n    {" : ",\n    {")
                .append("\"mode\": ").append(string(r.mode().label()))
                .append(", \"series\": ").append(string(r.series()))
                .append(", \"role\": ").append(string(r.role().name().toLowerCase(Locale.ROOT)))
                .append(", \"platform\": ").append(string(r.platform()))
                .append(", \"bytes\": ").append(r.bytes())
                .append(", \"blocks\": ").append(r.blocks())
                .append(", \"threads\": ").append(r.threads())
                .append(", \"batch\": ").append(r.batch())
                .append(", \"samples\": ").append(r.samples())
                .append(", \"median_ns\": ").append(num(r.medianNs()))
                .append(", \"p99_ns\": ").append(num(r.p99Ns()))
                .append(", \"gbps\": ").append(num(r.gbps()))
                .append(", \"gbps_p99\": ").append(num(r.gbpsP99()))
                .append(", \"ops_per_s\": ").append(num(r.opsPerSecond()))
                .append(", \"ok\": ").append(r.ok())
                .append(", \"failure\": ").append(r.failure() == null ? "null" : string(r.failure()))
                .append(", \"note\": ").append(string(r.note()))
                .append(", \"ranks\": ").append(r.ranks())
                .append('}');
        }
        sb.append(rows.isEmpty() ? "]\n}\n" : "\n  ]\n}\n");
        return sb.toString();
    }

    private static String num(final double v)
    {
        return Double.isNaN(v) || Double.isInfinite(v) ? "null" : String.format(Locale.ROOT, "%.6g", v);
    }

    static String string(final String s)
    {
        final StringBuilder sb = new StringBuilder("\"");
        for (int i = 0; i < s.length(); i++)
        {
            final char c = s.charAt(i);
            switch (c)
            {
                case '"':
                    sb.append("\\\"");
                    break;
                case '\\':
                    sb.append("\\\\");
                    break;
                case '\n':
                    sb.append("\\n");
                    break;
                case '\t':
                    sb.append("\\t");
                    break;
                case '\r':
                    sb.append("\\r");
                    break;
                default:
                    if (c < 0x20)
                    {
                        sb.append(String.format(Locale.ROOT, "\\u%04x", (int)c));
                    }
                    else
                    {
                        sb.append(c);
                    }
            }
        }
        return sb.append('"').toString();
    }
}
