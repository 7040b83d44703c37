package io.github.te4j;

import io.github.te4j.launcher.RankProcesses;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.testng.Assert;
import org.testng.SkipException;
import org.testng.annotations.Test;

/**
 * Issue 6, targets 3 and 4 (kill -9 part): three ranks as separate JVMs; the last one is killed
 * with SIGKILL while it streams put+signal rounds to the others. The survivors must get
 * PeerLostException before their 10 s synchronize deadline ({@link PeerFailureWorker}), release
 * their resources and either exit cleanly or continue with a new active-ranks mask. Nothing the
 * killed rank created may stay in /dev/shm.
 */
public class PeerFailureTest
{
    /** The survivors' synchronize deadline: peer loss must be reported before it. */
    static final int DETECT_SECONDS = Integer.getInteger("te4j.peerLostDeadlineSeconds", 10);

    static void killOneRank(final Platform platform, final String mode) throws Exception
    {
        final int world = 3;
        final Path dir = Files.createTempDirectory("te4j-peer-failure");
        final Set<String> shmBefore = shm();
        final int port = RankProcesses.freePort();
        try (RankProcesses ranks = new RankProcesses())
        {
            ranks.start(world, PeerFailureWorker.class.getName(), List.of("-Xmx512m"),
                r -> List.of("" + r, "" + world, "" + port, platform.name(), mode, dir.toString(), "" + DETECT_SECONDS));
            // Kill only once the victim streams and both survivors have received rounds from it.
            awaitFiles(ranks, dir, "victim-streaming", "rank-0-receiving", "rank-1-receiving");
            final Process victim = ranks.processes().get(world - 1);
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
        final Set<String> left = shm();
        left.removeAll(shmBefore);
        Assert.assertTrue(left.isEmpty(), "left in /dev/shm after kill -9: " + left);
    }

    static Set<String> shm()
    {
        final String[] names = new File("/dev/shm").list();
        return new HashSet<>(names == null ? List.of() : Arrays.asList(names));
    }

    private static void awaitFiles(final RankProcesses ranks, final Path dir, final String... names)
        throws InterruptedException
    {
        final long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        while (!Arrays.stream(names).allMatch(n -> Files.exists(dir.resolve(n))))
        {
            if (System.nanoTime() > end || ranks.processes().stream().anyMatch(p -> !p.isAlive()))
            {
                throw new AssertionError("ranks did not start streaming: " + ranks.await(Duration.ofSeconds(1)));
            }
            Thread.sleep(20);
        }
    }

    @Test(groups = "host", timeOut = 300_000)
    public void hostSurvivorsExitCleanly() throws Exception
    {
        killOneRank(Platform.HOST, "exit");
    }

    @Test(groups = "host", timeOut = 300_000)
    public void hostSurvivorsContinueWithRemainingRanks() throws Exception
    {
        killOneRank(Platform.HOST, "continue");
    }

    @Test(groups = "cuda", timeOut = 600_000)
    public void cudaSurvivorsExitCleanly() throws Exception
    {
        requireCudaDevices(3);
        killOneRank(Platform.CUDA, "exit");
    }

    @Test(groups = "cuda", timeOut = 600_000)
    public void cudaSurvivorsContinueWithRemainingRanks() throws Exception
    {
        requireCudaDevices(3);
        killOneRank(Platform.CUDA, "continue");
    }

    static void requireCudaDevices(final int n)
    {
        if (Availability.cudaDeviceCount() < n)
        {
            throw new SkipException("needs " + n + " CUDA devices (one per rank): " + Availability.describe());
        }
    }
}
