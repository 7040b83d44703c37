package io.github.te4j;

import io.github.te4j.launcher.RankProcesses;
import java.time.Duration;
import java.util.List;
import org.testng.Assert;
import org.testng.SkipException;
import org.testng.annotations.Test;

/**
 * Ranks as separate JVMs exchanging handles over the TCP rendezvous and moving data with
 * put+signal, red-add and wait: 2 and 4 ranks on the host platform (CI), 2 on CUDA (GPU host).
 */
public class P2pMultiProcessTest
{
    static void runRanks(final int world, final Platform platform, final String sizes, final int rounds)
        throws InterruptedException
    {
        final int port = RankProcesses.freePort();
        final long session = System.nanoTime();
        try (RankProcesses ranks = new RankProcesses())
        {
            ranks.start(world, P2pWorker.class.getName(), List.of("-Xmx2g"),
                r -> P2pWorker.args(r, world, port, platform, sizes, rounds, session));
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

    /** All-to-all among 8 ranks (issue 7's pattern on the CPU): every rank puts a distinct random block to every other and signals it. */
    @Test(groups = "host", timeOut = 300_000)
    public void eightHostRanksAllToAll() throws Exception
    {
        runRanks(8, Platform.HOST, "4096,65536", 1);
    }

    @Test(groups = "cuda", timeOut = 600_000)
    public void twoCudaRanks() throws Exception
    {
        if (Availability.cudaDeviceCount() < 2)
        {
            throw new SkipException("needs 2 CUDA devices: " + Availability.describe());
        }
        runRanks(2, Platform.CUDA, "16,1000,4096,65536,1048576,16777216,268435456,1073741824", 1);
    }
}
