package io.github.te4j;

import io.github.te4j.launcher.DeviceMap;
import io.github.te4j.launcher.RankProcesses;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.IntFunction;
import org.testng.Assert;
import org.testng.SkipException;
import org.testng.annotations.Test;

/**
 * Ranks as separate JVMs joined only by the software mlx5 NIC (P2P disabled for every pair):
 * puts 1 B .. 64 MiB, signals, many-writer totals, ordering, error CQEs, ring wraparound and
 * recovery ({@link RdmaWorker}); on loopback, across network namespaces joined by veth, and on
 * two GPUs (group {@code cuda}).
 */
public class RdmaMultiProcessTest
{
    static final String ALL_SIZES = "1,7,4096,65537,1048576,16777216,67108864";

    static void runRanks(final int world, final IntFunction<List<String>> commandOfRank) throws InterruptedException
    {
        try (RankProcesses ranks = new RankProcesses())
        {
            for (int r = 0; r < world; r++)
            {
                ranks.startCommand(r, commandOfRank.apply(r));
            }
            final List<RankProcesses.Result> results = ranks.await(Duration.ofMinutes(5));
            for (final RankProcesses.Result r : results)
            {
                System.out.println(r);
            }
            for (final RankProcesses.Result r : results)
            {
                if (r.exitCode == RdmaWorker.EXIT_SKIP)
                {
                    final int at = r.output.indexOf("SKIP ");
                    throw new SkipException(at < 0 ? r.output : r.output.substring(at + 5).trim());
                }
            }
            for (final RankProcesses.Result r : results)
            {
                Assert.assertEquals(r.exitCode, 0, "rank " + r.rank + " failed:\n" + r.output);
                Assert.assertTrue(r.output.contains("OK rank " + r.rank + " done"), r.output);
            }
        }
    }

    /** {@code prefix} + java + the worker with {@code args}. */
    static List<String> javaCommand(final List<String> prefix, final List<String> args)
    {
        final List<String> cmd = new ArrayList<>(prefix);
        cmd.add(RankProcesses.javaExecutable());
        cmd.add("--enable-native-access=ALL-UNNAMED");
        cmd.add("-Xmx1g");
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(RdmaWorker.class.getName());
        cmd.addAll(args);
        return cmd;
    }

    static List<String> args(final int rank, final int world, final int port, final String... extra)
    {
        // The port is unique per run and the same for every rank: it doubles as the data session.
        final List<String> l = new ArrayList<>(List.of("rank=" + rank, "world=" + world, "port=" + port,
            "session=" + port));
        l.addAll(List.of(extra));
        return l;
    }

    @Test(groups = "host", timeOut = 300_000)
    public void twoRanksOverSoftNic() throws Exception
    {
        final int port = RankProcesses.freePort();
        runRanks(2, r -> javaCommand(List.of(), args(r, 2, port, "nic=soft", "sizes=" + ALL_SIZES, "ring=16")));
    }

    @Test(groups = "host", timeOut = 300_000)
    public void threeRanksManyWriters() throws Exception
    {
        final int port = RankProcesses.freePort();
        runRanks(3, r -> javaCommand(List.of(),
            args(r, 3, port, "nic=soft", "sizes=1,4096,1048577", "ring=32", "writers=3", "writes=200")));
    }

    @Test(groups = "host", timeOut = 300_000)
    public void twoRanksAcrossNetworkNamespaces() throws Exception
    {
        try (VethPair veth = VethPair.create())
        {
            final int port = 29611;
            runRanks(2, r -> javaCommand(List.of("ip", "netns", "exec", veth.namespace(r)),
                args(r, 2, port, "host=" + veth.address(0), "bind=" + veth.address(0), "nic=soft@" + veth.address(r),
                    "sizes=1,4096,1048577,16777216", "ring=16")));
        }
    }

    /** Every wait's bound in the CUDA ranks, generous for ranks that share one GPU. */
    static final int CUDA_WAIT_SECONDS = 180;

    /** GPU host: {@code scripts/gpu-tests.sh ARTIFACTS cuda-rdma} runs this test alone. */
    @Test(groups = {"cuda", "cuda-rdma"}, timeOut = 600_000)
    public void twoCudaRanksOverSoftNic() throws Exception
    {
        // Waits get CUDA_WAIT_SECONDS: ranks sharing a GPU only time-slice it.
        // Round-robin over the GPUs present (both on device 0 where there is one): the software
        // NIC moves the bytes through host memory, so the ranks need no peer path between devices.
        final int n = Availability.cudaDeviceCount();
        if (n < 1)
        {
            throw new SkipException("needs a CUDA device: " + Availability.describe());
        }
        final int port = RankProcesses.freePort();
        runRanks(2, r -> javaCommand(List.of(), args(r, 2, port, "platform=cuda", "device=" + DeviceMap.deviceOf(r, n),
            "nic=soft", "sizes=" + ALL_SIZES, "ring=64", "writers=4", "writes=200", "timeoutSeconds=" + CUDA_WAIT_SECONDS)));
    }
}
