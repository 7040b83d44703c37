package io.github.te4j;

import io.github.te4j.examples.TwoRankExample;
import io.github.te4j.launcher.EtcdServer;
import io.github.te4j.launcher.RankProcesses;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.testng.Assert;
import org.testng.annotations.Test;

/** The README's two-rank example, on the host platform, with every kind of handle exchange (a real etcd included). */
public class TwoRankExampleTest
{
    private static void runBoth(final java.util.function.IntFunction<List<String>> args) throws Exception
    {
        try (RankProcesses ranks = new RankProcesses())
        {
            ranks.start(2, TwoRankExample.class.getName(), List.of(), args);
            final List<RankProcesses.Result> results = ranks.await(Duration.ofMinutes(2));
            for (final RankProcesses.Result r : results)
            {
                Assert.assertEquals(r.exitCode, 0, r.toString());
            }
            Assert.assertTrue(results.get(1).output.contains("verified 1048576 bytes: 0 mismatches"),
                results.get(1).output);
        }
    }

    @Test(timeOut = 180_000)
    public void tcpRendezvous() throws Exception
    {
        final int port = RankProcesses.freePort();
        runBoth(r -> new ArrayList<>(List.of("--platform", "host", "--rank", "" + r, "--rendezvous", "127.0.0.1:" + port)));
    }

    @Test(timeOut = 180_000)
    public void etcdRendezvous() throws Exception
    {
        try (EtcdServer etcd = EtcdServer.start())
        {
            final String job = "etcd://" + etcd.endpoint() + "/example-" + ProcessHandle.current().pid();
            runBoth(r -> new ArrayList<>(List.of("--platform", "host", "--rank", "" + r, "--rendezvous", job)));
        }
    }

    @Test(timeOut = 180_000)
    public void fileExchange() throws Exception
    {
        final Path dir = Files.createTempDirectory("te4j-xchg");
        runBoth(r -> new ArrayList<>(List.of("--platform", "host", "--rank", "" + r, "--exchange-dir", dir.toString())));
    }
}
