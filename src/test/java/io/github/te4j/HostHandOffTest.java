package io.github.te4j;

import io.github.te4j.check.Patterns;
import io.github.te4j.launcher.RankProcesses;
import java.time.Duration;
import java.util.List;
import org.testng.Assert;
import org.testng.annotations.Test;

/**
 * The host platform's hand-off between callers and the executor (a ring the executor polls,
 * then parks on a futex) and its waits (spin, then a futex on the signal word that a writer of
 * any process wakes): order under many queued ops, wakes across engines and processes, progress
 * with more ranks than cores. No test here asserts a timing; each asserts what must hold however
 * the threads are scheduled.
 */
public class HostHandOffTest
{
    private static final Duration T = Duration.ofSeconds(60);
    /** More ops than the executor's ring has slots, so the overflow list is used too. */
    private static final int CHAIN = 5000;

    /**
     * A chain of own-rank puts, each copying the previous op's 8 bytes one place on: the last
     * word holds the first one's value only if every put ran after the one before it. Signals
     * and waits on the same stream between them must see each other in order too.
     */
    @Test(timeOut = 120_000)
    public void manyQueuedOpsRunInOrder()
    {
        final long sig = 8L * (CHAIN + 1);
        try (HostInProcessTest.Pair p = new HostInProcessTest.Pair(Platform.HOST, sig + 64))
        {
            final DeviceBuffer w = p.windows[1];
            final OpStream s = p.streams[1];
            final CommContext ctx = p.ctx[1];
            w.fill(0, sig + 64, (byte)0);
            final byte[] first = word(7);
            w.write(0, first);
            int signals = 0;
            for (int k = 1; k <= CHAIN; k++)
            {
                s.put(ctx, 1, 8L * k, w, 8L * (k - 1), 8);
                if (k % 100 == 0)
                {
                    s.signal(ctx, 1, sig, 1);
                    signals++;
                    s.waitSignal(ctx, sig, signals, T);
                }
            }
            s.synchronize(T);
            Assert.assertEquals(w.read(8L * CHAIN, 8), first, "the chain broke: an op ran before the one enqueued before it");
            Assert.assertEquals(P2pWorker.readInt(w, sig), signals);
        }
    }

    /**
     * The executor is held by a wait while thousands of ops queue behind it (ring and overflow);
     * once another engine's stream raises the word, all of them run, in order.
     */
    @Test(timeOut = 120_000)
    public void opsQueuedBehindAParkedWaitRunInOrderOnceItIsReleased() throws Exception
    {
        final long gate = 8L * (CHAIN + 1);
        final long sig = gate + 64;
        try (HostInProcessTest.Pair p = new HostInProcessTest.Pair(Platform.HOST, sig + 64))
        {
            final DeviceBuffer w = p.windows[1];
            final OpStream s = p.streams[1];
            final CommContext ctx = p.ctx[1];
            w.fill(0, sig + 64, (byte)0);
            final byte[] first = word(11);
            w.write(0, first);
            s.waitSignal(ctx, gate, 1, T);
            for (int k = 1; k <= CHAIN; k++)
            {
                s.put(ctx, 1, 8L * k, w, 8L * (k - 1), 8);
            }
            s.signal(ctx, 1, sig, 1);
            // Long enough for the wait to be past its spin and parked in the kernel.
            Thread.sleep(200);
            Assert.assertEquals(P2pWorker.readInt(w, sig), 0, "an op ran before the wait it was queued behind");
            p.streams[0].signal(p.ctx[0], 1, gate, 1);
            p.streams[0].synchronize(T);
            s.synchronize(T);
            Assert.assertEquals(w.read(8L * CHAIN, 8), first);
            Assert.assertEquals(P2pWorker.readInt(w, sig), 1);
        }
    }

    /**
     * Waits parked on a word are woken by a put+signal from another engine (its own mapping of
     * the same segment), round after round, with the data visible once the signal is.
     */
    @Test(timeOut = 120_000)
    public void parkedWaitIsWokenByAnotherEnginesSignal() throws Exception
    {
        final int bytes = 4096;
        final long sig = 2L * bytes;
        try (HostInProcessTest.Pair p = new HostInProcessTest.Pair(Platform.HOST, sig + 64))
        {
            for (int round = 1; round <= 5; round++)
            {
                Patterns.write(p.windows[0], 0, bytes, round);
                p.streams[1].waitSignal(p.ctx[1], sig, round, T);
                Thread.sleep(50);  // the wait parks
                p.streams[0].putWithSignal(p.ctx[0], 1, bytes, p.windows[0], 0, bytes, sig, 1);
                p.streams[1].synchronize(T);
                Assert.assertNull(Patterns.verify(p.windows[1], bytes, bytes, round), "round " + round);
                p.streams[0].synchronize(T);
            }
        }
    }

    /** Two processes ping-pong; every wait is parked before the other side sends. */
    @Test(groups = "host", timeOut = 300_000)
    public void wakeAcrossProcesses() throws Exception
    {
        runWorkers(2, "pingpong", 20);
    }

    /**
     * More ranks than cores, each with a Java thread and an executor that spin before they park:
     * rounds of all-to-all must all complete and verify.
     */
    @Test(groups = "host", timeOut = 300_000)
    public void progressWithMoreRanksThanCores() throws Exception
    {
        final int cores = Runtime.getRuntime().availableProcessors();
        runWorkers(Math.min(2 * cores + 1, 9), "alltoall", 100);
    }

    private static byte[] word(final long seed)
    {
        final byte[] b = new byte[8];
        Patterns.fill(b, 8, seed, 0);
        return b;
    }

    private static void runWorkers(final int world, final String mode, final int rounds) throws Exception
    {
        final int port = RankProcesses.freePort();
        try (RankProcesses ranks = new RankProcesses())
        {
            ranks.start(world, HostHandOffWorker.class.getName(), List.of("-Xmx256m", "-XX:TieredStopAtLevel=1"),
                r -> List.of("rank=" + r, "world=" + world, "port=" + port, "mode=" + mode, "rounds=" + rounds));
            final List<RankProcesses.Result> results = ranks.await(Duration.ofMinutes(4));
            for (final RankProcesses.Result r : results)
            {
                System.out.println(r);
            }
            for (final RankProcesses.Result r : results)
            {
                Assert.assertEquals(r.exitCode, 0, "rank " + r.rank + " failed:\n" + r.output);
                Assert.assertTrue(r.output.contains("OK rank " + r.rank + " done"), r.output);
            }
        }
    }
}
