package io.github.te4j;

import io.github.te4j.launcher.DeviceMap;
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
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.testng.Assert;
import org.testng.SkipException;
import org.testng.annotations.Test;

/**
 * Peer failure by kill -9: three ranks as separate JVMs; the last one is killed
 * with SIGKILL while it streams put+signal rounds to the others. The survivors must get
 * PeerLostException before their 10 s synchronize deadline ({@link PeerFailureWorker}), release
 * their resources and either exit cleanly or continue with a new active-ranks mask. Nothing the
 * killed rank created may stay in /dev/shm. The CUDA variants also run with two ranks
 * ({@link #killRankOneOfTwoOnCuda}). CUDA ranks sit round-robin on the GPUs present
 * ({@link DeviceMap}; all on GPU 0 where there is one). Peer loss is detected on the host, so the
 * deadlines hold where ranks share a GPU too; the waits that need the peer's writes stay long.
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
        requireCuda(3);
        killOneRank(Platform.CUDA, "exit");
    }

    @Test(groups = "cuda", timeOut = 600_000)
    public void cudaSurvivorsContinueWithRemainingRanks() throws Exception
    {
        requireCuda(3);
        killOneRank(Platform.CUDA, "continue");
    }

    /** Wait timeout of the two-rank CUDA variants' blocked wait: cleanup may last until it ends. */
    static final int CUDA_WAIT_SECONDS = Integer.getInteger("te4j.peerFailure.cudaWaitSeconds", 5);
    /** cudaMemGetInfo slack (driver bookkeeping such as peer mappings); a leaked window is 64 MiB. */
    static final long CUDA_MEM_SLACK = Long.getLong("te4j.peerFailure.cudaMemSlackBytes", 32L << 20);

    @Test(groups = "cuda", timeOut = 300_000)
    public void cudaTwoRanksSurvivorExitsCleanly() throws Exception
    {
        requireCuda(2);
        killRankOneOfTwoOnCuda("exit");
    }

    @Test(groups = "cuda", timeOut = 300_000)
    public void cudaTwoRanksSurvivorContinuesAlone() throws Exception
    {
        requireCuda(2);
        killRankOneOfTwoOnCuda("continue");
    }

    /**
     * Two ranks as separate JVMs ({@link PeerFailurePairWorker}): rank 1 is killed
     * with SIGKILL while it streams puts into rank 0 and rank 0 is blocked waiting for its signal
     * (after a put into rank 1's IPC-mapped window). Rank 0 must get PeerLostException naming rank 1
     * within {@link #DETECT_SECONDS} of the kill, from the liveness check (its wait's own timeout,
     * {@link #CUDA_WAIT_SECONDS}, would be a Te4jTimeoutException), release everything in bounded
     * time with device 0's free memory back to its level, and exit 0. Afterwards the free memory
     * of rank 1's device is back to its level too (the driver freed what the killed rank held):
     * device 1 with two GPUs, device 0, shared with rank 0, with one.
     */
    static void killRankOneOfTwoOnCuda(final String mode) throws Exception
    {
        final int world = 2;
        final Path dir = Files.createTempDirectory("te4j-peer-failure-cuda");
        final int victimDevice = DeviceMap.deviceOf(1);
        final long victimBefore = CudaMemInfo.freeBytes(victimDevice);
        final int port = RankProcesses.freePort();
        try (RankProcesses ranks = new RankProcesses())
        {
            ranks.start(world, PeerFailurePairWorker.class.getName(), List.of("-Xmx1g"),
                r -> List.of("" + r, "" + port, mode, dir.toString(), "" + DETECT_SECONDS, "" + CUDA_WAIT_SECONDS,
                    "" + CUDA_MEM_SLACK));
            awaitFiles(ranks, dir, "victim-streaming", "rank-0-blocked");
            final Process victim = ranks.processes().get(1);
            final long killedAt = System.currentTimeMillis();
            new ProcessBuilder("kill", "-9", Long.toString(victim.pid())).inheritIO().start().waitFor();
            Assert.assertTrue(victim.waitFor(30, TimeUnit.SECONDS), "the victim survived kill -9");
            ranks.processes().get(0).waitFor(120, TimeUnit.SECONDS);
            final List<RankProcesses.Result> results = ranks.await(Duration.ofSeconds(10));
            final RankProcesses.Result res = results.get(0);
            System.out.println(res);
            Assert.assertEquals(res.exitCode, 0, res.toString());
            Assert.assertTrue(res.output.contains("got PeerLostException"), res.output);
            Assert.assertTrue(res.output.contains("rank 1 (pid " + victim.pid() + ")"),
                "the exception should name rank 1 and its pid " + victim.pid() + ":\n" + res.output);
            Assert.assertTrue(res.output.contains("OK rank 0"), res.output);
            final Matcher m = Pattern.compile("te4j-peer-lost-epoch-ms (\\d+)").matcher(res.output);
            Assert.assertTrue(m.find(), res.output);
            final long detectMs = Long.parseLong(m.group(1)) - killedAt;
            System.out.println("cuda, 2 ranks, " + mode + ": peer loss reported " + detectMs + " ms after kill -9");
            Assert.assertTrue(detectMs < DETECT_SECONDS * 1000L && detectMs < CUDA_WAIT_SECONDS * 1000L,
                "peer loss reported " + detectMs + " ms after the kill: not within " + DETECT_SECONDS
                    + " s or not before the wait's own timeout of " + CUDA_WAIT_SECONDS + " s");
            Assert.assertEquals(results.get(1).exitCode, 137, "the victim should have died of SIGKILL");
        }
        finally
        {
            for (final File f : dir.toFile().listFiles())
            {
                f.delete();
            }
            dir.toFile().delete();
        }
        // The driver frees a killed process's device memory shortly after its exit.
        final long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        long victimAfter = CudaMemInfo.freeBytes(victimDevice);
        while (victimAfter < victimBefore - CUDA_MEM_SLACK && System.nanoTime() < end)
        {
            Thread.sleep(200);
            victimAfter = CudaMemInfo.freeBytes(victimDevice);
        }
        System.out.println("cuda, 2 ranks, " + mode + ": device " + victimDevice + " (rank 1's) free " + victimBefore
            + " -> " + victimAfter + " B");
        Assert.assertTrue(victimAfter >= victimBefore - CUDA_MEM_SLACK, "device " + victimDevice + " lost "
            + (victimBefore - victimAfter) + " B after kill -9 of rank 1 and the exit of rank 0");
    }

    /** Skips unless {@code world} ranks placed round-robin on the GPUs present can all reach each other. */
    static void requireCuda(final int world)
    {
        final String why = DeviceMap.cudaUnavailableFor(world);
        if (why != null)
        {
            throw new SkipException(why);
        }
        System.out.println(DeviceMap.describe(DeviceMap.devices(world, Availability.cudaDeviceCount()),
            Availability.cudaDeviceCount()));
    }
}
