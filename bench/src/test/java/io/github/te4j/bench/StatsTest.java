package io.github.te4j.bench;

import org.testng.Assert;
import org.testng.annotations.Test;

/** Median and nearest-rank 99th percentile. */
public class StatsTest
{
    @Test
    public void medianAndP99()
    {
        Assert.assertEquals(Stats.of(new double[] {3, 1, 2}).median(), 2.0);
        Assert.assertEquals(Stats.of(new double[] {4, 1, 3, 2}).median(), 2.5);
        Assert.assertEquals(Stats.of(new double[] {5, 1, 3}).p99(), 5.0);
        final double[] v = new double[200];
        for (int i = 0; i < v.length; i++)
        {
            v[i] = 200 - i;  // 1 .. 200, reversed
        }
        final Stats s = Stats.of(v);
        Assert.assertEquals(s.p99(), 198.0);
        Assert.assertEquals(s.median(), 100.5);
        Assert.assertEquals(s.count(), 200);
        Assert.assertThrows(IllegalArgumentException.class, () -> Stats.of(new double[0]));
    }
}
