package io.github.te4j.exchange;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import io.github.te4j.UnavailableException;
import io.github.te4j.launcher.RankProcesses;
import io.github.te4j.rendezvous.FileExchange;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.testng.annotations.Test;

public class ExchangesTest
{
    private static List<String> gatherOver(final String uri, final int world) throws Exception
    {
        final ExecutorService pool = Executors.newFixedThreadPool(world);
        try
        {
            final List<Future<String>> fs = new ArrayList<>();
            for (int r = 0; r < world; r++)
            {
                final int rank = r;
                fs.add(pool.submit(() ->
                {
                    try (HandleExchange ex = Exchanges.open(uri, rank, world))
                    {
                        final StringBuilder sb = new StringBuilder(ex.getClass().getSimpleName());
                        for (final byte[] b : ex.allGather(("r" + rank).getBytes(StandardCharsets.UTF_8),
                            Duration.ofSeconds(20)))
                        {
                            sb.append(' ').append(new String(b, StandardCharsets.UTF_8));
                        }
                        ex.barrier(Duration.ofSeconds(20));
                        return sb.toString();
                    }
                }));
            }
            final List<String> out = new ArrayList<>();
            for (final Future<String> f : fs)
            {
                out.add(f.get(60, TimeUnit.SECONDS));
            }
            return out;
        }
        finally
        {
            pool.shutdownNow();
        }
    }

    @Test
    public void tcpOpensTheEmbeddedRendezvous() throws Exception
    {
        final int port = RankProcesses.freePort();
        final List<String> got = gatherOver("tcp://127.0.0.1:" + port + "?timeout=20s&session=t", 3);
        assertEquals(got, List.of("Rendezvous r0 r1 r2", "Rendezvous r0 r1 r2", "Rendezvous r0 r1 r2"));
    }

    @Test
    public void fileOpensTheFileExchange() throws Exception
    {
        final Path dir = Files.createTempDirectory("te4j-exchanges-");
        final List<String> got = gatherOver("file://" + dir + "?session=s1&poll=5ms", 2);
        assertEquals(got, List.of("FileExchange r0 r1", "FileExchange r0 r1"));
    }

    @Test
    public void etcdWithoutTheModuleSaysWhichArtifactToAdd()
    {
        final UnavailableException e = expectThrows(UnavailableException.class,
            () -> Exchanges.open("etcd://127.0.0.1:2379/job", 0, 2));
        assertTrue(e.getMessage().contains("add io.github.te4j:te4j-etcd"), e.getMessage());
        assertTrue(expectThrows(UnavailableException.class, () -> Exchanges.openDirectory("etcd://h:2379/job"))
            .getMessage().contains("te4j-etcd"));
    }

    @Test
    public void addressesAreParsedAndCheckedStrictly()
    {
        final ExchangeAddress a = ExchangeAddress.parse("etcd://h1:2379,[::1]:2380/train-42?ttl=5s&user=u");
        assertEquals(a.scheme(), "etcd");
        assertEquals(a.endpoints(), List.of("h1:2379", "[::1]:2380"));
        assertEquals(a.path(), "train-42");
        assertEquals(a.duration("ttl", null), Duration.ofSeconds(5));
        assertEquals(a.options().get("user"), "u");
        assertEquals(a.toString(), "etcd://h1:2379,[::1]:2380/train-42");
        assertEquals(ExchangeAddress.parse("file:///tmp/x").path(), "/tmp/x");
        for (final String bad : new String[] {"etcd://h1:2379", "etcd:///job", "etcd://h1/job", "tcp://h:99999",
            "tcp://h:1/x", "file://otherhost/x", "zmq://h:1", "tcp://h:1?a", "tcp://h:1?a=1&a=2", "nonsense"})
        {
            expectThrows(IllegalArgumentException.class, () -> ExchangeAddress.parse(bad));
        }
        final IllegalArgumentException e = expectThrows(IllegalArgumentException.class,
            () -> Exchanges.open("tcp://127.0.0.1:1?tiemout=3s", 0, 1));
        assertTrue(e.getMessage().contains("unknown tcp option(s) [tiemout]"), e.getMessage());
        assertTrue(expectThrows(IllegalArgumentException.class, () -> Exchanges.open("mem://x", 0, 1))
            .getMessage().contains("segment directory only"));
        assertTrue(expectThrows(IllegalArgumentException.class, () -> ExchangeAddress.parse("tcp://h:1?timeout=soon")
            .duration("timeout", null)).getMessage().contains("not a duration"));
    }

    @Test
    public void optionsGivenBesideTheUriOverrideIt() throws Exception
    {
        final Path dir = Files.createTempDirectory("te4j-exchanges-");
        try (HandleExchange ex = Exchanges.open("file://" + dir + "?timeout=1s", 0, 1, Map.of("timeout", "7s")))
        {
            assertTrue(ex instanceof FileExchange);
            assertEquals(ex.defaultTimeout(), Duration.ofSeconds(7));
        }
    }

    @Test
    public void theLaunchEnvironmentNamesTheRendezvous() throws Exception
    {
        final Path dir = Files.createTempDirectory("te4j-exchanges-");
        final LaunchEnvironment env = LaunchEnvironment.fromEnvironment(Map.of("TE4J_RANK", "0", "TE4J_WORLD_SIZE", "1",
            "TE4J_RENDEZVOUS", "file://" + dir));
        try (HandleExchange ex = Exchanges.open(env))
        {
            assertEquals(ex.rank(), 0);
            assertEquals(ex.allGather(new byte[] {42}).get(0)[0], 42);
        }
        final LaunchEnvironment none = LaunchEnvironment.fromEnvironment(Map.of("TE4J_RANK", "0", "TE4J_WORLD_SIZE", "1"));
        assertTrue(expectThrows(IllegalArgumentException.class, () -> Exchanges.open(none)).getMessage()
            .contains("TE4J_RENDEZVOUS"));
    }
}
