package io.github.te4j;

import io.github.te4j.launcher.RankProcesses;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.testng.Assert;
import org.testng.annotations.Test;

/**
 * Issue 6, target 3 over RDMA (software NIC, host platform): ranks as separate JVMs reached only
 * over RDMA; the last one is killed with SIGKILL while it streams puts and the others put into
 * it ({@link RdmaPeerFailureWorker}). Every survivor must get {@link PeerLostException} naming
 * the victim within {@link PeerFailureTest#DETECT_SECONDS} of the kill, then release everything
 * and exit 0, or reconnect without the victim and move data. Across network namespaces the
 * liveness comes from the network alone: the victim's connections closing, or, when its host
 * goes silent (its link down before the kill), the keepalive bound of the peer timeout.
 */
public class RdmaPeerFailureTest
{
    @Test(groups = "host", timeOut = 300_000)
    public void threeRanksSurvivorsExitCleanly() throws Exception
    {
        killLastRank(3, "exit", null, false, false);
    }

    @Test(groups = "host", timeOut = 300_000)
    public void threeRanksSurvivorsReconnectWithoutVictim() throws Exception
    {
        killLastRank(3, "continue", null, false, false);
    }

    /** Two hosts (network namespaces joined by veth): the remote rank is killed mid-transfer. */
    @Test(groups = "host", timeOut = 300_000)
    public void remoteRankKilledAcrossNamespaces() throws Exception
    {
        try (VethPair veth = VethPair.create())
        {
            killLastRank(2, "exit", veth, false, false);
        }
    }

    /**
     * The remote host goes silent (link down, then kill -9): no FIN or RST ever arrives. The
     * survivor's puts into it stay unacknowledged: the peer timeout's bound on unacked data.
     */
    @Test(groups = "host", timeOut = 300_000)
    public void remoteHostVanishesSilently() throws Exception
    {
        try (VethPair veth = VethPair.create())
        {
            killLastRank(2, "exit", veth, true, false);
        }
    }

    /** As above, but the survivor only waits (sends nothing): the keepalive probes must notice. */
    @Test(groups = "host", timeOut = 300_000)
    public void remoteHostVanishesWhileSurvivorIsIdle() throws Exception
    {
        try (VethPair veth = VethPair.create())
        {
            killLastRank(2, "exit", veth, true, true);
        }
    }

    /**
     * Starts {@code world} ranks (in veth's namespaces when given, rank r in namespace r), kills
     * the last one once every rank streams, and checks the survivors' reports and timing.
     */
    static void killLastRank(final int world, final String mode, final VethPair veth, final boolean silent,
        final boolean idle) throws Exception
    {
        final Path dir = Files.createTempDirectory("te4j-rdma-peer-failure");
        final int port = veth == null ? RankProcesses.freePort() : 29621;
        final int port2 = veth == null ? RankProcesses.freePort() : 29622;
        final IntFunction<List<String>> cmd = r ->
        {
            final List<String> c = new ArrayList<>();
            if (veth != null)
            {
                c.addAll(List.of("ip", "netns", "exec", veth.namespace(r)));
            }
            c.addAll(List.of(RankProcesses.javaExecutable(), "--enable-native-access=ALL-UNNAMED", "-Xmx512m", "-cp",
                System.getProperty("java.class.path"), RdmaPeerFailureWorker.class.getName(), "rank=" + r,
                "world=" + world, "port=" + port, "port2=" + port2, "mode=" + mode, "dir=" + dir,
                "deadline=" + PeerFailureTest.DETECT_SECONDS, "idle=" + idle));
            if (veth != null)
            {
                c.addAll(List.of("host=" + veth.address(0), "bind=" + veth.address(0), "nic=soft@" + veth.address(r)));
            }
            return c;
        };
        try (RankProcesses ranks = new RankProcesses())
        {
            for (int r = 0; r < world; r++)
            {
                ranks.startCommand(r, cmd.apply(r));
            }
            final List<String> ready = new ArrayList<>(List.of("victim-streaming"));
            for (int r = 0; r < world - 1; r++)
            {
                ready.add("rank-" + r + "-receiving");
            }
            awaitFiles(ranks, dir, ready);
            final Process victim = ranks.processes().get(world - 1);
            // Detection time counts from when the victim went silent: its link down, else the kill.
            final long killedAt = System.currentTimeMillis();
            if (silent)
            {
                // The victim's host drops off the network first: its kernel's FIN/RST never arrive.
                Assert.assertTrue(veth.linkDown(world - 1), "cannot take the victim's link down");
            }
            new ProcessBuilder("kill", "-9", Long.toString(victim.pid())).inheritIO().start().waitFor();
            Assert.assertTrue(victim.waitFor(30, TimeUnit.SECONDS), "the victim survived kill -9");
            for (int r = 0; r < world - 1; r++)
            {
                ranks.processes().get(r).waitFor(120, TimeUnit.SECONDS);
            }
            final List<RankProcesses.Result> results = ranks.await(Duration.ofSeconds(10));
            for (int r = 0; r < world - 1; r++)
            {
                final RankProcesses.Result res = results.get(r);
                System.out.println(res);
                Assert.assertEquals(res.exitCode, 0, res.toString());
                Assert.assertTrue(res.output.contains("got PeerLostException"), res.output);
                Assert.assertTrue(res.output.contains("OK rank " + r), res.output);
                final Matcher m = Pattern.compile("te4j-peer-lost-epoch-ms (\\d+)").matcher(res.output);
                Assert.assertTrue(m.find(), res.output);
                final long detectMs = Long.parseLong(m.group(1)) - killedAt;
                System.out.println("rdma, " + world + " ranks, " + mode + (veth == null ? "" : ", namespaces")
                    + (silent ? ", silent host" : "") + (idle ? ", idle survivor" : "") + ": rank " + r
                    + " reported the loss " + detectMs + " ms after " + (silent ? "its link went down" : "kill -9"));
                Assert.assertTrue(detectMs < PeerFailureTest.DETECT_SECONDS * 1000L,
                    "peer loss reported " + detectMs + " ms after the kill, deadline " + PeerFailureTest.DETECT_SECONDS
                        + " s");
            }
            Assert.assertEquals(results.get(world - 1).exitCode, 137, "the victim should have died of SIGKILL");
        }
        finally
        {
            for (final File f : dir.toFile().listFiles())
            {
                f.delete();
            }
            dir.toFile().delete();
        }
    }

    private static void awaitFiles(final RankProcesses ranks, final Path dir, final List<String> names)
        throws InterruptedException
    {
        final long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        while (!names.stream().allMatch(n -> Files.exists(dir.resolve(n))))
        {
            if (System.nanoTime() > end || ranks.processes().stream().anyMatch(p -> !p.isAlive()))
            {
                throw new AssertionError("ranks did not start streaming: " + ranks.await(Duration.ofSeconds(1)));
            }
            Thread.sleep(20);
        }
    }
}
