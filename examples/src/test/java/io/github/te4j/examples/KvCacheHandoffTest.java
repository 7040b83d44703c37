package io.github.te4j.examples;

import io.github.te4j.Availability;
import io.github.te4j.Platform;
import io.github.te4j.launcher.DeviceMap;
import io.github.te4j.launcher.RankProcesses;
import io.github.te4j.launcher.VethPair;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.IntFunction;
import org.testng.Assert;
import org.testng.SkipException;
import org.testng.annotations.Test;

/**
 * The KV-cache handoff example end to end, its two ranks as child JVMs: on the host platform
 * (mapped segments, the software NIC on loopback and between two network namespaces) and on CUDA
 * (both ranks on GPU 0; across two GPUs where they reach each other). Every run's decode rank
 * checks every byte of every layer and that no other slot of its pool was written.
 */
public class KvCacheHandoffTest
{
    /** A small shape: 4 layers x 32 blocks x 4 KiB scattered over 512 slots. */
    private static final List<String> SHAPE = List.of("--layers", "4", "--blocks", "32", "--block-size", "4K",
        "--pool-blocks", "512", "--seed", "7");
    private static final String VERIFIED = "verified 128 blocks (524288 bytes): 0 bad; 384 other slots still"
        + " poisoned: 0 overwritten";

    private static List<RankProcesses.Result> run(final IntFunction<List<String>> commandOfRank) throws Exception
    {
        try (RankProcesses ranks = new RankProcesses())
        {
            for (int r = 0; r < 2; r++)
            {
                ranks.startCommand(r, commandOfRank.apply(r));
            }
            return ranks.await(Duration.ofMinutes(4));
        }
    }

    /** java + the example as rank r with {@code args} and the shape, after {@code prefix}. */
    private static List<String> command(final List<String> prefix, final int rank, final List<String> args)
    {
        final List<String> cmd = new ArrayList<>(prefix);
        cmd.addAll(List.of(RankProcesses.javaExecutable(), "--enable-native-access=ALL-UNNAMED", "-Xmx1g", "-cp",
            System.getProperty("java.class.path"), KvCacheHandoff.class.getName(), "--rank", "" + rank));
        cmd.addAll(args);
        cmd.addAll(SHAPE);
        return cmd;
    }

    private static void assertHandedOver(final List<RankProcesses.Result> results)
    {
        for (final RankProcesses.Result r : results)
        {
            Assert.assertEquals(r.exitCode, 0, r.toString());
        }
        Assert.assertTrue(results.get(0).output.contains("[prefill] handed 4 layers x 32 blocks x 4096 B"),
            results.get(0).output);
        Assert.assertTrue(results.get(1).output.contains(VERIFIED), results.get(1).output);
    }

    private static void onLoopback(final String... args) throws Exception
    {
        final int port = RankProcesses.freePort();
        assertHandedOver(run(r -> command(List.of(), r, withRendezvous(port, args))));
    }

    private static List<String> withRendezvous(final int port, final String... args)
    {
        final List<String> l = new ArrayList<>(List.of(args));
        l.addAll(List.of("--rendezvous", "tcp://127.0.0.1:" + port));
        return l;
    }

    @Test(groups = "host", timeOut = 300_000)
    public void hostPlatform() throws Exception
    {
        onLoopback("--platform", "host");
    }

    @Test(groups = "host", timeOut = 300_000)
    public void hostOverSoftNic() throws Exception
    {
        onLoopback("--platform", "host", "--nic", "soft");
    }

    @Test(groups = "host", timeOut = 300_000)
    public void softNicAcrossNetworkNamespaces() throws Exception
    {
        try (VethPair veth = VethPair.create())
        {
            final int port = 29650;
            assertHandedOver(run(r -> command(List.of("ip", "netns", "exec", veth.namespace(r)), r, List.of(
                "--platform", "host", "--nic", "soft@" + veth.address(r),
                "--rendezvous", "tcp://" + veth.address(0) + ":" + port))));
        }
    }

    /** The checks fail loudly: one block whose source was changed is reported, and the decode rank exits 1. */
    @Test(groups = "host", timeOut = 300_000)
    public void aWrongBlockIsCaught() throws Exception
    {
        final int port = RankProcesses.freePort();
        final List<RankProcesses.Result> results = run(r -> command(List.of(), r,
            withRendezvous(port, "--platform", "host", "--corrupt-for-test", "2")));
        Assert.assertEquals(results.get(0).exitCode, 0, results.get(0).toString());
        Assert.assertEquals(results.get(1).exitCode, 1, results.get(1).toString());
        Assert.assertTrue(results.get(1).output.contains("[decode] layer 2 block 0: byte "),
            results.get(1).output);
        Assert.assertTrue(results.get(1).output.contains("128 blocks (524288 bytes): 1 bad"), results.get(1).output);
    }

    @Test(groups = "host")
    public void badShapesAreRefusedWithTheReason()
    {
        final IllegalArgumentException tooSmall = Assert.expectThrows(IllegalArgumentException.class, () ->
            KvCacheHandoff.Options.parse(new String[] {"--layers", "4", "--blocks", "32", "--pool-blocks", "100"}));
        Assert.assertTrue(tooSmall.getMessage().contains("100 slots for 4 x 32 = 128 blocks"), tooSmall.getMessage());
        final IllegalArgumentException odd = Assert.expectThrows(IllegalArgumentException.class, () ->
            KvCacheHandoff.Options.parse(new String[] {"--block-size", "1001"}));
        Assert.assertTrue(odd.getMessage().contains("multiple of 8"), odd.getMessage());
        final IllegalArgumentException cudaNic = Assert.expectThrows(IllegalArgumentException.class, () ->
            KvCacheHandoff.Options.parse(new String[] {"--platform", "cuda", "--nic", "soft"}));
        Assert.assertTrue(cudaNic.getMessage().contains("--platform host"), cudaNic.getMessage());
    }

    @Test(groups = "cuda", timeOut = 300_000)
    public void cudaBothRanksOnGpu0() throws Exception
    {
        requireGpus(1);
        onLoopback("--platform", "cuda", "--device", "0");
    }

    @Test(groups = "cuda", timeOut = 300_000)
    public void cudaAcrossTwoGpus() throws Exception
    {
        requireGpus(2);
        final String unreachable = DeviceMap.unreachable(new int[] {0, 1});
        if (unreachable != null)
        {
            throw new SkipException(unreachable);
        }
        final int port = RankProcesses.freePort();
        assertHandedOver(run(r -> command(List.of(), r,
            withRendezvous(port, "--platform", "cuda", "--device", "" + r))));
    }

    private static void requireGpus(final int n)
    {
        if (!Availability.isAvailable(Platform.CUDA) || Availability.cudaDeviceCount() < n)
        {
            throw new SkipException("needs " + n + " CUDA device(s): " + Availability.describe());
        }
    }
}
