package io.github.te4j.bench;

import io.github.te4j.Platform;
import java.nio.file.Path;
import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import org.testng.Assert;
import org.testng.annotations.Test;
import picocli.CommandLine;

/** Command-line parsing and validation (no native code, no processes). */
public class BenchOptionsTest
{
    static BenchConfig parse(final String... args)
    {
        final CommandLine cl = new CommandLine(new BenchMain());
        cl.parseArgs(args);
        final BenchMain m = cl.getCommand();
        return m.toConfig();
    }

    @Test
    public void defaults()
    {
        final BenchConfig c = parse();
        Assert.assertEquals(c.transport(), TransportKind.P2P);
        Assert.assertEquals(c.modes(), EnumSet.of(Mode.BANDWIDTH, Mode.LATENCY, Mode.RATE));
        Assert.assertEquals(parse("--gpus", "0,1").sizes(Mode.BANDWIDTH, Platform.CUDA), Sizes.parseSweep("8:1G"));
        Assert.assertEquals(c.sizes(Mode.BANDWIDTH, Platform.HOST), Sizes.parseSweep("8:64M"));
        Assert.assertEquals(c.sizes(Mode.LATENCY, Platform.CUDA), List.of(8L));
        Assert.assertEquals(c.sizes(Mode.RATE, Platform.CUDA), List.of(65536L));
        Assert.assertEquals(c.ranks, 2);
        Assert.assertEquals(c.blocks, List.of(16));
        Assert.assertEquals(c.threads, 512);
        Assert.assertEquals(c.iterations, 20);
        Assert.assertNull(c.duration);
        Assert.assertFalse(c.isRank());
        Assert.assertEquals(c.format, OutputFormat.TABLE);
    }

    @Test
    public void everyOption()
    {
        final BenchConfig c = parse("--transport", "rdma-soft", "--platform", "HOST", "--mode", "bandwidth,latency",
            "--sweep", "8:1M", "--latency-sizes", "8,64", "--warmup", "0", "--duration", "250ms", "--batch", "10",
            "--ranks", "4", "--gpus", "0,1,2,3", "--blocks", "16,0,132", "--threads", "256", "--format", "json",
            "--output", "out.json", "--chart", "c.svg", "--targets", "--peers", "--peers-dir", "/tmp/p", "--rank", "3",
            "--rendezvous", "10.0.0.1:29500", "--bind", "0.0.0.0", "--timeout", "2m");
        Assert.assertEquals(c.transport(), TransportKind.RDMA_SOFT);
        Assert.assertEquals(c.resolvePlatform(), Platform.HOST);
        Assert.assertEquals(c.modes(), EnumSet.of(Mode.BANDWIDTH, Mode.LATENCY));
        Assert.assertEquals(c.sizes(Mode.BANDWIDTH, Platform.HOST).size(), 18);
        Assert.assertEquals(c.sizes(Mode.LATENCY, Platform.HOST), List.of(8L, 64L));
        Assert.assertEquals(c.warmup, 0);
        Assert.assertEquals(c.duration, Duration.ofMillis(250));
        Assert.assertEquals(c.batchFor(Mode.BANDWIDTH, 8), 10);
        Assert.assertEquals(c.deviceOf(2), 2);
        Assert.assertEquals(c.blocks, List.of(16, 0, 132));
        Assert.assertEquals(c.threads, 256);
        Assert.assertEquals(c.format, OutputFormat.JSON);
        Assert.assertEquals(c.output, Path.of("out.json"));
        Assert.assertTrue(c.targets && c.peers && c.isRank());
        Assert.assertEquals(c.peersDir, Path.of("/tmp/p"));
        Assert.assertEquals(c.rendezvous, "tcp://10.0.0.1:29500", "a bare HOST:PORT is the tcp rendezvous");
        Assert.assertEquals(c.bindAddress, "0.0.0.0");
        Assert.assertEquals(c.timeout, Duration.ofMinutes(2));
        Assert.assertNull(c.transport().unavailableReason(), "rdma-soft runs through io.github.te4j.RdmaTransport");
        Assert.assertNotNull(TransportKind.RDMA_HW.unavailableReason(), "rdma-hw must say why it is unavailable without an mlx5 NIC");
    }

    @Test
    public void softNicAddressReachesTheNicAndTheTcpBaseline()
    {
        final BenchConfig c = parse("--transport", "rdma-soft", "--platform", "HOST", "--soft-nic", "soft@10.213.7.2:0");
        Assert.assertEquals(c.rdmaDevice(), "soft@10.213.7.2:0");
        Assert.assertEquals(c.softNicAddress(), "10.213.7.2");
        Assert.assertTrue(c.childArgs(Platform.HOST, 1, "tcp://127.0.0.1:1", Path.of("rows")).contains(
            "--soft-nic=soft@10.213.7.2:0"), "launched ranks get the same NIC address");
        final BenchConfig loopback = parse("--transport", "rdma-soft", "--platform", "HOST");
        Assert.assertEquals(loopback.rdmaDevice(), "soft");
        Assert.assertEquals(loopback.softNicAddress(), "127.0.0.1");
        Assert.expectThrows(IllegalArgumentException.class,
            () -> parse("--transport", "rdma-soft", "--soft-nic", "mlx5_0"));
    }

    @Test
    public void singleModeTakesTheMainSizes()
    {
        final BenchConfig c = parse("--mode", "latency", "--sizes", "8,4K");
        Assert.assertEquals(c.sizes(Mode.LATENCY, Platform.HOST), List.of(8L, 4096L));
        final BenchConfig r = parse("--mode", "rate", "--sweep", "4K:16K");
        Assert.assertEquals(r.sizes(Mode.RATE, Platform.HOST), List.of(4096L, 8192L, 16384L));
    }

    @Test
    public void autoBatch()
    {
        final BenchConfig c = parse();
        Assert.assertEquals(c.batchFor(Mode.BANDWIDTH, 8), 1000);
        Assert.assertEquals(c.batchFor(Mode.BANDWIDTH, 1L << 20), 256);
        Assert.assertEquals(c.batchFor(Mode.BANDWIDTH, 1L << 30), 1);
        Assert.assertEquals(c.batchFor(Mode.LATENCY, 8), 1000);
        Assert.assertEquals(c.batchFor(Mode.LATENCY, 1L << 20), 16);
    }

    @Test
    public void rejectsBadValues()
    {
        final String[][] bad = {
            {"--sizes", "7"}, {"--sizes", "2G"}, {"--sweep", "64:8"}, {"--sizes", "8", "--sweep", "8:16"},
            {"--mode", "speed"}, {"--platform", "tpu"}, {"--transport", "tcp"}, {"--warmup", "-1"},
            {"--iterations", "0"}, {"--iterations", "5", "--duration", "1s"}, {"--duration", "0s"},
            {"--duration", "fast"}, {"--batch", "-2"}, {"--ranks", "1"}, {"--ranks", "65"}, {"--gpus", "0"},
            {"--gpus", "0,x"}, {"--blocks", "16,-1"}, {"--blocks", "70000"}, {"--threads", "100"},
            {"--threads", "2048"}, {"--format", "xml"}, {"--chart", "c.gif"}, {"--rank", "2"},
            {"--rendezvous", "nohost"}, {"--rendezvous", "h:99999"}, {"--timeout", "-5s"},
            {"--rendezvous", "ftp://h:1/x"}, {"--rendezvous", ""}, {"--rendezvous", "file:///tmp/x", "--bind", "0.0.0.0"},
            {"--rank", "0", "--from-environment"},
            {"--result-file", "x.rows"}};
        for (final String[] args : bad)
        {
            Assert.assertThrows("accepted " + String.join(" ", args), IllegalArgumentException.class, () -> parse(args));
        }
    }

    @Test
    public void rendezvousTakesEveryExchangeAddress()
    {
        Assert.assertEquals(parse().rendezvous, "tcp://127.0.0.1:29600");
        Assert.assertEquals(parse("--rendezvous", "etcd://10.0.0.5:2379,10.0.0.6:2379/job7").rendezvous,
            "etcd://10.0.0.5:2379,10.0.0.6:2379/job7");
        Assert.assertEquals(parse("--rendezvous", "file:///shared/te4j").rendezvous, "file:///shared/te4j");
        final BenchConfig tcp = parse("--rendezvous", "tcp://10.0.0.1:29500", "--bind", "0.0.0.0", "--timeout", "30s");
        Assert.assertEquals(tcp.exchangeOptions(),
            java.util.Map.of("timeout", "30000ms", "connectTimeout", "30000ms", "bind", "0.0.0.0"));
        Assert.assertEquals(parse("--rendezvous", "file:///x", "--timeout", "5s").exchangeOptions(),
            java.util.Map.of("timeout", "5000ms"));
    }

    @Test
    public void badUsageExitsWithTwo()
    {
        Assert.assertEquals(BenchMain.run("--sizes", "7"), BenchMain.EXIT_USAGE);
        Assert.assertEquals(BenchMain.run("--no-such-option"), BenchMain.EXIT_USAGE);
        Assert.assertEquals(BenchMain.run("--help"), 0);
    }

    @Test
    public void rdmaSaysNotYetAvailable()
    {
        Assert.assertEquals(BenchMain.run("--transport", "rdma-hw"), BenchMain.EXIT_UNAVAILABLE);
    }

    @Test
    public void childArgsReproduceThePlan()
    {
        final BenchConfig c = parse("--platform", "host", "--mode", "all", "--sizes", "8,1M", "--rate-sizes", "4K",
            "--blocks", "16,32", "--warmup", "1", "--iterations", "3", "--timeout", "30s");
        final List<String> args = c.childArgs(Platform.HOST, 1, "127.0.0.1:1234", null);
        final BenchConfig child = parse(args.toArray(new String[0]));
        Assert.assertEquals(child.rank, 1);
        Assert.assertEquals(child.rendezvous, "tcp://127.0.0.1:1234");
        Assert.assertEquals(BenchPlan.of(child, Platform.HOST), BenchPlan.of(c, Platform.HOST));
        Assert.assertEquals(BenchPlan.of(child, Platform.CUDA), BenchPlan.of(c, Platform.CUDA));
        Assert.assertEquals(child.timeout, c.timeout);
    }

    @Test
    public void planPutsBaselinesBesideTe4j()
    {
        final BenchConfig c = parse("--mode", "all", "--sizes", "1M", "--blocks", "16,0");
        final List<BenchCase> cuda = BenchPlan.of(c, Platform.CUDA);
        Assert.assertEquals(cuda.get(0), new BenchCase(Series.TE4J_PUT, 1L << 20, 16, 512));
        Assert.assertEquals(cuda.get(1), new BenchCase(Series.TE4J_PUT, 1L << 20, 0, 512));
        Assert.assertEquals(cuda.get(2).series(), Series.COPY_ENGINE);
        Assert.assertEquals(cuda.get(3), new BenchCase(Series.SM_COPY, 1L << 20, 16, 512));
        Assert.assertTrue(cuda.stream().noneMatch(k -> k.series() == Series.SM_COPY && k.blocks() == 0));
        Assert.assertTrue(cuda.stream().anyMatch(k -> k.series() == Series.RAW_FLAG));
        final List<BenchCase> host = BenchPlan.of(c, Platform.HOST);
        Assert.assertTrue(host.stream().anyMatch(k -> k.series() == Series.MEMCPY));
        Assert.assertTrue(host.stream().noneMatch(k -> k.series() == Series.COPY_ENGINE || k.series() == Series.SM_COPY));
    }
}
