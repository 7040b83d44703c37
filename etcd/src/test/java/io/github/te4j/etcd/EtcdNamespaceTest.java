package io.github.te4j.etcd;

import io.github.te4j.launcher.EtcdServer;
import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.testng.SkipException;
import org.testng.annotations.Test;

/**
 * Two "hosts" and an etcd host as three network namespaces: etcd runs in the third, joined to
 * each of the others by its own veth pair, so each host's ranks reach etcd at a different address
 * and the two hosts have no route to each other; the ranks meet only through etcd. Skips, saying
 * why, where namespaces cannot be made (not root, no iproute2) or there is no etcd binary.
 */
public class EtcdNamespaceTest
{
    private static String run(final List<String> cmd)
    {
        try
        {
            final Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            final String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0)
            {
                return String.join(" ", cmd) + ": " + out.trim();
            }
            return null;
        }
        catch (final IOException e)
        {
            return String.join(" ", cmd) + ": " + e.getMessage();
        }
        catch (final InterruptedException e)
        {
            Thread.currentThread().interrupt();
            return "interrupted";
        }
    }

    @Test
    public void ranksInTwoNamespacesMeetThroughEtcdInAThird() throws Exception
    {
        final Path etcdBin = EtcdServer.requireBinary();
        final int id = ThreadLocalRandom.current().nextInt(1, 250);
        final String tag = (ProcessHandle.current().pid() % 100000) + "e" + id;
        final String[] ns = {"te4j-" + tag + "-etcd", "te4j-" + tag + "-ha", "te4j-" + tag + "-hb"};
        final String[] etcdSide = {"t4" + tag + "ea", "t4" + tag + "eb"};
        final String[] hostSide = {"t4" + tag + "ha", "t4" + tag + "hb"};
        final String[] net = {"10.214." + id, "10.215." + id};
        final List<List<String>> steps = new ArrayList<>();
        for (final String n : ns)
        {
            steps.add(List.of("ip", "netns", "add", n));
            steps.add(List.of("ip", "-n", n, "link", "set", "lo", "up"));
        }
        for (int i = 0; i < 2; i++)
        {
            steps.add(List.of("ip", "link", "add", etcdSide[i], "type", "veth", "peer", "name", hostSide[i]));
            steps.add(List.of("ip", "link", "set", etcdSide[i], "netns", ns[0]));
            steps.add(List.of("ip", "link", "set", hostSide[i], "netns", ns[1 + i]));
            steps.add(List.of("ip", "-n", ns[0], "addr", "add", net[i] + ".1/24", "dev", etcdSide[i]));
            steps.add(List.of("ip", "-n", ns[1 + i], "addr", "add", net[i] + ".2/24", "dev", hostSide[i]));
            steps.add(List.of("ip", "-n", ns[0], "link", "set", etcdSide[i], "up"));
            steps.add(List.of("ip", "-n", ns[1 + i], "link", "set", hostSide[i], "up"));
        }
        final Path dir = Files.createTempDirectory("te4j-etcd-netns-");
        Process etcd = null;
        try
        {
            for (final List<String> step : steps)
            {
                final String failure = run(step);
                if (failure != null)
                {
                    throw new SkipException("cannot make network namespaces here (needs root / CAP_NET_ADMIN and "
                        + "iproute2): " + failure);
                }
            }
            final String clients = "http://" + net[0] + ".1:2379,http://" + net[1] + ".1:2379";
            etcd = new ProcessBuilder(List.of("ip", "netns", "exec", ns[0], etcdBin.toString(), "--name", "ns",
                "--data-dir", dir.resolve("data").toString(), "--listen-client-urls", clients,
                "--advertise-client-urls", clients, "--listen-peer-urls", "http://127.0.0.1:2380",
                "--initial-advertise-peer-urls", "http://127.0.0.1:2380", "--initial-cluster", "ns=http://127.0.0.1:2380",
                "--log-level", "warn", "--logger", "zap"))
                .redirectErrorStream(true).redirectOutput(dir.resolve("etcd.log").toFile()).start();
            final int world = 4;
            try (EtcdMultiProcessTest.Ranks ranks = new EtcdMultiProcessTest.Ranks())
            {
                for (int r = 0; r < world; r++)
                {
                    final int host = r % 2;
                    // each host reaches etcd at its own address; the job is the same
                    ranks.startOne(List.of("ip", "netns", "exec", ns[1 + host]), "etcd://" + net[host] + ".1:2379/netns"
                        + "?ttl=10s&connectTimeout=300s", r, world, "done");
                }
                for (int r = 0; r < world; r++)
                {
                    assertEquals(ranks.exit(r, 400), 0, "rank " + r + " (host " + (r % 2) + "):\n" + ranks.output(r));
                    assertTrue(ranks.output(r).contains("OK put+signal"), ranks.output(r));
                }
                System.out.println("namespaces: 4 ranks on two hosts met through etcd; " + ranks.output(0).lines()
                    .filter(l -> l.startsWith("TIME")).findFirst().orElse(""));
            }
        }
        finally
        {
            if (etcd != null)
            {
                etcd.destroyForcibly();
                etcd.waitFor(10, TimeUnit.SECONDS);
            }
            for (final String n : ns)
            {
                run(List.of("ip", "netns", "del", n));
            }
            try (Stream<Path> files = Files.walk(dir))
            {
                files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }
}
