package io.github.te4j.etcd;

import io.github.te4j.launcher.EtcdServer;
import io.github.te4j.Te4jException;
import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;
import static org.testng.Assert.fail;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.PutOption;
import io.github.te4j.exchange.Exchanges;
import io.github.te4j.exchange.HandleExchange;
import io.github.te4j.rendezvous.RendezvousException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;
import org.testng.annotations.AfterClass;
import org.testng.annotations.BeforeClass;
import org.testng.annotations.Test;

/** The etcd exchange against a real etcd, ranks as threads of this JVM (each with its own client and lease). */
public class EtcdExchangeTest
{
    private static final Duration T = Duration.ofSeconds(30);
    private EtcdServer etcd;
    private Client raw;

    @BeforeClass(alwaysRun = true)
    public void startEtcd() throws Exception
    {
        etcd = EtcdServer.start();
        raw = Client.builder().endpoints("http://" + etcd.endpoint()).build();
    }

    @AfterClass(alwaysRun = true)
    public void stopEtcd()
    {
        if (raw != null)
        {
            raw.close();
        }
        if (etcd != null)
        {
            etcd.close();
        }
    }

    private HandleExchange join(final String job, final int rank, final int world, final String options)
    {
        final String all = options.contains("ttl=") ? options : options.isEmpty() ? "ttl=3s" : "ttl=3s&" + options;
        return Exchanges.open(etcd.uri(job, all), rank, world);
    }

    static <T> List<T> ranks(final int n, final IntFunction<Callable<T>> body) throws Exception
    {
        final ExecutorService pool = Executors.newFixedThreadPool(n);
        try
        {
            final List<Future<T>> fs = new ArrayList<>();
            for (int r = 0; r < n; r++)
            {
                fs.add(pool.submit(body.apply(r)));
            }
            final List<T> out = new ArrayList<>();
            for (final Future<T> f : fs)
            {
                out.add(f.get(120, TimeUnit.SECONDS));
            }
            return out;
        }
        finally
        {
            pool.shutdownNow();
        }
    }

    private static byte[] blob(final int rank, final int round)
    {
        return ("rank " + rank + " round " + round + " " + "x".repeat(rank * 100)).getBytes(StandardCharsets.UTF_8);
    }

    private int keysUnder(final String prefix) throws Exception
    {
        return raw.getKVClient().get(ByteSequence.from(prefix, StandardCharsets.UTF_8),
            GetOption.builder().isPrefix(true).withCountOnly(true).build()).get(10, TimeUnit.SECONDS).getKvs().size()
            + (int) raw.getKVClient().get(ByteSequence.from(prefix, StandardCharsets.UTF_8),
            GetOption.builder().isPrefix(true).withCountOnly(true).build()).get(10, TimeUnit.SECONDS).getCount();
    }

    @Test
    public void allGatherBroadcastBarrierAmongTwoFourAndEightRanks() throws Exception
    {
        for (final int world : new int[] {2, 4, 8})
        {
            final String job = "collectives-" + world;
            final List<Boolean> ok = ranks(world, r -> () ->
            {
                try (HandleExchange ex = join(job, r, world, ""))
                {
                    for (int round = 0; round < 5; round++)
                    {
                        final List<byte[]> all = ex.allGather(blob(r, round), T);
                        assertEquals(all.size(), world);
                        for (int q = 0; q < world; q++)
                        {
                            assertEquals(all.get(q), blob(q, round), "rank " + r + " got rank " + q + "'s blob");
                        }
                        ex.barrier(T);
                        final byte[] root = ex.broadcast(round % world, r == round % world ? blob(r, 99) : null, T);
                        assertEquals(root, blob(round % world, 99));
                    }
                    return true;
                }
            });
            assertEquals(ok.size(), world);
            // a clean close of every rank revokes the leases: the job leaves no keys behind
            assertEquals(keysUnder(EtcdSettings.ROOT + job + "/"), 0, "keys left under job " + job);
        }
    }

    @Test
    public void worldSizeDisagreementIsRefusedSayingSo() throws Exception
    {
        try (HandleExchange a = join("mismatch-world", 0, 2, "connectTimeout=5s"))
        {
            final RendezvousException e = expectThrows(RendezvousException.class,
                () -> join("mismatch-world", 1, 3, "connectTimeout=5s"));
            assertTrue(e.getMessage().contains("world size disagrees"), e.getMessage());
        }
    }

    @Test
    public void generationDisagreementIsRefusedSayingSo() throws Exception
    {
        try (HandleExchange a = join("mismatch-gen", 0, 2, "generation=1"))
        {
            final RendezvousException e = expectThrows(RendezvousException.class,
                () -> join("mismatch-gen", 1, 2, "generation=2&connectTimeout=5s"));
            assertTrue(e.getMessage().contains("generation disagrees"), e.getMessage());
        }
    }

    @Test
    public void aRankClaimedTwiceIsRefusedAfterTheConnectTimeout() throws Exception
    {
        try (HandleExchange a = join("twice", 1, 2, ""))
        {
            final long t0 = System.nanoTime();
            final RendezvousException e = expectThrows(RendezvousException.class,
                () -> join("twice", 1, 2, "connectTimeout=2s"));
            assertTrue(e.getMessage().contains("rank 1 is taken by pid"), e.getMessage());
            assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(10));
        }
    }

    @Test
    public void unreachableEtcdFailsClearlyWithinTheDeadline()
    {
        final int port = EtcdServer.freePort();
        final long t0 = System.nanoTime();
        final RendezvousException e = expectThrows(RendezvousException.class,
            () -> Exchanges.open("etcd://127.0.0.1:" + port + "/nobody?connectTimeout=3s", 0, 2));
        final long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assertTrue(e.getMessage().contains("127.0.0.1:" + port) && e.getMessage().contains("reachable"), e.getMessage());
        assertTrue(ms < 3000 + 2000, "failed after " + ms + " ms, deadline 3000 ms");
        System.out.println("unreachable etcd: failed after " + ms + " ms: " + e.getMessage());
    }

    @Test
    public void twoJobsOnOneEtcdDoNotSeeEachOther() throws Exception
    {
        final List<String> seen = ranks(4, i -> () ->
        {
            final String job = i < 2 ? "job-a" : "job-b";
            final int r = i % 2;
            try (HandleExchange ex = join(job, r, 2, ""))
            {
                final List<byte[]> all = ex.allGather((job + "/" + r).getBytes(StandardCharsets.UTF_8), T);
                return new String(all.get(0), StandardCharsets.UTF_8) + "," + new String(all.get(1), StandardCharsets.UTF_8);
            }
        });
        assertEquals(seen, List.of("job-a/0,job-a/1", "job-a/0,job-a/1", "job-b/0,job-b/1", "job-b/0,job-b/1"));
    }

    @Test
    public void aJobLeavesOtherKeysUnderTheRootAlone() throws Exception
    {
        final ByteSequence other = ByteSequence.from(EtcdSettings.ROOT + "job-c-other/ranks/0", StandardCharsets.UTF_8);
        final ByteSequence sibling = ByteSequence.from(EtcdSettings.ROOT + "job-c/../x", StandardCharsets.UTF_8);
        raw.getKVClient().put(other, ByteSequence.from("not ours", StandardCharsets.UTF_8)).get(10, TimeUnit.SECONDS);
        raw.getKVClient().put(sibling, ByteSequence.from("not ours", StandardCharsets.UTF_8)).get(10, TimeUnit.SECONDS);
        ranks(2, r -> () ->
        {
            try (HandleExchange ex = join("job-c", r, 2, ""))
            {
                ex.allGather(blob(r, 0), T);
                return null;
            }
        });
        assertEquals(raw.getKVClient().get(other).get(10, TimeUnit.SECONDS).getKvs().get(0).getValue()
            .toString(StandardCharsets.UTF_8), "not ours");
        assertEquals(raw.getKVClient().get(sibling).get(10, TimeUnit.SECONDS).getKvs().size(), 1);
    }

    /** A value put under rank 1's key with rank 1's own lease (etcd does not authenticate leases). */
    private void hostile(final String job, final byte[] value, final String options) throws Exception
    {
        final ExecutorService pool = Executors.newFixedThreadPool(2);
        try
        {
            final Future<Object> r1 = pool.submit(() ->
            {
                try (HandleExchange ex = join(job, 1, 2, options))
                {
                    return ex.allGather(blob(1, 0), Duration.ofSeconds(20));
                }
                catch (final Te4jException e)
                {
                    return e;
                }
            });
            final ByteSequence key = ByteSequence.from(EtcdSettings.ROOT + job + "/op/0000000001/1", StandardCharsets.UTF_8);
            KeyValue kv = null;
            for (int i = 0; i < 200 && kv == null; i++)
            {
                final List<KeyValue> kvs = raw.getKVClient().get(key).get(10, TimeUnit.SECONDS).getKvs();
                kv = kvs.isEmpty() ? null : kvs.get(0);
                Thread.sleep(50);
            }
            assertTrue(kv != null, "rank 1 did not publish");
            raw.getKVClient().put(key, ByteSequence.from(value), PutOption.builder().withLeaseId(kv.getLease()).build())
                .get(10, TimeUnit.SECONDS);
            try (HandleExchange ex = join(job, 0, 2, options))
            {
                final RendezvousException e = expectThrows(RendezvousException.class,
                    () -> ex.allGather(blob(0, 0), Duration.ofSeconds(10)));
                assertTrue(e.getMessage().contains("refused"), e.getMessage());
                System.out.println("hostile value refused: " + e.getMessage());
            }
            // rank 1 reads the same value and refuses it too
            final Object o = r1.get(60, TimeUnit.SECONDS);
            assertTrue(o instanceof RendezvousException, "rank 1 returned " + o);
        }
        finally
        {
            pool.shutdownNow();
        }
    }

    private static byte[] entry(final short version, final int length, final int payload)
    {
        final ByteBuffer b = ByteBuffer.allocate(EtcdRecords.ENTRY_HEADER + payload);
        b.putInt(EtcdRecords.ENTRY_MAGIC).putShort(version).put(EtcdRecords.GATHER).put((byte) 0);
        b.putInt(1).putInt(1).putInt(2).putLong(0).putInt(length);
        return b.array();
    }

    @Test
    public void aValueOfAnotherVersionIsRefused() throws Exception
    {
        hostile("hostile-version", entry((short) 2, 4, 4), "");
    }

    @Test
    public void anOversizedValueIsRefused() throws Exception
    {
        hostile("hostile-size", entry(EtcdRecords.VERSION, 4096, 4096), "maxBlobBytes=1024");
    }

    @Test
    public void garbageIsRefused() throws Exception
    {
        hostile("hostile-garbage", "{\"not\": \"a te4j record\"}".getBytes(StandardCharsets.UTF_8), "");
    }

    @Test
    public void aValueWithoutTheRanksLeaseIsRefused() throws Exception
    {
        // Before rank 0 joins, a client without any lease takes rank 0's entry key of allGather #1.
        final ByteSequence key = ByteSequence.from(EtcdSettings.ROOT + "hostile-lease/op/0000000001/0",
            StandardCharsets.UTF_8);
        raw.getKVClient().put(key, ByteSequence.from(entry(EtcdRecords.VERSION, 0, 0))).get(10, TimeUnit.SECONDS);
        final List<String> msgs = ranks(2, r -> () ->
        {
            try (HandleExchange ex = join("hostile-lease", r, 2, ""))
            {
                ex.allGather(blob(r, 0), Duration.ofSeconds(10));
                return "completed";
            }
            catch (final Te4jException e)
            {
                return e.getMessage();
            }
        });
        for (final String m : msgs)
        {
            assertTrue(m.contains("refused"), m);
        }
        raw.getKVClient().delete(key).get(10, TimeUnit.SECONDS);
    }

    @Test
    public void anExchangeRidesOutAnEtcdRestartWithinItsDeadline() throws Exception
    {
        final ExecutorService pool = Executors.newFixedThreadPool(3);
        try
        {
            final List<HandleExchange> ex = new ArrayList<>();
            for (int r = 0; r < 3; r++)
            {
                ex.add(join("restart", r, 3, "ttl=5s"));
            }
            final List<Future<List<byte[]>>> early = new ArrayList<>();
            for (int r = 0; r < 2; r++)
            {
                final int rank = r;
                early.add(pool.submit(() -> ex.get(rank).allGather(blob(rank, 0), T)));
            }
            Thread.sleep(300);
            etcd.kill();
            Thread.sleep(1500);
            etcd.restart();
            final long t0 = System.nanoTime();
            final List<byte[]> late = ex.get(2).allGather(blob(2, 0), T);
            for (final Future<List<byte[]>> f : early)
            {
                final List<byte[]> got = f.get(60, TimeUnit.SECONDS);
                for (int q = 0; q < 3; q++)
                {
                    assertEquals(got.get(q), blob(q, 0));
                }
            }
            assertEquals(late.get(0), blob(0, 0));
            System.out.println("etcd restart: the exchange completed " + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0)
                + " ms after etcd came back");
            // and the leases survived: the next collective works
            final List<Future<Object>> next = new ArrayList<>();
            for (int r = 0; r < 3; r++)
            {
                final int rank = r;
                next.add(pool.submit(() ->
                {
                    ex.get(rank).barrier(T);
                    return null;
                }));
            }
            for (final Future<Object> f : next)
            {
                f.get(60, TimeUnit.SECONDS);
            }
            ex.forEach(HandleExchange::close);
        }
        finally
        {
            pool.shutdownNow();
        }
    }

    @Test(dependsOnMethods = "anExchangeRidesOutAnEtcdRestartWithinItsDeadline")
    public void anExchangeWhoseEtcdStaysDownFailsClearlyAtItsDeadline() throws Exception
    {
        final HandleExchange a = join("down", 0, 2, "");
        final HandleExchange b = join("down", 1, 2, "");
        try
        {
            etcd.kill();
            final long t0 = System.nanoTime();
            final RendezvousException e = expectThrows(RendezvousException.class,
                () -> a.allGather(blob(0, 0), Duration.ofSeconds(3)));
            final long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            assertTrue(e.getMessage().contains("etcd"), e.getMessage());
            assertTrue(ms < 3000 + 2000, "failed after " + ms + " ms");
            System.out.println("etcd down: failed after " + ms + " ms: " + e.getMessage());
        }
        finally
        {
            etcd.restart();
            a.close();
            b.close();
        }
    }

    /** Prints the time of one allGather among 8 ranks (threads) over etcd and over the embedded rendezvous. */
    @Test
    public void eightRankAllGatherTimeBesideTheEmbeddedRendezvous() throws Exception
    {
        final int rounds = 30;
        for (final String uri : new String[] {etcd.uri("timing-8", "ttl=10s"),
            "tcp://127.0.0.1:" + EtcdServer.freePort()})
        {
            final List<Long> micros = ranks(8, r -> () ->
            {
                try (HandleExchange ex = Exchanges.open(uri, r, 8))
                {
                    ex.barrier(T);
                    ex.allGather(blob(r, 0), T);
                    final long t0 = System.nanoTime();
                    for (int i = 0; i < rounds; i++)
                    {
                        ex.allGather(new byte[256], T);
                    }
                    final long us = (System.nanoTime() - t0) / 1000 / rounds;
                    ex.barrier(T);
                    return us;
                }
            });
            System.out.println("8-rank allGather of 256 B via " + uri.substring(0, uri.indexOf(':')) + ": "
                + micros.stream().mapToLong(Long::longValue).max().orElse(0) + " us (slowest rank, mean of " + rounds + ")");
        }
    }

    static void check(final boolean ok, final String what)
    {
        if (!ok)
        {
            fail(what);
        }
    }

    static Throwable root(final Throwable t)
    {
        return t instanceof ExecutionException && t.getCause() != null ? t.getCause() : t;
    }
}
