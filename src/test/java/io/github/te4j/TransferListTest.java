package io.github.te4j;

import io.github.te4j.check.Patterns;
import io.github.te4j.exchange.InMemorySegmentDirectory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.testng.Assert;
import org.testng.annotations.AfterMethod;
import org.testng.annotations.BeforeMethod;
import org.testng.annotations.Test;

/**
 * Reusable transfer lists and cancel in one process on the host platform: two engines (two
 * "ranks") publish their segments in an in-memory directory and open each other's, as
 * {@link TransferBatchTest} does. Random lists reposted many times with their sources changed
 * between posts, ranges, every destination poisoned and checked byte for byte; posts after the
 * memory or segment went away; cancel of lists and batches before they start, while they run,
 * after they are done, and close with work in flight.
 */
public class TransferListTest
{
    static final Duration T = Duration.ofSeconds(30);
    static final long AREA = 8L << 20;

    private TransferEngine e0;
    private TransferEngine e1;
    private TransferAgent a0;
    private DeviceBuffer src0;
    private DeviceBuffer dst0;
    private DeviceBuffer seg1;
    private RegisteredMemory r0;
    private RegisteredMemory d0;
    private SegmentHandle s1;
    private InMemorySegmentDirectory dir0;
    private InMemorySegmentDirectory dir1;

    @BeforeMethod(alwaysRun = true)
    public void setUp()
    {
        final String space = "list" + System.nanoTime();
        e0 = TransferEngine.builder().platform(Platform.HOST).build();
        e1 = TransferEngine.builder().platform(Platform.HOST).build();
        final P2pTransport p0 = e0.getOrCreateP2pTransport(2);
        final P2pTransport p1 = e1.getOrCreateP2pTransport(2);
        a0 = e0.createTransferAgent(p0, "rank0");
        final TransferAgent a1 = e1.createTransferAgent(p1, "rank1");
        src0 = p0.allocateBuffer(AREA);
        dst0 = p0.allocateBuffer(AREA);
        seg1 = p1.allocateBuffer(AREA);
        r0 = a0.registerLocalMemory(src0);
        d0 = a0.registerLocalMemory(dst0);
        a1.registerLocalMemory(seg1);
        dir0 = InMemorySegmentDirectory.open(space);
        dir1 = InMemorySegmentDirectory.open(space);
        a0.publishSegment(dir0);
        a1.publishSegment(dir1);
        s1 = a0.openSegment("rank1", dir0, T);
    }

    @AfterMethod(alwaysRun = true)
    public void tearDown()
    {
        for (final AutoCloseable c : new AutoCloseable[] {e0, e1, dir0, dir1})
        {
            try
            {
                if (c != null)
                {
                    c.close();
                }
            }
            catch (final Exception e)
            {
                throw new AssertionError(e);
            }
        }
    }

    static TransferDescriptors descriptors(final List<BatchPlan.Item> plan, final RegisteredMemory src,
        final RegisteredMemory dst, final SegmentHandle seg)
    {
        final TransferDescriptors d = new TransferDescriptors(plan.size());
        for (final BatchPlan.Item it : plan)
        {
            if (it.opcode == TransferOpcode.WRITE)
            {
                d.write(src, it.localOffset, seg, it.remoteOffset, it.length);
            }
            else
            {
                d.read(dst, it.localOffset, seg, it.remoteOffset, it.length);
            }
        }
        return d;
    }

    /**
     * Poisons every destination, puts pattern {@code seedSrc} in the local source and
     * {@code seedSeg} at the READ sources of the segment.
     */
    private void stage(final List<BatchPlan.Item> plan, final long seedSrc, final long seedSeg)
    {
        Patterns.write(src0, 0, AREA, seedSrc);
        dst0.fill(0, AREA, Patterns.POISON);
        seg1.fill(0, AREA, Patterns.POISON);
        for (final BatchPlan.Item it : plan)
        {
            if (it.opcode == TransferOpcode.READ)
            {
                seg1.write(it.remoteOffset, BatchPlan.pattern(seedSeg, it.remoteOffset, (int) it.length));
            }
        }
    }

    /**
     * Checks that exactly the requests in {@code landed} moved their bytes: READ destinations
     * hold the segment's pattern, WRITE destinations the source's, every other byte of the
     * areas' first halves (where plans lie; busy batches write the second) is poison.
     */
    private void verify(final List<BatchPlan.Item> plan, final List<BatchPlan.Item> landed, final long seedSrc,
        final long seedSeg, final String what)
    {
        Assert.assertNull(BatchPlan.verifyArea(dst0.read(0, (int) (AREA / 2)), landed, TransferOpcode.READ, true,
            seedSeg, 0), what + ": READ destinations");
        final byte[] image = seg1.read(0, (int) (AREA / 2));
        for (final BatchPlan.Item it : plan)
        {
            if (it.opcode == TransferOpcode.READ)
            {
                java.util.Arrays.fill(image, (int) it.remoteOffset, (int) (it.remoteOffset + it.length),
                    Patterns.POISON);
            }
        }
        Assert.assertNull(BatchPlan.verifyArea(image, landed, TransferOpcode.WRITE, false, seedSrc, 0),
            what + ": WRITE destinations");
    }

    private static void assertAll(final List<TransferStatus> st, final int n, final TransferState want)
    {
        Assert.assertEquals(st.size(), n);
        for (int i = 0; i < n; i++)
        {
            Assert.assertEquals(st.get(i).state(), want, "request " + i + ": " + st.get(i));
        }
    }

    /** One list, posted 25 times; the sources change between posts and each post moves the new bytes. */
    @Test(groups = "host", timeOut = 180_000)
    public void repostedListMovesTheCurrentBytes()
    {
        final List<BatchPlan.Item> plan = BatchPlan.make(Patterns.seed(3, 0, 1, 5), 300, AREA / 2, 1L << 20);
        try (TransferList list = a0.prepareList(descriptors(plan, r0, d0, s1)))
        {
            Assert.assertEquals(list.size(), plan.size());
            for (int round = 0; round < 25; round++)
            {
                final long seedSrc = Patterns.seed(round, 0, 1, 11);
                final long seedSeg = Patterns.seed(round, 1, 0, 12);
                stage(plan, seedSrc, seedSeg);
                final TransferPost p = list.post(T);
                Assert.assertEquals(p.size(), plan.size());
                if (round % 2 == 0)
                {
                    assertAll(p.await(T), plan.size(), TransferState.COMPLETED);
                }
                else
                {
                    final TransferState[] st = new TransferState[plan.size()];
                    Assert.assertTrue(p.awaitDone(T));
                    Assert.assertEquals(p.states(st), plan.size());
                    for (int i = 0; i < st.length; i++)
                    {
                        Assert.assertEquals(st[i], TransferState.COMPLETED, "request " + i);
                    }
                }
                Assert.assertTrue(p.isDone());
                verify(plan, plan, seedSrc, seedSeg, "round " + round);
            }
        }
    }

    /** Ranges: only the requests posted move; a future completes; a range outside the list is refused. */
    @Test(groups = "host", timeOut = 120_000)
    public void rangesMoveOnlyTheirRequests() throws Exception
    {
        final List<BatchPlan.Item> plan = BatchPlan.make(Patterns.seed(4, 0, 1, 6), 200, AREA / 2, 256L << 10);
        final TransferList list = a0.prepareList(descriptors(plan, r0, d0, s1));
        final int[][] ranges = {{0, 1}, {199, 200}, {10, 90}, {0, 200}, {57, 58}};
        for (int k = 0; k < ranges.length; k++)
        {
            final int from = ranges[k][0];
            final int to = ranges[k][1];
            final long seedSrc = Patterns.seed(k, 0, 1, 21);
            final long seedSeg = Patterns.seed(k, 1, 0, 22);
            stage(plan, seedSrc, seedSeg);
            final TransferPost p = list.post(from, to, T);
            Assert.assertEquals(p.from(), from);
            Assert.assertEquals(p.to(), to);
            assertAll(p.future().get(30, TimeUnit.SECONDS), to - from, TransferState.COMPLETED);
            Assert.assertEquals(p.status(to - from - 1).state(), TransferState.COMPLETED);
            verify(plan, plan.subList(from, to), seedSrc, seedSeg, "range [" + from + ", " + to + ")");
        }
        expectNamed(IllegalArgumentException.class, "range", () -> list.post(5, 5, T));
        expectNamed(IllegalArgumentException.class, "range", () -> list.post(-1, 3, T));
        expectNamed(IllegalArgumentException.class, "range", () -> list.post(0, 201, T));
        expectNamed(IllegalArgumentException.class, "timeout", () -> list.post(Duration.ofSeconds(-1)));
        list.close();
        list.close();
        expectNamed(ClosedException.class, "TransferList", () -> list.post(T));
    }

    /** Prepare checks every request as a batch submit does, naming its list index, and refuses RDMA segments. */
    @Test(groups = "host", timeOut = 60_000)
    public void prepareRefusesBadRequestsByIndex()
    {
        final TransferDescriptors d = new TransferDescriptors(4);
        d.write(r0, 0, s1, 0, 4096);
        d.write(r0, 0, s1, AREA - 10, 11);
        expectNamed(IndexOutOfBoundsException.class, "request 1", () -> a0.prepareList(d));
        d.clear();
        d.write(r0, 0, s1, 0, 1);
        d.add(TransferOpcode.READ, d0, 0, null, 0, 1);
        expectNamed(IllegalArgumentException.class, "request 1: segment is null", () -> a0.prepareList(d));
        d.clear();
        d.write(r0, AREA, s1, 0, 1);
        expectNamed(IndexOutOfBoundsException.class, "request 0: local", () -> a0.prepareList(d));
        d.clear();
        d.write(r0, 0, s1, 0, 0);
        expectNamed(IllegalArgumentException.class, "request 0: length=0", () -> a0.prepareList(d));
        d.clear();
        expectNamed(IllegalArgumentException.class, "at least one", () -> a0.prepareList(d));
        expectNamed(IllegalArgumentException.class, "request 1: is null",
            () -> a0.prepareList(java.util.Arrays.asList(TransferRequest.write(r0, 0, s1, 0, 1), null)));
        expectNamed(IllegalArgumentException.class, "null", () -> a0.prepareList((TransferDescriptors) null));
    }

    /** Memory unregistered, a buffer closed, a segment closed after prepare: the next post names it. */
    @Test(groups = "host", timeOut = 60_000)
    public void postAfterTheMemoryOrSegmentWentAwayFailsClearly()
    {
        final TransferDescriptors d = new TransferDescriptors(2);
        d.write(r0, 0, s1, 0, 4096);
        d.read(d0, 0, s1, 8192, 4096);
        try (TransferList list = a0.prepareList(d))
        {
            list.post(T).await(T);
            a0.unregisterLocalMemory(d0);
            dst0.fill(0, 4096, Patterns.POISON);
            expectNamed(IllegalStateException.class, "unregistered", () -> list.post(T));
            Assert.assertNull(Patterns.verifyPoison(dst0, 0, 4096), "the refused post touched nothing");
        }
        final DeviceBuffer extra = e0.getOrCreateP2pTransport(2).allocateBuffer(1 << 20);
        final RegisteredMemory m = a0.registerLocalMemory(extra);
        final TransferDescriptors d2 = new TransferDescriptors(1);
        d2.write(m, 0, s1, 0, 4096);
        try (TransferList list = a0.prepareList(d2))
        {
            assertAll(list.post(T).await(T), 1, TransferState.COMPLETED);
            extra.close();
            expectNamed(IllegalStateException.class, "buffer closed", () -> list.post(T));
        }
        final SegmentHandle again = a0.openSegment("rank1");
        final TransferDescriptors d3 = new TransferDescriptors(1);
        d3.write(r0, 0, again, 0, 4096);
        try (TransferList list = a0.prepareList(d3))
        {
            again.close();
            expectNamed(ClosedException.class, "closed after the list was prepared", () -> list.post(T));
        }
    }

    /**
     * A long batch ahead on the shared worker: a list post and a batch queued behind it cannot
     * start before they are cancelled; then the batch ahead, cancelled while it runs.
     */
    @Test(groups = "host", timeOut = 120_000)
    public void cancelBeforeStartLeavesEveryDestinationUntouched()
    {
        final TransferDescriptors busy = new TransferDescriptors(2048);
        for (int i = 0; i < 2048; i++)
        {
            busy.write(r0, 0, s1, AREA / 2, 4L << 20);
        }
        final List<BatchPlan.Item> plan = BatchPlan.make(Patterns.seed(5, 0, 1, 7), 64, AREA / 4, 64L << 10);
        stage(plan, 31, 32);
        try (TransferBatch ahead = a0.allocateBatch(busy.size());
            TransferBatch queued = a0.allocateBatch(plan.size());
            TransferList list = a0.prepareList(descriptors(plan, r0, d0, s1)))
        {
            ahead.submit(busy, T);
            final TransferPost p = list.post(T);
            queued.submit(descriptors(plan, r0, d0, s1), T);
            p.cancel();
            p.cancel();  // idempotent
            queued.cancel();
            ahead.cancel();  // the post and the queued batch run behind it: now they get their turn
            assertAll(p.await(T), plan.size(), TransferState.CANCELLED);
            assertAll(queued.await(T), plan.size(), TransferState.CANCELLED);
            verify(plan, List.of(), 31, 32, "list post and batch cancelled before start");
            final List<TransferStatus> st = ahead.await(T);
            int cancelled = 0;
            for (final TransferStatus s : st)
            {
                Assert.assertTrue(s.state() == TransferState.COMPLETED || s.state() == TransferState.CANCELLED,
                    s.toString());
                cancelled += s.state() == TransferState.CANCELLED ? 1 : 0;
            }
            Assert.assertTrue(cancelled > 0, "the batch ahead ran to its end before the cancel: " + st.size());
            expectNamed(IllegalArgumentException.class, "cancelled", () -> ahead.submit(busy, T));
            assertAll(list.post(T).await(T), plan.size(), TransferState.COMPLETED);
            verify(plan, plan, 31, 32, "after the cancelled post");
        }
    }

    /** Cancel while a post runs: every request all or nothing; the next post runs whole. */
    @Test(groups = "host", timeOut = 120_000)
    public void cancelMidRunIsAllOrNothingPerRequest()
    {
        // Requests of 256 KiB: copied one by one by the worker, so a cancel lands between them.
        final List<BatchPlan.Item> plan = new ArrayList<>();
        for (int i = 0; i < 16; i++)
        {
            plan.add(new BatchPlan.Item(i % 2 == 0 ? TransferOpcode.WRITE : TransferOpcode.READ, i * (256L << 10),
                i * (256L << 10), 256L << 10));
        }
        try (TransferList list = a0.prepareList(descriptors(plan, r0, d0, s1)))
        {
            for (int round = 0; round < 5; round++)
            {
                stage(plan, 41 + round, 42 + round);
                final TransferPost p = list.post(T);
                p.cancel();
                final List<TransferStatus> st = p.await(T);
                final List<BatchPlan.Item> landed = new ArrayList<>();
                for (int i = 0; i < plan.size(); i++)
                {
                    final TransferState s = st.get(i).state();
                    Assert.assertTrue(s == TransferState.COMPLETED || s == TransferState.CANCELLED, "request " + i + ": "
                        + s);
                    if (s == TransferState.COMPLETED)
                    {
                        landed.add(plan.get(i));
                    }
                }
                verify(plan, landed, 41 + round, 42 + round, "round " + round + " (" + landed.size() + " completed)");
                // Cancelling one post leaves the next untouched.
                stage(plan, 51 + round, 52 + round);
                assertAll(list.post(T).await(T), plan.size(), TransferState.COMPLETED);
                verify(plan, plan, 51 + round, 52 + round, "round " + round + " after the cancel");
            }
        }
    }

    /** Cancel after the end changes nothing; the deadline of a post that cannot start makes it TIMEOUT. */
    @Test(groups = "host", timeOut = 120_000)
    public void cancelAfterDoneAndDeadlines()
    {
        final List<BatchPlan.Item> plan = BatchPlan.make(Patterns.seed(6, 0, 1, 8), 32, AREA / 4, 64L << 10);
        stage(plan, 61, 62);
        try (TransferList list = a0.prepareList(descriptors(plan, r0, d0, s1)))
        {
            final TransferPost p = list.post(T);
            assertAll(p.await(T), plan.size(), TransferState.COMPLETED);
            p.cancel();
            assertAll(p.statuses(), plan.size(), TransferState.COMPLETED);
            verify(plan, plan, 61, 62, "done before the cancel");
            // A batch: cancel after done changes nothing either.
            try (TransferBatch b = a0.allocateBatch(1))
            {
                b.submit(List.of(TransferRequest.write(r0, 0, s1, 0, 4096)), T);
                Assert.assertTrue(b.awaitDone(T));
                b.cancel();
                Assert.assertEquals(b.status(0).state(), TransferState.COMPLETED);
            }
            // A busy worker and a zero timeout: the post times out untouched.
            final TransferDescriptors busy = new TransferDescriptors(1024);
            for (int i = 0; i < 1024; i++)
            {
                busy.write(r0, 0, s1, AREA / 2, 4L << 20);
            }
            stage(plan, 63, 64);
            try (TransferBatch ahead = a0.allocateBatch(busy.size()))
            {
                ahead.submit(busy, T);
                final TransferPost late = list.post(Duration.ZERO);
                Assert.assertFalse(late.isDone(), "queued behind the busy batch");  // sees the deadline: cancels
                ahead.cancel();
                final List<TransferStatus> st = late.await(T);
                final List<BatchPlan.Item> landed = new ArrayList<>();
                for (int i = 0; i < st.size(); i++)
                {
                    final TransferState s = st.get(i).state();
                    Assert.assertTrue(s == TransferState.TIMEOUT || s == TransferState.COMPLETED, s.toString());
                    if (s == TransferState.COMPLETED)
                    {
                        landed.add(plan.get(i));
                    }
                }
                Assert.assertTrue(landed.size() < plan.size(), "the late post started before its deadline was seen");
                late.cancel();  // after the deadline: stays TIMEOUT
                Assert.assertNotEquals(late.status(plan.indexOf(firstMissing(plan, landed))).state(),
                    TransferState.CANCELLED);
                verify(plan, landed, 63, 64, "timed out");
            }
        }
    }

    private static BatchPlan.Item firstMissing(final List<BatchPlan.Item> plan, final List<BatchPlan.Item> landed)
    {
        for (final BatchPlan.Item it : plan)
        {
            if (!landed.contains(it))
            {
                return it;
            }
        }
        throw new AssertionError("every request landed");
    }

    /** A batch cancelled while it runs: requests all or nothing, CANCELLED ones untouched. */
    @Test(groups = "host", timeOut = 120_000)
    public void batchCancelMidRun()
    {
        final List<BatchPlan.Item> plan = new ArrayList<>();
        for (int i = 0; i < 16; i++)
        {
            plan.add(new BatchPlan.Item(TransferOpcode.WRITE, i * (256L << 10), i * (256L << 10), 256L << 10));
        }
        stage(plan, 71, 72);
        try (TransferBatch b = a0.allocateBatch(plan.size()))
        {
            b.submit(descriptors(plan, r0, d0, s1), T);
            b.cancel();
            final List<TransferStatus> st = b.await(T);
            final List<BatchPlan.Item> landed = new ArrayList<>();
            for (int i = 0; i < st.size(); i++)
            {
                final TransferState s = st.get(i).state();
                Assert.assertTrue(s == TransferState.COMPLETED || s == TransferState.CANCELLED, s.toString());
                if (s == TransferState.COMPLETED)
                {
                    landed.add(plan.get(i));
                }
            }
            verify(plan, landed, 71, 72, "batch cancelled mid-run");
        }
    }

    /** Closing a list with a post in flight waits for it (cancelled) and completes its future; nothing crashes. */
    @Test(groups = "host", timeOut = 120_000)
    public void closeWithWorkInFlight() throws Exception
    {
        final TransferDescriptors big = new TransferDescriptors(256);
        for (int i = 0; i < 256; i++)
        {
            big.write(r0, 0, s1, 0, 4L << 20);
        }
        final TransferList list = a0.prepareList(big);
        final TransferPost p = list.post(T);
        final java.util.concurrent.CompletableFuture<List<TransferStatus>> f = p.future();
        list.close();
        Assert.assertTrue(f.isDone(), "the close settled the post");
        final List<TransferStatus> st = f.get();
        for (final TransferStatus s : st)
        {
            Assert.assertTrue(s.state() == TransferState.COMPLETED || s.state() == TransferState.CANCELLED, s.toString());
        }
        Assert.assertTrue(p.isSettled());
        // An engine closed under a list post: drained, nothing crashes.
        final TransferList other = a0.prepareList(big);
        final TransferPost q = other.post(T);
        e0.close();
        Assert.assertTrue(other.isClosed());
        Assert.assertTrue(q.isSettled() || q.future().isDone());
    }

    /** Unregistering memory a post is copying waits for the post (cancelled), then the next post is refused. */
    @Test(groups = "host", timeOut = 120_000)
    public void unregisterDrainsAPostInFlight()
    {
        final TransferDescriptors big = new TransferDescriptors(128);
        for (int i = 0; i < 128; i++)
        {
            big.read(d0, 0, s1, 0, 4L << 20);
        }
        try (TransferList list = a0.prepareList(big))
        {
            final TransferPost p = list.post(T);
            a0.unregisterLocalMemory(d0);
            Assert.assertTrue(p.isDone(), "unregister returned before the post ended");
            for (final TransferStatus s : p.statuses())
            {
                Assert.assertTrue(s.state() == TransferState.COMPLETED || s.state() == TransferState.TIMEOUT,
                    s.toString());
            }
            expectNamed(IllegalStateException.class, "unregistered", () -> list.post(T));
        }
    }

    /** Posting while the previous post runs is refused; after it ends the list posts again. */
    @Test(groups = "host", timeOut = 120_000)
    public void onePostAtATime()
    {
        final TransferDescriptors busy = new TransferDescriptors(1024);
        for (int i = 0; i < 1024; i++)
        {
            busy.write(r0, 0, s1, AREA / 2, 4L << 20);
        }
        final TransferDescriptors d = new TransferDescriptors(1);
        d.write(r0, 0, s1, 0, 4096);
        try (TransferBatch ahead = a0.allocateBatch(busy.size()); TransferList list = a0.prepareList(d))
        {
            ahead.submit(busy, T);
            final TransferPost p = list.post(T);
            expectNamed(IllegalStateException.class, "has not ended", () -> list.post(T));
            ahead.cancel();
            assertAll(p.await(T), 1, TransferState.COMPLETED);
            assertAll(list.post(T).await(T), 1, TransferState.COMPLETED);
        }
    }

    static void expectNamed(final Class<? extends Throwable> type, final String needle, final Runnable r)
    {
        final Throwable e = Assert.expectThrows(type, r::run);
        Assert.assertTrue(e.getMessage().contains(needle), "'" + needle + "' not in: " + e.getMessage());
    }
}
