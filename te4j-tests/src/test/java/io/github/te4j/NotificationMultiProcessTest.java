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

    /** A sender that dies with notifications pending: none of them is delivered. */
    @Test(groups = "host", timeOut = 240_000)
    public void aLostSendersNotificationsAreNeverDelivered() throws Exception
    {
        run("lost");
    }
}
