package io.github.te4j;

import io.github.te4j.launcher.DeviceMap;
import io.github.te4j.launcher.RankProcesses;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import org.testng.Assert;
import org.testng.SkipException;
import org.testng.annotations.Test;

/**
 * Create engine, transport, buffers, exchange handles, import, move data,
 * close, many times over; afterwards fds, threads, te4j mappings and /dev/shm entries are back
 * at their starting level (device memory too, on CUDA). In one JVM (two ranks, 1,000 cycles) and
 * across processes (two JVMs, fewer cycles, handles through the TCP rendezvous:
 * {@link LeakWorker}).
 */
public class LeakTest
{
    static final int CYCLES = Integer.getInteger("te4j.leak.cycles", 1000);

    /** One cycle: two ranks in this JVM, a put+signal each way, everything closed. */
    static void cycle(final Platform platform, final long bytes)
    {
        try (HostInProcessTest.Pair p = new HostInProcessTest.Pair(platform, bytes))
        {
            for (int r = 0; r < 2; r++)
            {
                p.streams[r].putWithSignal(p.ctx[r], 1 - r, 4096, p.windows[r], 8192, 4096, 0, 1);
                p.streams[1 - r].waitSignal(p.ctx[1 - r], 0, 1, Duration.ofSeconds(30));
            }
            p.streams[0].synchronize(Duration.ofSeconds(30));
            p.streams[1].synchronize(Duration.ofSeconds(30));
        }
    }

    static String cycles(final Platform platform, final int n) throws Exception
    {
        cycle(platform, 1 << 16);  // warm-up: libraries, lazily started JVM threads
        System.gc();
        final ResourceCounts before = ResourceCounts.settled();
        for (int i = 0; i < n; i++)
        {
            cycle(platform, (1 << 16) + 4096L * (i % 7));
        }
        System.gc();
        final ResourceCounts after = ResourceCounts.settled();
        Assert.assertEquals(after.fds, before.fds, "open fds: " + before + " -> " + after);
        // Threads that earlier tests of this JVM started may end meanwhile; a leak is growth.
        Assert.assertTrue(after.threads <= before.threads, "threads grew: " + before + " -> " + after);
        Assert.assertEquals(after.te4jMaps, before.te4jMaps, "te4j mappings: " + before + " -> " + after);
        Assert.assertEquals(after.shmEntries, before.shmEntries, "/dev/shm: " + before + " -> " + after);
        return before + " -> " + after;
    }

    @Test(groups = "host", timeOut = 900_000)
    public void hostThousandCyclesInOneProcess() throws Exception
    {
        System.out.println("leak, host, " + CYCLES + " cycles: " + cycles(Platform.HOST, CYCLES));
    }

    @Test(groups = "host", timeOut = 600_000)
    public void hostCyclesAcrossProcesses() throws Exception
    {
        final int port = RankProcesses.freePort();
        final int n = Integer.getInteger("te4j.leak.processCycles", 100);
        try (RankProcesses ranks = new RankProcesses())
        {
            ranks.start(2, LeakWorker.class.getName(), List.of("-Xmx512m"),
                r -> List.of("" + r, "2", "" + port, "HOST", "" + n));
            for (final RankProcesses.Result r : ranks.await(Duration.ofMinutes(8)))
            {
                System.out.println(r);
                Assert.assertEquals(r.exitCode, 0, r.toString());
                Assert.assertTrue(r.output.contains("OK rank " + r.rank + " no leak"), r.output);
            }
        }
    }

    @Test(groups = "cuda", timeOut = 900_000)
    public void cudaCyclesKeepDeviceMemory() throws Exception
    {
        final String why = DeviceMap.cudaUnavailableFor(2);
        if (why != null)
        {
            throw new SkipException(why);
        }
        // The devices the two ranks use: one where both share GPU 0, two otherwise.
        final int[] devices = DeviceMap.devices(2, Availability.cudaDeviceCount());
        final int[] used = devices[0] == devices[1] ? new int[] {devices[0]} : devices;
        cycle(Platform.CUDA, 1 << 20);
        final long[] before = freeBytes(used);
        final int n = Integer.getInteger("te4j.leak.cudaCycles", 200);
        for (int i = 0; i < n; i++)
        {
            cycle(Platform.CUDA, (1 << 20) + (2L << 20) * (i % 5));
        }
        final long[] after = freeBytes(used);
        System.out.println("leak, cuda, " + n + " cycles, " + DeviceMap.describe(devices, Availability.cudaDeviceCount())
            + ": free " + Arrays.toString(before) + " -> " + Arrays.toString(after));
        for (int i = 0; i < used.length; i++)
        {
            Assert.assertTrue(after[i] >= before[i], "device " + used[i] + " lost " + (before[i] - after[i]) + " B over "
                + n + " cycles");
        }
    }

    private static long[] freeBytes(final int[] devices)
    {
        final long[] free = new long[devices.length];
        for (int i = 0; i < devices.length; i++)
        {
            free[i] = CudaMemInfo.freeBytes(devices[i]);
        }
        return free;
    }
}
