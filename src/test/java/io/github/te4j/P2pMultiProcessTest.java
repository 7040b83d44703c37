package io.github.te4j;

import io.github.te4j.launcher.DeviceMap;
import io.github.te4j.launcher.RankProcesses;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.testng.Assert;
import org.testng.SkipException;
import org.testng.annotations.Test;

/**
 * Ranks as separate JVMs exchanging handles over the TCP rendezvous and moving data with
 * put+signal, red-add and wait: 2 and 4 ranks on the host platform (CI), 2 on CUDA (GPU host),
 * placed round-robin on the GPUs present ({@link DeviceMap}: both on device 0 where there is one).
 */
public class P2pMultiProcessTest
{
    /**
     * Every wait's bound in a CUDA rank. Generous because ranks sharing a GPU only time-slice it:
     * a rank's spinning wait holds the GPU for its slice while the writer waits for the next.
     */
    static final int CUDA_WAIT_SECONDS = 180;

    static void runRanks(final int world, final Platform platform, final String sizes, final int rounds)
        throws InterruptedException
    {
        runRanks(world, platform, platform == Platform.CUDA ? DeviceMap.devices(world, Availability.cudaDeviceCount())
            : null, sizes, rounds);
    }

    /** {@code world} ranks as JVMs; on CUDA rank r uses {@code devices[r]}. */
    static void runRanks(final int world, final Platform platform, final int[] devices, final String sizes,
        final int rounds) throws InterruptedException
    {
        final int port = RankProcesses.freePort();
        final long session = System.nanoTime();
        if (devices != null)
        {
            System.out.println(DeviceMap.describe(devices, Availability.cudaDeviceCount()));
        }
        try (RankProcesses ranks = new RankProcesses())
        {
            ranks.start(world, P2pWorker.class.getName(), List.of("-Xmx2g"), r ->
            {
                final List<String> a = new ArrayList<>(P2pWorker.args(r, world, port, platform, sizes, rounds, session));
                if (devices != null)
                {
                    a.add("device=" + devices[r]);
                    a.add("timeoutSeconds=" + CUDA_WAIT_SECONDS);
                }
                return a;
            });
            final List<RankProcesses.Result> results = ranks.await(Duration.ofMinutes(5));
            for (final RankProcesses.Result r : results)
            {
                System.out.println(r);
            }
            for (final RankProcesses.Result r : results)
            {
                Assert.assertEquals(r.exitCode, 0, "rank " + r.rank + " failed:\n" + r.output);
                Assert.assertTrue(r.output.contains("OK rank " + r.rank + " done"), r.output);
            }
        }
    }

    @Test(groups = "host", timeOut = 300_000)
    public void twoHostRanks() throws Exception
    {
        runRanks(2, Platform.HOST, "1,16,4095,65536,1048576,8388608", 2);
    }

    @Test(groups = "host", timeOut = 300_000)
    public void fourHostRanks() throws Exception
    {
        runRanks(4, Platform.HOST, "16,65536,1048577", 2);
    }

    /** All-to-all among 8 ranks on the CPU: every rank puts a distinct random block to every other and signals it. */
    @Test(groups = "host", timeOut = 300_000)
    public void eightHostRanksAllToAll() throws Exception
    {
        runRanks(8, Platform.HOST, "4096,65536", 1);
    }

    @Test(groups = "cuda", timeOut = 600_000)
    public void twoCudaRanks() throws Exception
    {
        final String why = DeviceMap.cudaUnavailableFor(2);
        if (why != null)
        {
            throw new SkipException(why);
        }
        runRanks(2, Platform.CUDA, "16,1000,4096,65536,1048576,16777216,268435456,1073741824", 1);
    }

    /**
     * Three ranks, all on GPU 0 whatever the host has: CUDA IPC between processes of one device
     * (the layout a one-GPU host gets by default, here also on larger hosts).
     */
    @Test(groups = "cuda", timeOut = 600_000)
    public void threeCudaRanksOnOneGpu() throws Exception
    {
        if (Availability.cudaDeviceCount() < 1)
        {
            throw new SkipException("needs a CUDA device: " + Availability.describe());
        }
        runRanks(3, Platform.CUDA, new int[] {0, 0, 0}, "16,4095,65536,1048577,16777216", 2);
    }
}
