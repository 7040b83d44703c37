package io.github.te4j;

import io.github.te4j.launcher.RankProcesses;
import java.time.Duration;
import java.util.List;
import org.testng.Assert;
import org.testng.annotations.Test;

/**
 * Ranks as separate JVMs on the host platform publish their segments through the TCP rendezvous
 * and run random batches of READ and WRITE to every rank (itself included), verified byte for
 * byte against poisoned destinations ({@link TransferBatchWorker}); and a rank killed while
 * batches address it. The same over the software NIC ({@code nic=soft}: other ranks' segments
 * reached only over RDMA), on loopback and across network namespaces, with error CQEs.
 */
public class TransferBatchMultiProcessTest
{
    static void run(final int world, final String mode, final String... extra) throws InterruptedException
    {
        final int port = RankProcesses.freePort();
        // The session seeds every rank's plans and data: a failure prints it, and
        // -Dte4j.batch.session=N replays the same plans.
        final long session = Long.getLong("te4j.batch.session", System.nanoTime());
        final String replay = " (session=" + session + ", replay with -Dte4j.batch.session=" + session + ")";
        try (RankProcesses ranks = new RankProcesses())
        {
            ranks.start(world, TransferBatchWorker.class.getName(), List.of("-Xmx1g"), r ->
            {
                final List<String> a = new java.util.ArrayList<>(List.of("rank=" + r, "world=" + world, "port=" + port,
                    "session=" + session, "mode=" + mode));
                a.addAll(List.of(extra));
                return a;
            });
            final List<RankProcesses.Result> results = ranks.await(Duration.ofMinutes(4));
            for (final RankProcesses.Result r : results)
            {
                System.out.println(r);
            }
            for (final RankProcesses.Result r : results)
            {
                Assert.assertEquals(r.exitCode, 0, "rank " + r.rank + " failed" + replay + ":\n" + r.output);
                Assert.assertTrue(r.output.contains("OK rank " + r.rank + " done"), replay + "\n" + r.output);
            }
        }
    }

    @Test(groups = "host", timeOut = 300_000)
    public void twoRanksRandomBatches() throws Exception
    {
        run(2, "random", "requests=96", "maxLength=" + (4 << 20), "slot=" + (16L << 20));
    }

    @Test(groups = "host", timeOut = 300_000)
    public void fourRanksRandomBatches() throws Exception
    {
        run(4, "random", "requests=64", "maxLength=" + (1 << 20), "slot=" + (8L << 20));
    }

    @Test(groups = "host", timeOut = 300_000)
    public void rankKilledMidBatch() throws Exception
    {
        run(3, "kill", "slot=" + (4L << 20));
    }

    @Test(groups = "host", timeOut = 300_000)
    public void twoRanksRandomBatchesOverSoftNic() throws Exception
    {
        // 16 MiB requests and a ring of 16: back-pressure on the send ring, and READ/WRITE mixed.
        run(2, "random", "nic=soft", "ring=16", "requests=96", "maxLength=" + (16 << 20), "slot=" + (40L << 20));
    }

    @Test(groups = "host", timeOut = 300_000)
    public void threeRanksRandomBatchesOverSoftNic() throws Exception
    {
        run(3, "random", "nic=soft", "ring=64", "requests=256", "maxLength=" + (256 << 10), "slot=" + (8L << 20));
    }

    @Test(groups = "host", timeOut = 300_000)
    public void errorCqesOverSoftNic() throws Exception
    {
        run(2, "rdmaerror", "nic=soft", "ring=64", "slot=" + (4L << 20));
    }

    @Test(groups = "host", timeOut = 300_000)
    public void rankKilledMidBatchOverSoftNic() throws Exception
    {
        run(3, "kill", "nic=soft", "ring=256", "slot=" + (4L << 20));
    }

    /** Each rank in its own network namespace, joined by a veth pair: only the software NIC reaches the peer. */
    @Test(groups = "host", timeOut = 300_000)
    public void twoRanksRandomBatchesAcrossNetworkNamespaces() throws Exception
    {
        try (VethPair veth = VethPair.create())
        {
            final int port = 29613;
            final long session = System.nanoTime();
            RdmaMultiProcessTest.runRanks(2, r ->
            {
                final List<String> cmd = new java.util.ArrayList<>(List.of("ip", "netns", "exec", veth.namespace(r),
                    RankProcesses.javaExecutable(), "--enable-native-access=ALL-UNNAMED", "-Xmx1g", "-cp",
                    System.getProperty("java.class.path"), TransferBatchWorker.class.getName()));
                cmd.addAll(List.of("rank=" + r, "world=2", "port=" + port, "session=" + session, "mode=random",
                    "host=" + veth.address(0), "bind=" + veth.address(0), "nic=soft@" + veth.address(r), "ring=32",
                    "requests=64", "maxLength=" + (16 << 20), "slot=" + (32L << 20)));
                return cmd;
            });
        }
    }
}
