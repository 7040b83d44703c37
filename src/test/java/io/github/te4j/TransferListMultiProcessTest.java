package io.github.te4j;

import io.github.te4j.launcher.RankProcesses;
import java.time.Duration;
import java.util.List;
import org.testng.Assert;
import org.testng.annotations.Test;

/**
 * Transfer lists between ranks in separate JVMs on the host platform ({@link TransferListWorker}):
 * a list prepared once and reposted every round, whole or as a range, while both ranks rewrite
 * their sources and poison their destinations between rounds, verified byte for byte; and a
 * rank that exits under a prepared list: the next post names the lost owner, and a JFR
 * recording holds its PeerLost event.
 */
public class TransferListMultiProcessTest
{
    private static void run(final String mode) throws InterruptedException
    {
        final int port = RankProcesses.freePort();
        final long session = Long.getLong("te4j.list.session", System.nanoTime());
        final String replay = " (session=" + session + ", replay with -Dte4j.list.session=" + session + ")";
        try (RankProcesses ranks = new RankProcesses())
        {
            ranks.start(2, TransferListWorker.class.getName(), List.of("-Xmx512m"), r -> List.of("rank=" + r,
                "port=" + port, "session=" + session, "mode=" + mode));
            final List<RankProcesses.Result> results = ranks.await(Duration.ofMinutes(3));
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

    @Test(groups = "host", timeOut = 240_000)
    public void twoRanksRepostAList() throws Exception
    {
        run("random");
    }

    @Test(groups = "host", timeOut = 240_000)
    public void postAfterTheOwnerExitedNamesIt() throws Exception
    {
        run("kill");
    }
}
