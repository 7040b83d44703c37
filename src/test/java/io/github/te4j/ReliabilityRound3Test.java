package io.github.te4j;

import io.github.te4j.exchange.InMemorySegmentDirectory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.testng.Assert;
import org.testng.annotations.Test;

/**
 * Issue 32's batch findings on the host platform: a submit with the longest timeout is taken
 * whole (Java's size() agrees with native code's), an empty batch's future completes at once, and
 * batches, segments, agents, transports and engines close in every order, from any thread and
 * inside a completion callback, with batches nobody polled, without a close waiting for itself.
 */
public class ReliabilityRound3Test
{
    private static final Duration T = Duration.ofSeconds(30);
    private static final long AREA = 64 * 1024;
    private static final Duration[] EXTREME = {Duration.ZERO, Duration.ofNanos(1), Duration.ofSeconds(Long.MAX_VALUE),
        Duration.ofSeconds(Long.MAX_VALUE, 999_999_999), Duration.ofDays(106_752), Duration.ofNanos(Long.MAX_VALUE)};

    /** Two host "ranks" in this JVM: rank 0's agent has opened rank 1's segment. */
    private static final class Pair implements AutoCloseable
    {
        final TransferEngine e0 = TransferEngine.builder().platform(Platform.HOST).build();
        final TransferEngine e1 = TransferEngine.builder().platform(Platform.HOST).build();
        final P2pTransport p0 = e0.getOrCreateP2pTransport(2);
        final P2pTransport p1 = e1.getOrCreateP2pTransport(2);
        final TransferAgent a0 = e0.createTransferAgent(p0, "rank0");
        final TransferAgent a1 = e1.createTransferAgent(p1, "rank1");
        final DeviceBuffer src = p0.allocateBuffer(AREA);
        final DeviceBuffer seg = p1.allocateBuffer(AREA);
        final RegisteredMemory local = a0.registerLocalMemory(src);
        final InMemorySegmentDirectory dir0;
        final InMemorySegmentDirectory dir1;
        final SegmentHandle s1;

        Pair()
        {
            final String space = "round3" + System.nanoTime();
            a1.registerLocalMemory(seg);
            dir0 = InMemorySegmentDirectory.open(space);
            dir1 = InMemorySegmentDirectory.open(space);
            a0.publishSegment(dir0);
            a1.publishSegment(dir1);
            s1 = a0.openSegment("rank1", dir0, T);
        }

        List<TransferRequest> writes(final int n)
        {
            final List<TransferRequest> rs = new ArrayList<>();
            for (int i = 0; i < n; i++)
            {
                rs.add(TransferRequest.write(local, i * 64L, s1, i * 64L, 64));
            }
            return rs;
        }

        @Override
        public void close()
        {
            e0.close();
            e1.close();
            dir0.close();
            dir1.close();
        }
    }

    /** Finding 2: a timeout of 292 years or more threw ArithmeticException after native code took the part. */
    @Test(groups = "host", timeOut = 60_000)
    public void submitWithExtremeTimeoutsIsTakenWhole()
    {
        try (Pair p = new Pair())
        {
            for (final Duration t : EXTREME)
            {
                final byte[] data = new byte[256];
                new java.util.Random(t.hashCode()).nextBytes(data);
                p.src.write(0, data);
                p.seg.fill(0, AREA, (byte) 0x5a);
                try (TransferBatch b = p.a0.allocateBatch(8))
                {
                    Assert.assertEquals(b.submit(p.writes(2), t), 0, t.toString());
                    Assert.assertEquals(b.size(), 2, "Java counts the part native code took (" + t + ")");
                    final TransferDescriptors d = new TransferDescriptors(2);
                    d.add(TransferRequest.write(p.local, 128, p.s1, 128, 128));
                    Assert.assertEquals(b.submit(d, t), 2, "the next part follows it (" + t + ")");
                    Assert.assertEquals(b.size(), 3);
                    Assert.assertTrue(b.awaitDone(Duration.ofSeconds(Long.MAX_VALUE)), "await with the longest timeout");
                    b.await(Duration.ofSeconds(Long.MAX_VALUE, 999_999_999));
                    final List<TransferStatus> st = b.statuses();
                    // A timeout shorter than a millisecond may end requests before they start; a long
                    // one must not (it saturated, it did not wrap into the past).
                    final boolean shortOne = t.compareTo(Duration.ofMillis(1)) < 0;
                    for (final TransferStatus s : st)
                    {
                        Assert.assertTrue(s.state() == TransferState.COMPLETED
                            || (shortOne && s.state() == TransferState.TIMEOUT), t + ": " + st);
                    }
                    if (!shortOne)
                    {
                        Assert.assertEquals(p.seg.read(0, 256), data, "the bytes landed (" + t + ")");
                    }
                }
            }
        }
    }

    /** Finding 8: the future of a batch with no requests never completed (and its watcher spun). */
    @Test(groups = "host", timeOut = 30_000)
    public void emptyBatchFutureCompletesAtOnce()
    {
        try (Pair p = new Pair(); TransferBatch b = p.a0.allocateBatch(4))
        {
            final CompletableFuture<List<TransferStatus>> f = b.future();
            Assert.assertTrue(f.isDone(), "nothing submitted: nothing to wait for");
            Assert.assertEquals(f.join(), List.of());
            Assert.assertFalse(BatchWatcher.isWatched(b), "the watcher does not poll a batch with nothing to wait for");
        }
    }

    /** Finding 3's minimal case: a completed, unpolled batch whose segment was closed; then the transport. */
    @Test(groups = "host", timeOut = 30_000)
    public void transportCloseWithUnpolledBatchOnClosedSegmentReturns() throws Exception
    {
        try (Pair p = new Pair())
        {
            final TransferBatch b = p.a0.allocateBatch(4);
            b.submit(p.writes(4), T);
            Thread.sleep(20);  // lets native code finish: nobody polls it
            p.s1.close();
            p.p0.close();
            Assert.assertTrue(b.isClosed() || b.isDone());
        }
    }

    private static final String[] OBJECTS = {"batch", "segment", "agent", "transport", "engine"};

    /** Every order of closing the five objects, on this thread, on another, inside a callback, and all at once. */
    @Test(groups = "host", timeOut = 300_000)
    public void closesInEveryOrderFromEveryThread() throws Exception
    {
        final List<int[]> orders = new ArrayList<>();
        permutations(new int[] {0, 1, 2, 3, 4}, 0, orders);
        int runs = 0;
        for (final int[] order : orders)
        {
            for (int mode = 0; mode < 4; mode++)
            {
                closeAll(order, mode);
                runs++;
            }
        }
        Assert.assertEquals(runs, 120 * 4);
    }

    private static void closeAll(final int[] order, final int mode) throws Exception
    {
        // A close that hangs leaves every thread's stack on stderr (what waits for what).
        final Thread watchdog = new Thread(() ->
        {
            try
            {
                Thread.sleep(25_000);
            }
            catch (final InterruptedException e)
            {
                return;
            }
            System.err.println("closeAll(" + describe(order) + ", mode " + mode + ") hangs:\n" + allStacks());
        }, "close-watchdog");
        watchdog.setDaemon(true);
        watchdog.start();
        try (Pair p = new Pair())
        {
            final TransferBatch b = p.a0.allocateBatch(8);
            b.submit(p.writes(8), T);
            final TransferBatch unpolled = p.a0.allocateBatch(2);
            unpolled.submit(p.writes(2), T);
            final AutoCloseable[] objects = {b, p.s1, p.a0, p.p0, p.e0};
            final Runnable closeInOrder = () ->
            {
                for (final int i : order)
                {
                    close(objects[i]);
                }
            };
            final String what = describe(order) + " mode " + mode;
            switch (mode)
            {
                case 0:
                    closeInOrder.run();
                    break;
                case 1:
                    runBounded(closeInOrder, what);
                    break;
                case 2:
                {
                    // Inside the completion callback of the batch: the callback closes what it belongs to.
                    final CompletableFuture<Void> done = b.future().thenRun(closeInOrder);
                    done.get(20, TimeUnit.SECONDS);
                    break;
                }
                default:
                {
                    final List<Thread> ts = new ArrayList<>();
                    for (final int i : order)
                    {
                        final Thread t = new Thread(() -> close(objects[i]), "close-" + OBJECTS[i]);
                        ts.add(t);
                        t.start();
                    }
                    for (final Thread t : ts)
                    {
                        t.join(20_000);
                        Assert.assertFalse(t.isAlive(), what + ": " + t.getName() + " did not return:\n" + allStacks());
                    }
                    break;
                }
            }
            for (final int i : order)
            {
                Assert.assertTrue(((NativeResource) objects[i]).isClosed(), what + ": " + OBJECTS[i] + " is closed");
            }
            Assert.assertTrue(unpolled.isClosed(), what + ": the agent closed its other batch");
        }
        finally
        {
            watchdog.interrupt();
        }
    }

    private static String allStacks()
    {
        final StringBuilder sb = new StringBuilder();
        for (final java.util.Map.Entry<Thread, StackTraceElement[]> e : Thread.getAllStackTraces().entrySet())
        {
            sb.append('"').append(e.getKey().getName()).append("\" ").append(e.getKey().getState()).append('\n');
            for (final StackTraceElement f : e.getValue())
            {
                sb.append("    at ").append(f).append('\n');
            }
        }
        return sb.toString();
    }

    private static void runBounded(final Runnable r, final String what) throws InterruptedException
    {
        final Thread t = new Thread(r, "closer");
        t.start();
        t.join(20_000);
        Assert.assertFalse(t.isAlive(), what + ": the closing thread did not return:\n" + allStacks());
    }

    private static void close(final AutoCloseable c)
    {
        try
        {
            c.close();
        }
        catch (final Exception e)
        {
            throw new AssertionError(e);
        }
    }

    private static String describe(final int[] order)
    {
        final StringBuilder sb = new StringBuilder();
        for (final int i : order)
        {
            sb.append(sb.length() == 0 ? "" : ",").append(OBJECTS[i]);
        }
        return sb.toString();
    }

    private static void permutations(final int[] a, final int k, final List<int[]> out)
    {
        if (k == a.length)
        {
            out.add(a.clone());
            return;
        }
        for (int i = k; i < a.length; i++)
        {
            swap(a, k, i);
            permutations(a, k + 1, out);
            swap(a, k, i);
        }
    }

    private static void swap(final int[] a, final int i, final int j)
    {
        final int x = a[i];
        a[i] = a[j];
        a[j] = x;
    }
}
