package io.github.te4j.bench;

import io.github.te4j.Availability;
import io.github.te4j.Platform;
import io.github.te4j.launcher.EtcdServer;
import io.github.te4j.launcher.RankProcesses;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.testng.Assert;
import org.testng.annotations.Test;

/**
 * Two bench ranks, each its own JVM, meeting through every kind of exchange address: a real
 * etcd (Debian's etcd-server, started here), a shared folder, and the tcp rendezvous that the
 * launcher's environment names (torchrun's and te4j's own variables). Every row must be verified;
 * nothing is asserted about speed.
 */
public class BenchRendezvousTest
{
    private static final List<String> SMALL = List.of("--platform", "host", "--mode", "bandwidth,latency",
        "--sizes", "4K,64K", "--latency-sizes", "8", "--warmup", "1", "--iterations", "3", "--timeout", "60s");

    @Test(groups = "host", timeOut = 300_000)
    public void ranksMeetOverEtcd() throws Exception
    {
        Availability.ensureAvailability(Platform.HOST);
        try (EtcdServer etcd = EtcdServer.start())
        {
            final String job = "etcd://" + etcd.endpoint() + "/bench-" + ProcessHandle.current().pid();
            runTwoRanks(r -> List.of("--rank", "" + r, "--world-size", "2", "--rendezvous", job), r -> Map.of());
        }
    }

    @Test(groups = "host", timeOut = 300_000)
    public void ranksMeetInASharedFolder() throws Exception
    {
        Availability.ensureAvailability(Platform.HOST);
        final Path dir = Files.createTempDirectory("te4j-bench-exchange");
        runTwoRanks(r -> List.of("--rank", "" + r, "--world-size", "2", "--rendezvous", dir.toUri().toString()),
            r -> Map.of());
    }

    @Test(groups = "host", timeOut = 300_000)
    public void ranksFromTorchrunsVariables() throws Exception
    {
        Availability.ensureAvailability(Platform.HOST);
        final int port = RankProcesses.freePort();
        // torchrun's own store holds MASTER_PORT; te4j's rendezvous takes the port above it.
        runTwoRanks(r -> List.of("--from-environment"), r -> Map.of("RANK", "" + r, "WORLD_SIZE", "2",
            "LOCAL_RANK", "" + r, "MASTER_ADDR", "127.0.0.1", "MASTER_PORT", "" + (port - 1)));
    }

    @Test(groups = "host", timeOut = 300_000)
    public void ranksFromTe4jsVariables() throws Exception
    {
        Availability.ensureAvailability(Platform.HOST);
        final String uri = "tcp://127.0.0.1:" + RankProcesses.freePort();
        runTwoRanks(r -> List.of("--from-environment"), r -> Map.of("TE4J_RANK", "" + r, "TE4J_WORLD_SIZE", "2",
            "TE4J_RENDEZVOUS", uri));
    }

    @Test(groups = "host", timeOut = 120_000)
    public void partialLauncherVariablesAreAUsageError() throws Exception
    {
        try (RankProcesses p = new RankProcesses())
        {
            p.startCommand(0, benchCommand(List.of("--from-environment", "--platform", "host")),
                Map.of("RANK", "0", "MASTER_ADDR", "127.0.0.1"));
            final RankProcesses.Result r = p.await(Duration.ofMinutes(1)).get(0);
            Assert.assertEquals(r.exitCode, 2, r.output);
            Assert.assertTrue(r.output.contains("--from-environment") && r.output.contains("RANK"),
                "the error lists what it found:\n" + r.output);
        }
    }

    private interface PerRank<T>
    {
        T of(int rank);
    }

    /** Starts ranks 0 and 1 with their own arguments and environment; rank 0 writes CSV rows, checked here. */
    private static void runTwoRanks(final PerRank<List<String>> args, final PerRank<Map<String, String>> env)
        throws Exception
    {
        final Path csv = Files.createTempFile("te4j-bench-rendezvous", ".csv");
        try (RankProcesses ranks = new RankProcesses())
        {
            for (int r = 0; r < 2; r++)
            {
                final List<String> a = new ArrayList<>(args.of(r));
                a.addAll(SMALL);
                if (r == 0)
                {
                    a.addAll(List.of("--format", "csv", "--output", csv.toString()));
                }
                ranks.startCommand(r, benchCommand(a), new HashMap<>(env.of(r)));
            }
            for (final RankProcesses.Result r : ranks.await(Duration.ofMinutes(3)))
            {
                Assert.assertEquals(r.exitCode, 0, "a rank failed:\n" + r.output);
            }
        }
        final List<String[]> rows = BenchRunTest.csvRows(csv);
        Assert.assertFalse(rows.isEmpty(), "rank 0 wrote no rows");
        BenchRunTest.checkRows(rows);
    }

    private static List<String> benchCommand(final List<String> args)
    {
        final List<String> cmd = new ArrayList<>(List.of(RankProcesses.javaExecutable(),
            "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"),
            BenchMain.class.getName()));
        cmd.addAll(args);
        return cmd;
    }
}
