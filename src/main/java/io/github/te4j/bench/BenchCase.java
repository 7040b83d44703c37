package io.github.te4j.bench;

/**
 * One measurement of a run: a series at a size and launch shape. Every rank builds the same list
 * of cases ({@link BenchPlan}) and runs them in the same order.
 *
 * @param series   what is measured
 * @param bytes    message size
 * @param blocks   blocks per launch (0 = te4j's choice; 1 on the host platform)
 * @param threads  threads per block
 */
public record BenchCase(Series series, long bytes, int blocks, int threads)
{
    /** "te4j put 1 MiB 16x512": for progress lines. */
    public String label()
    {
        return series.label() + " " + Sizes.format(bytes) + (blocks > 1 ? " " + blocks + "x" + threads : "");
    }
}
