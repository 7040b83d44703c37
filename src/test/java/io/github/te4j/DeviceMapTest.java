package io.github.te4j;

import io.github.te4j.launcher.DeviceMap;
import org.testng.Assert;
import org.testng.SkipException;
import org.testng.annotations.Test;

/** The rank-to-GPU map every CUDA test, the example and te4j-bench use (no GPU needed). */
public class DeviceMapTest
{
    @Test
    public void roundRobinOverTheDevicesPresent()
    {
        Assert.assertEquals(DeviceMap.devices(3, 1), new int[] {0, 0, 0});
        Assert.assertEquals(DeviceMap.devices(5, 2), new int[] {0, 1, 0, 1, 0});
        Assert.assertEquals(DeviceMap.devices(2, 8), new int[] {0, 1});
        Assert.assertEquals(DeviceMap.deviceOf(9, 4), 1);
    }

    @Test
    public void noDeviceOrNegativeRankIsRefusedWithTheReason()
    {
        final IllegalArgumentException none = Assert.expectThrows(IllegalArgumentException.class,
            () -> DeviceMap.deviceOf(1, 0));
        Assert.assertTrue(none.getMessage().contains("no CUDA device"), none.getMessage());
        final IllegalArgumentException negative = Assert.expectThrows(IllegalArgumentException.class,
            () -> DeviceMap.deviceOf(-1, 2));
        Assert.assertTrue(negative.getMessage().contains("negative"), negative.getMessage());
    }

    @Test
    public void ranksOnOneDeviceAlwaysReachEachOther()
    {
        Assert.assertTrue(DeviceMap.canReach(0, 0));
        Assert.assertNull(DeviceMap.unreachable(new int[] {0, 0, 0, 0}));
    }

    @Test
    public void devicesWithoutPeerAccessAreNamed()
    {
        // Devices this machine does not have have no peer access: the reason names both.
        final int n = Availability.cudaDeviceCount();
        final String why = DeviceMap.unreachable(new int[] {n + 1, n + 2});
        Assert.assertNotNull(why);
        Assert.assertTrue(why.contains("ranks 0 and 1") && why.contains((n + 1) + " and " + (n + 2)), why);
    }

    @Test
    public void describeNamesEveryRanksDevice()
    {
        Assert.assertEquals(DeviceMap.describe(new int[] {0, 0}, 1), "2 ranks on 1 CUDA device: 0 0");
        Assert.assertEquals(DeviceMap.describe(new int[] {0, 1, 0}, 2), "3 ranks on 2 CUDA devices: 0 1 0");
    }

    @Test
    public void withoutAGpuCudaIsUnavailableWithTheReason()
    {
        if (Availability.cudaDeviceCount() > 0)
        {
            throw new SkipException("a GPU is present: the CUDA groups use the map for real");
        }
        final String why = DeviceMap.cudaUnavailableFor(2);
        Assert.assertNotNull(why);
        Assert.assertTrue(why.startsWith("no CUDA device"), why);
    }
}
