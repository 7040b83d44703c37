package io.github.te4j.bench;

/**
 * One measurement of a run: a series at a size and launch shape, under a variant of te4j's
 * kernels and protocols. Every rank builds the same list of cases ({@link BenchPlan}) and runs
 * them in the same order.
 *
 * @param series   what is measured
 * @param bytes    message size
 * @param blocks   blocks per launch (0 = te4j's choice; 1 on the host platform)
 * @param threads  threads per block
 * @param variant  tuning knobs for this case (te4j's {@code te4j/tuning.h} and the bench's
 *                 {@code te4j/bench_knobs.h}, e.g. "put=tma,pdl=1");
 *                 "" = te4j's defaults. Baselines always run with "".
 */
public record BenchCase(Series series, long bytes, int blocks, int threads, String variant)
{
    /** A case under te4j's default variant. */
    public BenchCase(final Series series, final long bytes, final int blocks, final int threads)
    {
        this(series, bytes, blocks, threads, "");
    }

    /** The series name shown in output: the series' label, with the variant in brackets. */
    public String seriesLabel()
    {
        return variant.isEmpty() ? series.label() : series.label() + " [" + variant + "]";
    }

    /** The native knobs the case runs under: its variant, and what the series itself sets. */
    public String tuning()
    {
        final StringBuilder t = new StringBuilder();
        for (final String item : variant.split(","))
        {
            if (!item.isBlank() && !item.startsWith("threads="))
            {
                t.append(t.length() == 0 ? "" : ",").append(item.trim());
            }
        }
        if (series == Series.RAW_FLAG_DATA)
        {
            t.append(t.length() == 0 ? "" : ",").append("rawdata=1");
        }
        return t.toString();
    }

    /** "te4j put 1 MiB 16x512": for progress lines. */
    public String label()
    {
        return seriesLabel() + " " + Sizes.format(bytes) + (blocks > 1 ? " " + blocks + "x" + threads : "");
    }
}
