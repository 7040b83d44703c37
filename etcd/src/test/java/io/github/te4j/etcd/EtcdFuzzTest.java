package io.github.te4j.etcd;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.options.PutOption;
import io.github.te4j.Te4jException;
import io.github.te4j.exchange.Exchanges;
import io.github.te4j.exchange.HandleExchange;
import io.github.te4j.launcher.EtcdServer;
import io.github.te4j.rendezvous.RendezvousException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.testng.annotations.AfterClass;
import org.testng.annotations.BeforeClass;
import org.testng.annotations.Test;

/**
 * Seeded random hostile input to the etcd exchange: mutated and random records through its
 * decoders (no etcd), hostile values under a job's prefix of a real etcd (a rank's own entry
 * rewritten with its lease, junk under other keys of the job), and etcd killed at a random moment
 * of a collective. Each ends in a result that is right or a {@link RendezvousException} (a
 * {@link Te4jException}) by the collective's deadline plus a stated slack, never in anything else.
 *
 * <p>Rounds derive their seeds from {@code -Dte4j.fuzz.etcdSeed}, printed with the round in
 * every failure message; {@code -Dte4j.fuzz.etcdRounds} (4) bounds the rounds against etcd.
 */
public class EtcdFuzzTest
{
    /** What a collective may take past its deadline: one look at etcd begun before it (see EtcdHandleExchange). */
    private static final long SLACK_MS = 2_000;
    private static final long SEED = Long.getLong("te4j.fuzz.etcdSeed", 0x5eed_e7cdL);
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

    private static String where(final int round)
    {
        return "seed=" + SEED + " round=" + round + " (replay: -Dte4j.fuzz.etcdSeed=" + SEED + ")";
    }

    /** A few random edits of a valid record: flipped bytes, a cut, an extension, or all random. */
    static byte[] mutate(final byte[] valid, final Random rnd)
    {
        byte[] v = valid.clone();
        switch (rnd.nextInt(5))
        {
            case 0:
                v = Arrays.copyOf(v, rnd.nextInt(v.length + 1));
                break;
            case 1:
                v = Arrays.copyOf(v, v.length + 1 + rnd.nextInt(64));
                break;
            case 2:
                v = new byte[rnd.nextInt(80)];
                rnd.nextBytes(v);
                return v;
            default:
                break;
        }
        final int flips = v.length == 0 ? 0 : 1 + rnd.nextInt(3);
        for (int i = 0; i < flips; i++)
        {
            // Mostly the header, where the checks are.
            final int at = rnd.nextInt(4) > 0 ? rnd.nextInt(Math.min(v.length, 40)) : rnd.nextInt(v.length);
            v[at] = rnd.nextInt(3) == 0 ? (byte) rnd.nextInt() : (byte) (v[at] ^ (1 << rnd.nextInt(8)));
        }
        return v;
    }

    /** Decoders: a mutated record is refused with "refused: ..." or decodes to exactly what it encodes. */
    @Test(timeOut = 60_000)
    public void recordDecodersRefuseOrDecodeExactly()
    {
        final long start = System.nanoTime();
        int accepted = 0;
        int refused = 0;
        int round = 0;
        for (; round < 200_000 && System.nanoTime() - start < 2_000_000_000L; round++)
        {
            final Random rnd = new Random(SEED * 1_000_003L + round);
            final String w = where(round);
            final int rank = rnd.nextInt(8);
            final int seq = 1 + rnd.nextInt(100);
            final int world = 1 + rnd.nextInt(16);
            final long generation = rnd.nextInt(3);
            final byte[] blob = new byte[rnd.nextInt(64)];
            rnd.nextBytes(blob);
            final byte kind = rnd.nextBoolean() ? EtcdRecords.GATHER : EtcdRecords.BARRIER;
            try
            {
                switch (rnd.nextInt(3))
                {
                    case 0:
                    {
                        final byte[] v = mutate(EtcdRecords.entry(kind, rank, seq, world, generation, blob), rnd);
                        final byte[] got = EtcdRecords.entry(v, kind, rank, seq, world, generation, 48, "k");
                        assertTrue(Arrays.equals(EtcdRecords.entry(kind, rank, seq, world, generation, got), v),
                            w + ": an entry decoded to something else than it encodes");
                        assertTrue(got.length <= 48, w + ": over the blob limit");
                        break;
                    }
                    case 1:
                    {
                        final String host = "host-" + rnd.nextInt(1000);
                        final byte[] v = mutate(EtcdRecords.member(new EtcdRecords.Member(EtcdRecords.LIVE, rank, world,
                            generation, 1 + rnd.nextInt(1 << 20), host)), rnd);
                        final EtcdRecords.Member m = EtcdRecords.member(v, rank, "k");
                        final ByteBuffer b = ByteBuffer.wrap(v);
                        b.position(8);
                        assertEquals(m.rank(), rank, w);
                        assertTrue(m.state() == EtcdRecords.LIVE || m.state() == EtcdRecords.CLOSED, w);
                        assertEquals(b.getInt(), rank, w);
                        assertEquals(m.worldSize(), b.getInt(), w);
                        assertEquals(m.generation(), b.getLong(), w);
                        assertEquals(m.pid(), b.getLong(), w);
                        assertEquals(b.getShort(), v.length - 34, w + ": host length");
                        break;
                    }
                    default:
                    {
                        final byte[] v = mutate(EtcdRecords.segment(blob), rnd);
                        final byte[] got = EtcdRecords.segment(v, 48, "k");
                        assertTrue(Arrays.equals(EtcdRecords.segment(got), v), w + ": a segment decoded to something else");
                        break;
                    }
                }
                accepted++;
            }
            catch (final RendezvousException e)
            {
                assertTrue(e.getMessage().contains("refused"), w + ": " + e.getMessage());
                refused++;
            }
            catch (final RuntimeException e)
            {
                throw new AssertionError(w + ": a decoder threw " + e + " instead of refusing", e);
            }
        }
        System.out.println("EtcdFuzzTest decoders: seed=" + SEED + " records=" + round + " decoded=" + accepted
            + " refused=" + refused);
        assertTrue(refused > 0 && accepted > 0, "seed=" + SEED + ": the mutations are all of one kind");
    }

    private HandleExchange join(final String job, final int rank)
    {
        return Exchanges.open(etcd.uri(job, "ttl=3s"), rank, 2);
    }

    private static byte[] blob(final int rank, final int round)
    {
        return ("fuzz rank " + rank + " round " + round).getBytes(StandardCharsets.UTF_8);
    }

    /** Rank 0 and rank 1 gather; a stranger writes a hostile value under the job's prefix meanwhile. */
    @Test(timeOut = 300_000)
    public void hostileValuesUnderTheJobPrefix() throws Exception
    {
        final int rounds = Integer.getInteger("te4j.fuzz.etcdRounds", 4);
        final ExecutorService pool = Executors.newFixedThreadPool(2);
        int refusedRounds = 0;
        try
        {
            for (int round = 0; round < rounds; round++)
            {
                final String w = where(round);
                final Random rnd = new Random(SEED * 7_919L + round);
                final String job = "fuzz-hostile-" + SEED + "-" + round;
                final long deadlineMs = 3_000;
                final int n = round;
                final Future<Object> r1 = pool.submit(() -> gather(job, 1, n, deadlineMs));
                final String prefix = EtcdSettings.ROOT + job + "/";
                final boolean rewriteOwnEntry = rnd.nextBoolean();
                byte[] hostile = null;
                if (rewriteOwnEntry)
                {
                    // Rank 1's entry of collective #1, rewritten with rank 1's own lease (etcd does not
                    // authenticate leases): a mutation of the real value.
                    final ByteSequence key = ByteSequence.from(prefix + "op/0000000001/1", StandardCharsets.UTF_8);
                    KeyValue kv = null;
                    for (int i = 0; i < 200 && kv == null; i++)
                    {
                        final List<KeyValue> kvs = raw.getKVClient().get(key).get(10, TimeUnit.SECONDS).getKvs();
                        kv = kvs.isEmpty() ? null : kvs.get(0);
                        Thread.sleep(10);
                    }
                    assertTrue(kv != null, w + ": rank 1 did not publish");
                    hostile = mutate(kv.getValue().getBytes(), rnd);
                    raw.getKVClient().put(key, ByteSequence.from(hostile), PutOption.builder().withLeaseId(kv.getLease())
                        .build()).get(10, TimeUnit.SECONDS);
                }
                else
                {
                    // Junk under another key of the job: a rank past the world, an operation far ahead,
                    // a membership of a rank that is not there, a key te4j never writes.
                    final String[] keys = {"op/0000000001/" + (2 + rnd.nextInt(100)), "op/" + String.format("%010d",
                        2 + rnd.nextInt(1000)) + "/0", "ranks/" + (2 + rnd.nextInt(10)), "op/x", "zz" + rnd.nextInt(100),
                        "ranks/1/extra"};
                    final byte[] junk = new byte[rnd.nextInt(64)];
                    rnd.nextBytes(junk);
                    raw.getKVClient().put(ByteSequence.from(prefix + keys[rnd.nextInt(keys.length)], StandardCharsets.UTF_8),
                        ByteSequence.from(junk)).get(10, TimeUnit.SECONDS);
                }
                final Object r0 = gather(job, 0, round, deadlineMs);
                final Object o1 = r1.get(60, TimeUnit.SECONDS);
                for (final Object o : new Object[] {r0, o1})
                {
                    if (o instanceof Te4jException)
                    {
                        refusedRounds++;
                        continue;
                    }
                    assertTrue(o instanceof List, w + ": the gather ended in " + o);
                    @SuppressWarnings("unchecked") final List<byte[]> all = (List<byte[]>) o;
                    assertEquals(all.get(0), blob(0, round), w);
                    // Rank 1's blob is its own or, when the stranger rewrote only its bytes, the stranger's.
                    final boolean own = Arrays.equals(all.get(1), blob(1, round));
                    final boolean strangers = hostile != null && hostile.length >= EtcdRecords.ENTRY_HEADER
                        && Arrays.equals(all.get(1), Arrays.copyOfRange(hostile, EtcdRecords.ENTRY_HEADER, hostile.length));
                    assertTrue(own || strangers, w + ": rank 1's blob is neither its own nor the stranger's");
                }
                raw.getKVClient().delete(ByteSequence.from(prefix, StandardCharsets.UTF_8),
                    io.etcd.jetcd.options.DeleteOption.builder().isPrefix(true).build()).get(10, TimeUnit.SECONDS);
            }
        }
        finally
        {
            pool.shutdownNow();
        }
        System.out.println("EtcdFuzzTest hostile values: seed=" + SEED + " rounds=" + rounds + " refused gathers="
            + refusedRounds);
    }

    /** One allGather of a fresh rank: its result, or the exception it threw by its deadline (+ slack). */
    private Object gather(final String job, final int rank, final int round, final long deadlineMs)
    {
        try (HandleExchange ex = join(job, rank))
        {
            final long t0 = System.nanoTime();
            try
            {
                return ex.allGather(blob(rank, round), Duration.ofMillis(deadlineMs));
            }
            catch (final Te4jException e)
            {
                // RendezvousException (a refused value, the deadline), or PeerLostException when the
                // other rank, refused first, closed its exchange.
                final long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
                assertTrue(ms <= deadlineMs + SLACK_MS, where(round) + ": rank " + rank + " failed after " + ms
                    + " ms, deadline " + deadlineMs + " ms: " + e);
                return e;
            }
        }
        catch (final Te4jException e)
        {
            return e;  // joining refused (a hostile membership record, say)
        }
    }

    /** etcd killed at a random moment of a two-rank gather: both ranks end by the deadline + slack. */
    @Test(timeOut = 300_000, dependsOnMethods = "hostileValuesUnderTheJobPrefix")
    public void etcdKilledMidExchange() throws Exception
    {
        final int rounds = Math.max(1, Integer.getInteger("te4j.fuzz.etcdRounds", 4) / 2);
        final ExecutorService pool = Executors.newFixedThreadPool(2);
        int failed = 0;
        try
        {
            for (int round = 0; round < rounds; round++)
            {
                final String w = where(round);
                final Random rnd = new Random(SEED * 104_729L + round);
                final String job = "fuzz-kill-" + SEED + "-" + round;
                final long deadlineMs = 1_000 + rnd.nextInt(1_000);
                final HandleExchange[] ex = {join(job, 0), join(job, 1)};
                final int n = round;
                try
                {
                    final long t0 = System.nanoTime();
                    final int killAt = rnd.nextInt(300);
                    // Round 0 (and half of the others): rank 1 calls only after the kill, so rank 0 is
                    // waiting inside the collective when etcd dies; else rank 1 starts up to 200 ms late.
                    final int late = round == 0 || rnd.nextBoolean() ? killAt + 100 : rnd.nextInt(200);
                    final List<Future<Object>> fs = List.of(0, 1).stream().map(r -> pool.submit(() ->
                    {
                        Thread.sleep(r * late);
                        try
                        {
                            return (Object) ex[r].allGather(blob(r, n), Duration.ofMillis(deadlineMs));
                        }
                        catch (final Te4jException e)
                        {
                            return e;
                        }
                    })).toList();
                    Thread.sleep(killAt);
                    etcd.kill();
                    for (final Future<Object> f : fs)
                    {
                        final Object o = f.get(60, TimeUnit.SECONDS);
                        final long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
                        if (o instanceof Te4jException)
                        {
                            failed++;
                            assertTrue(!(o instanceof RendezvousException) || ((Te4jException) o).getMessage().contains("etcd"),
                                w + ": " + o);
                            // Rank 1 started up to `late` ms after t0; the deadline runs from its call.
                            assertTrue(ms <= deadlineMs + late + SLACK_MS, w + ": ended " + ms + " ms after the start, deadline "
                                + deadlineMs + " ms");
                        }
                        else
                        {
                            assertTrue(o instanceof List, w + ": " + o);
                        }
                    }
                }
                finally
                {
                    etcd.restart();
                    for (final HandleExchange e : ex)
                    {
                        e.close();
                    }
                }
            }
        }
        finally
        {
            pool.shutdownNow();
        }
        System.out.println("EtcdFuzzTest etcd killed: seed=" + SEED + " rounds=" + rounds + " gathers failed clearly=" + failed);
    }
}
