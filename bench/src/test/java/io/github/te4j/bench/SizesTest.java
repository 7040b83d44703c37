package io.github.te4j.bench;

import java.util.List;
import org.testng.Assert;
import org.testng.annotations.Test;

/** Size parsing, sweeps and printing. */
public class SizesTest
{
    @Test
    public void parsesSuffixes()
    {
        Assert.assertEquals(Sizes.parse("8"), 8L);
        Assert.assertEquals(Sizes.parse("4K"), 4096L);
        Assert.assertEquals(Sizes.parse("4k"), 4096L);
        Assert.assertEquals(Sizes.parse("64KiB"), 65536L);
        Assert.assertEquals(Sizes.parse("1M"), 1L << 20);
        Assert.assertEquals(Sizes.parse("16MB"), 16L << 20);
        Assert.assertEquals(Sizes.parse("1G"), 1L << 30);
        Assert.assertEquals(Sizes.parse(" 512B "), 512L);
    }

    @Test
    public void rejectsBadSizes()
    {
        for (final String bad : new String[] {"", "x", "4X", "-8", "0", "4", "12", "2G", "1.5M", "K"})
        {
            Assert.assertThrows(IllegalArgumentException.class, () -> Sizes.parse(bad));
        }
    }

    @Test
    public void listsKeepOrderAndDropDuplicates()
    {
        Assert.assertEquals(Sizes.parseList("1M,8,4K,8"), List.of(1L << 20, 8L, 4096L));
    }

    @Test
    public void sweepsPowersOfTwo()
    {
        Assert.assertEquals(Sizes.parseSweep("8:64"), List.of(8L, 16L, 32L, 64L));
        Assert.assertEquals(Sizes.parseSweep("8:1G").size(), 28);
        Assert.assertEquals(Sizes.parseSweep("1M:1M"), List.of(1L << 20));
        Assert.assertThrows(IllegalArgumentException.class, () -> Sizes.parseSweep("64:8"));
        Assert.assertThrows(IllegalArgumentException.class, () -> Sizes.parseSweep("24:64"));
        Assert.assertThrows(IllegalArgumentException.class, () -> Sizes.parseSweep("8-64"));
    }

    @Test
    public void formats()
    {
        Assert.assertEquals(Sizes.format(8), "8 B");
        Assert.assertEquals(Sizes.format(4096), "4 KiB");
        Assert.assertEquals(Sizes.format(3L << 19), "1.5 MiB");
        Assert.assertEquals(Sizes.format(1L << 30), "1 GiB");
        Assert.assertEquals(Sizes.compact(64L << 10), "64K");
        Assert.assertEquals(Sizes.compact(1L << 30), "1G");
        Assert.assertEquals(Sizes.compact(24), "24");
    }
}
