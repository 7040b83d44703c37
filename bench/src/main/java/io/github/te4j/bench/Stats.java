package io.github.te4j.bench;

import java.util.Arrays;

/** Order statistics of timed samples: the median and the 99th percentile (nearest rank). */
public final class Stats
{
    private final double median;
    private final double p99;
    private final int count;

    private Stats(final double median, final double p99, final int count)
    {
        this.median = median;
        this.p99 = p99;
        this.count = count;
    }

    /** Statistics of {@code values} (at least one; none may be NaN). */
    public static Stats of(final double[] values)
    {
        if (values.length == 0)
        {
            throw new IllegalArgumentException("no samples");
        }
        final double[] v = values.clone();
        Arrays.sort(v);
        final int n = v.length;
        final double median = (n % 2 == 1) ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
        // nearest rank: the smallest value with at least 99 % of the samples at or below it
        final int rank = (int)Math.ceil(0.99 * n);
        return new Stats(median, v[Math.max(0, rank - 1)], n);
    }

    public double median()
    {
        return median;
    }

    /** 99th percentile; with fewer than 100 samples this is the largest sample. */
    public double p99()
    {
        return p99;
    }

    public int count()
    {
        return count;
    }
}
