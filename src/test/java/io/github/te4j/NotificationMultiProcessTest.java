package io.github.te4j;

import io.github.te4j.launcher.RankProcesses;
import java.time.Duration;
import java.util.List;
import org.testng.Assert;
import org.testng.annotations.Test;

/** Notifications between two JVMs on the host platform ({@link NotificationWorker}). */
public class NotificationMultiProcessTest
{
    static void run(final String mode, final String... extra) throws InterruptedException
    {
        final int port = RankProcesses.freePort();
        final long session = System.nanoTime();
        try (RankProcesses ranks = new RankProcesses())
        {
            ranks.start(2, NotificationWorker.class.getName(), List.of("-Xmx512m"), r ->
            {
                final List<String> a = new java.util.ArrayList<>(List.of("rank=" + r, "port=" + port,
                    "session=" + session, "mode=" + mode));
                a.addAll(List.of(extra));
                return a;
            });
            final List<RankProcesses.Result> results = ranks.await(Duration.ofMinutes(3));
            for (final RankProcesses.Result r : results)
            {
                System.out.println(r);
            }
            for (final RankProcesses.Result r : results)
            {
                Assert.assertEquals(r.exitCode, 0, "rank " + r.rank + " failed (session " + session + "):\n" + r.output);
                Assert.assertTrue(r.output.contains("OK rank " + r.rank + " done"), r.output);
            }
        }
    }

    /** 64 parts of random length up to 1 MiB, each checked byte for byte when its notification arrives. */
    @Test(groups = "host", timeOut = 240_000)
    public void notificationsCrossProcessesInOrderAfterTheirData() throws Exception
    {
        run("stream", "parts=64");
    }

    /** The same over the software NIC, on loopback: every data WRITE and every slot an RDMA work request. */
    @Test(groups = "host", timeOut = 240_000)
    public void notificationsCrossProcessesOverTheSoftNic() throws Exception
    {
        run("stream", "parts=64", "nic=soft");
    }

    /** A sender over the software NIC that dies with notifications pending: none of them is delivered. */
    @Test(groups = "host", timeOut = 240_000)
    public void aLostRdmaSendersNotificationsAreNeverDelivered() throws Exception
    {
        run("lost", "nic=soft");
    }

    /** Each rank in its own network namespace, joined by a veth pair (root): only the software NIC reaches the peer. */
    @Test(groups = "host", timeOut = 300_000)
    public void notificationsAcrossNetworkNamespaces() throws Exception
    {
        try (VethPair veth = VethPair.create())
        {
            final int port = 29617;
            final long session = System.nanoTime();
            RdmaMultiProcessTest.runRanks(2, r ->
            {
                final List<String> cmd = new java.util.ArrayList<>(List.of("ip", "netns", "exec", veth.namespace(r),
                    io.github.te4j.launcher.RankProcesses.javaExecutable(), "--enable-native-access=ALL-UNNAMED",
                    "-Xmx512m", "-cp", System.getProperty("java.class.path"), NotificationWorker.class.getName()));
                cmd.addAll(List.of("rank=" + r, "port=" + port, "session=" + session, "mode=stream", "parts=64",
                    "host=" + veth.address(0), "bind=" + veth.address(0), "nic=soft@" + veth.address(r)));
                return cmd;
            });
        }
    }

    /** A sender that dies with notifications pending: none of them is delivered. */
    @Test(groups = "host", timeOut = 240_000)
    public void aLostSendersNotificationsAreNeverDelivered() throws Exception
    {
        run("lost");
    }
}
