package io.github.te4j;

import io.github.te4j.check.Patterns;
import io.github.te4j.exchange.InMemorySegmentDirectory;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.bytedeco.javacpp.Pointer;
import org.testng.Assert;
import org.testng.annotations.AfterMethod;
import org.testng.annotations.BeforeMethod;
import org.testng.annotations.Test;

/**
 * The transfer-batch API in one process on the host platform: two engines (two "ranks") publish
 * their segments in an in-memory directory and open each other's. Random batches verified byte
 * for byte, every bad input named by request index, deadlines, futures and closed objects.
 */
public class TransferBatchTest
{
    static final Duration T = Duration.ofSeconds(30);
    static final long AREA = 24L << 20;

    private TransferEngine e0;
    private TransferEngine e1;
    private TransferAgent a0;
    private TransferAgent a1;
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
        final String space = "batch" + System.nanoTime();
        e0 = TransferEngine.builder().platform(Platform.HOST).build();
        e1 = TransferEngine.builder().platform(Platform.HOST).build();
        final P2pTransport p0 = e0.getOrCreateP2pTransport(2);
        final P2pTransport p1 = e1.getOrCreateP2pTransport(2);
        a0 = e0.createTransferAgent(p0, "rank0");
        a1 = e1.createTransferAgent(p1, "rank1");
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

    private List<TransferRequest> requests(final List<BatchPlan.Item> plan)
    {
        final List<TransferRequest> out = new ArrayList<>();
        for (final BatchPlan.Item it : plan)
        {
            out.add(it.opcode == TransferOpcode.WRITE
                ? TransferRequest.write(r0, it.localOffset, s1, it.remoteOffset, it.length)
                : TransferRequest.read(d0, it.localOffset, s1, it.remoteOffset, it.length));
        }
        return out;
    }

    /** Random mixed batches, 1 B to 16 MiB, both directions checked byte for byte with poison around. */
    @Test(groups = "host", timeOut = 120_000)
    public void randomBatchesLandByteForByte()
    {
        for (int round = 0; round < 3; round++)
        {
            final long seedSrc = Patterns.seed(round, 0, 1, 1);
            final long seedSeg = Patterns.seed(round, 1, 0, 2);
            Patterns.write(src0, 0, AREA, seedSrc);
            dst0.fill(0, AREA, Patterns.POISON);
            // The segment's bytes: the source of READs, the poisoned target of WRITEs, request by request.
            final List<BatchPlan.Item> plan = BatchPlan.make(seedSrc ^ 77, 200, AREA / 2, 16L << 20);
            seg1.fill(0, AREA, Patterns.POISON);
            for (final BatchPlan.Item it : plan)
            {
                if (it.opcode == TransferOpcode.READ)
                {
                    seg1.write(it.remoteOffset, BatchPlan.pattern(seedSeg, it.remoteOffset, (int) it.length));
                }
            }
            try (TransferBatch b = a0.allocateBatch(plan.size()))
            {
                final List<TransferRequest> rs = requests(plan);
                Assert.assertEquals(b.submit(rs.subList(0, 50), T), 0);
                Assert.assertEquals(b.submit(rs.subList(50, rs.size()), T), 50);
                final List<TransferStatus> st = b.await(T);
                Assert.assertEquals(st.size(), plan.size());
                for (int i = 0; i < st.size(); i++)
                {
                    Assert.assertEquals(st.get(i).state(), TransferState.COMPLETED, "request " + i + ": " + st.get(i));
                }
                Assert.assertTrue(b.isDone());
            }
            final String reads = BatchPlan.verifyArea(dst0.read(0, (int) (AREA / 2)), plan, TransferOpcode.READ, true,
                seedSeg, 0);
            Assert.assertNull(reads, "READ destinations");
            Assert.assertNull(Patterns.verifyPoison(dst0, AREA / 2, 4096), "past the READ area");
            final byte[] image = seg1.read(0, (int) (AREA / 2));
            // WRITE targets hold the source bytes; READ sources keep theirs; the rest is poison.
            final List<BatchPlan.Item> writes = new ArrayList<>();
            for (final BatchPlan.Item it : plan)
            {
                if (it.opcode == TransferOpcode.READ)
                {
                    java.util.Arrays.fill(image, (int) it.remoteOffset, (int) (it.remoteOffset + it.length),
                        Patterns.POISON);
                }
                else
                {
                    writes.add(it);
                }
            }
            Assert.assertNull(BatchPlan.verifyArea(image, writes, TransferOpcode.WRITE, false, seedSrc, 0),
                "WRITE destinations");
        }
    }

    @Test(groups = "host", timeOut = 60_000)
    public void futureCompletesWithEveryState() throws Exception
    {
        Patterns.write(src0, 0, 1 << 20, 5);
        try (TransferBatch b = a0.allocateBatch(16))
        {
            final List<TransferRequest> rs = new ArrayList<>();
            for (int i = 0; i < 16; i++)
            {
                rs.add(TransferRequest.write(r0, i * 65536L, s1, i * 65536L, 65536));
            }
            b.submit(rs, T);
            final List<TransferStatus> st = b.future().get(30, TimeUnit.SECONDS);
            Assert.assertEquals(st.size(), 16);
            st.forEach(s -> Assert.assertEquals(s.state(), TransferState.COMPLETED));
            Assert.assertTrue(b.future().isDone(), "the same future, done");
            Assert.assertEquals(b.status(3).state(), TransferState.COMPLETED);
        }
        Assert.assertNull(Patterns.verify(seg1, 0, 1 << 20, 5));
    }

    /** Memory allocated elsewhere (a direct ByteBuffer) as the local side of READ and WRITE. */
    @Test(groups = "host", timeOut = 60_000)
    public void foreignLocalMemory()
    {
        // Not where te4j freed a buffer lately: te4j refuses to register such memory (BATCH.md).
        final List<ByteBuffer> reused = new ArrayList<>();
        ByteBuffer bb = ByteBuffer.allocateDirect(1 << 20);
        while (reusesFreedTe4jMemory(new Pointer(bb).address(), bb.capacity()) && reused.size() < 64)
        {
            reused.add(bb);  // kept until a fresh one is found, so the allocator moves on
            bb = ByteBuffer.allocateDirect(1 << 20);
        }
        final long address = new Pointer(bb).address();
        for (int i = 0; i < bb.capacity(); i++)
        {
            bb.put(i, (byte) (i * 31 + 7));
        }
        final RegisteredMemory m = a0.registerLocalMemory(address, bb.capacity());
        Assert.assertEquals(m.segmentOffset(), -1);
        try (TransferBatch b = a0.allocateBatch(2))
        {
            b.submit(List.of(TransferRequest.write(m, 0, s1, 4096, 1000)), T);
            b.submit(List.of(TransferRequest.read(m, 500_000, s1, 4096, 1000)), T);
            b.await(T).forEach(s -> Assert.assertEquals(s.state(), TransferState.COMPLETED));
        }
        for (int i = 0; i < 1000; i++)
        {
            Assert.assertEquals(bb.get(500_000 + i), (byte) (i * 31 + 7), "byte " + i);
        }
        a0.unregisterLocalMemory(m);
        Assert.assertFalse(m.isRegistered());
    }

    private static boolean reusesFreedTe4jMemory(final long address, final long bytes)
    {
        try
        {
            LiveMemory.checkLocalRegistration(address, bytes);
            return false;
        }
        catch (final IllegalArgumentException e)
        {
            return true;
        }
    }

    /** A batch whose deadline has passed: requests not started end as TIMEOUT and touch nothing. */
    @Test(groups = "host", timeOut = 120_000)
    public void deadlinePassedRequestsTimeOutUntouched()
    {
        // A long batch ahead on the (shared, in-order) worker: the second one cannot start in time.
        final List<TransferRequest> busy = new ArrayList<>();
        for (int i = 0; i < 4096; i++)
        {
            busy.add(TransferRequest.write(r0, 0, s1, 0, 4L << 20));
        }
        dst0.fill(0, 1 << 20, Patterns.POISON);
        try (TransferBatch ahead = a0.allocateBatch(busy.size()); TransferBatch late = a0.allocateBatch(64))
        {
            ahead.submit(busy, T);
            final List<TransferRequest> rs = new ArrayList<>();
            for (int i = 0; i < 64; i++)
            {
                rs.add(TransferRequest.read(d0, i * 4096L, s1, i * 4096L, 4096));
            }
            late.submit(rs, Duration.ZERO);
            final List<TransferStatus> st = late.await(T);
            int timedOut = 0;
            for (int i = 0; i < st.size(); i++)
            {
                final TransferState s = st.get(i).state();
                Assert.assertTrue(s == TransferState.TIMEOUT || s == TransferState.COMPLETED, "request " + i + ": " + s);
                if (s == TransferState.TIMEOUT)
                {
                    timedOut++;
                    Assert.assertNull(Patterns.verifyPoison(dst0, i * 4096L, 4096), "request " + i + " timed out");
                }
            }
            Assert.assertTrue(timedOut > 0, "the late batch started before its deadline was seen: " + st);
            final IllegalArgumentException e = Assert.expectThrows(IllegalArgumentException.class,
                () -> late.submit(rs.subList(0, 1), T));
            Assert.assertTrue(e.getMessage().contains("deadline"), e.getMessage());
            ahead.await(T).forEach(s -> Assert.assertEquals(s.state(), TransferState.COMPLETED));
        }
    }

    /** Destinations may overlap: allowed, every request completes. */
    @Test(groups = "host", timeOut = 60_000)
    public void overlappingDestinationsAreAllowed()
    {
        try (TransferBatch b = a0.allocateBatch(3))
        {
            b.submit(List.of(TransferRequest.write(r0, 0, s1, 100, 1000), TransferRequest.write(r0, 0, s1, 600, 1000),
                TransferRequest.write(r0, 0, s1, 100, 10)), T);
            b.await(T).forEach(s -> Assert.assertEquals(s.state(), TransferState.COMPLETED));
        }
    }

    private static void expectNamed(final Class<? extends Throwable> type, final String needle, final Runnable r)
    {
        final Throwable e = Assert.expectThrows(type, r::run);
        Assert.assertTrue(e.getMessage().contains(needle), "'" + needle + "' not in: " + e.getMessage());
    }

    /**
     * Requests added to TransferDescriptors: the list submit's checks, naming the batch index,
     * nothing of a refused part run, the bytes copied, states read into an array, reuse after clear.
     */
    @Test(groups = "host", timeOut = 60_000)
    public void descriptorsSubmitLikeRequestLists()
    {
        Patterns.write(src0, 0, 1 << 20, 9);
        seg1.fill(0, 1 << 20, Patterns.POISON);
        final TransferDescriptors d = new TransferDescriptors(1);  // grows as requests are added
        try (TransferBatch b = a0.allocateBatch(64))
        {
            d.write(r0, 0, s1, 0, 4096);
            d.write(r0, 0, s1, AREA - 10, 11);
            expectNamed(IndexOutOfBoundsException.class, "request 1", () -> b.submit(d, T));
            d.clear();
            d.add(TransferOpcode.WRITE, r0, 0, null, 0, 1);
            expectNamed(IllegalArgumentException.class, "request 0: segment is null", () -> b.submit(d, T));
            d.clear();
            d.add(null, r0, 0, s1, 0, 1);
            expectNamed(IllegalArgumentException.class, "request 0: opcode is null", () -> b.submit(d, T));
            d.clear();
            expectNamed(IllegalArgumentException.class, "at least one", () -> b.submit(d, T));
            Assert.assertEquals(b.size(), 0, "nothing of a refused part is submitted");
            Assert.assertNull(Patterns.verifyPoison(seg1, 0, 1 << 20), "nothing ran");
            for (int i = 0; i < 16; i++)
            {
                d.write(r0, i * 65536L, s1, i * 65536L, 65536);
            }
            Assert.assertEquals(b.submit(d, T), 0);
            d.clear();
            for (int i = 0; i < 16; i++)
            {
                d.read(d0, i * 65536L, s1, i * 65536L, 65536);
            }
            Assert.assertEquals(b.submit(d, T), 16);
            d.clear();
            d.write(r0, AREA, s1, 0, 1);
            expectNamed(IndexOutOfBoundsException.class, "request 32", () -> b.submit(d, T));
            Assert.assertTrue(b.awaitDone(T));
            final TransferState[] st = new TransferState[b.size()];
            Assert.assertEquals(b.states(st), 32);
            for (int i = 0; i < st.length; i++)
            {
                Assert.assertEquals(st[i], TransferState.COMPLETED, "request " + i + ": " + b.status(i));
            }
            expectNamed(IllegalArgumentException.class, "holds 1 states", () -> b.states(new TransferState[1]));
        }
        Assert.assertNull(Patterns.verify(seg1, 0, 1 << 20, 9), "WRITE destinations");
        Assert.assertNull(Patterns.verify(dst0, 0, 1 << 20, 9), "READ destinations (after the WRITE part, in order)");
    }

    @Test(groups = "host", timeOut = 60_000)
    public void badInputNamesTheRequestIndexAndSubmitsNothing()
    {
        seg1.fill(0, 8192, Patterns.POISON);
        try (TransferBatch b = a0.allocateBatch(8))
        {
            final TransferRequest good = TransferRequest.write(r0, 0, s1, 0, 4096);
            // Outside the remote segment, straddling its end, outside local memory.
            expectNamed(IndexOutOfBoundsException.class, "request 1",
                () -> b.submit(List.of(good, TransferRequest.write(r0, 0, s1, AREA - 10, 11)), T));
            expectNamed(IndexOutOfBoundsException.class, "request 1",
                () -> b.submit(List.of(good, TransferRequest.read(d0, 0, s1, -1, 11)), T));
            expectNamed(IndexOutOfBoundsException.class, "request 2",
                () -> b.submit(List.of(good, good, TransferRequest.write(r0, AREA, s1, 0, 1)), T));
            expectNamed(IndexOutOfBoundsException.class, "request 0",
                () -> b.submit(List.of(TransferRequest.read(d0, -5, s1, 0, 10)), T));
            // Lengths: 0, negative, past 2^40.
            expectNamed(IllegalArgumentException.class, "request 0: length=0",
                () -> b.submit(List.of(TransferRequest.write(r0, 0, s1, 0, 0)), T));
            expectNamed(IllegalArgumentException.class, "request 1: length=-3",
                () -> b.submit(List.of(good, TransferRequest.write(r0, 0, s1, 0, -3)), T));
            expectNamed(IllegalArgumentException.class, "2^40",
                () -> b.submit(List.of(TransferRequest.write(r0, 0, s1, 0, (1L << 40) + 1)), T));
            // Nulls.
            expectNamed(IllegalArgumentException.class, "request 1: is null",
                () -> b.submit(java.util.Arrays.asList(good, null), T));
            expectNamed(IllegalArgumentException.class, "request 0: opcode is null",
                () -> b.submit(List.of(TransferRequest.of(null, r0, 0, s1, 0, 1)), T));
            expectNamed(IllegalArgumentException.class, "request 0: segment is null",
                () -> b.submit(List.of(TransferRequest.write(r0, 0, null, 0, 1)), T));
            expectNamed(IllegalArgumentException.class, "request 0: local memory is null",
                () -> b.submit(List.of(TransferRequest.write(null, 0, s1, 0, 1)), T));
            expectNamed(IllegalArgumentException.class, "at least one",
                () -> b.submit(List.of(), T));
            expectNamed(IllegalArgumentException.class, "timeout", () -> b.submit(List.of(good), Duration.ofSeconds(-1)));
            // Over capacity.
            final List<TransferRequest> nine = new ArrayList<>();
            for (int i = 0; i < 9; i++)
            {
                nine.add(good);
            }
            expectNamed(IllegalArgumentException.class, "capacity", () -> b.submit(nine, T));
            Assert.assertEquals(b.size(), 0, "nothing of a refused part is submitted");
            Assert.assertNull(Patterns.verifyPoison(seg1, 0, 8192), "nothing ran");
            b.submit(nine.subList(0, 8), T);
            expectNamed(IllegalArgumentException.class, "capacity", () -> b.submit(List.of(good), T));
            b.await(T).forEach(s -> Assert.assertEquals(s.state(), TransferState.COMPLETED));
            expectNamed(IllegalArgumentException.class, "index=8", () -> b.status(8));
        }
        // Memory of another agent, and unregistered memory.
        final RegisteredMemory other = a1.registerLocalMemory(e1.getOrCreateP2pTransport(2).allocateBuffer(4096));
        try (TransferBatch b = a0.allocateBatch(1))
        {
            expectNamed(IllegalArgumentException.class, "request 0", () -> b.submit(List.of(
                TransferRequest.write(other, 0, s1, 0, 1)), T));
            a0.unregisterLocalMemory(d0);
            expectNamed(IllegalArgumentException.class, "not registered", () -> b.submit(List.of(
                TransferRequest.read(d0, 0, s1, 0, 1)), T));
        }
        expectNamed(IllegalArgumentException.class, "capacity", () -> a0.allocateBatch(0));
        expectNamed(IllegalArgumentException.class, "capacity", () -> a0.allocateBatch(TransferBatch.MAX_CAPACITY + 1));
    }

    @Test(groups = "host", timeOut = 60_000)
    public void unknownAndClosedSegments()
    {
        expectNamed(IllegalArgumentException.class, "unknown segment 'nobody'", () -> a0.openSegment("nobody"));
        expectNamed(IllegalArgumentException.class, "segment name", () -> a0.openSegment("bad name"));
        expectNamed(io.github.te4j.rendezvous.RendezvousTimeoutException.class, "nobody",
            () -> a0.openSegment("nobody", dir0, Duration.ofMillis(50)));
        expectNamed(BadHandleException.class, "magic", () ->
        {
            dir1.publish("forged", new byte[] {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14});
            a0.openSegment("forged");
        });
        final SegmentHandle again = a0.openSegment("rank1");
        again.close();
        try (TransferBatch b = a0.allocateBatch(1))
        {
            expectNamed(ClosedException.class, "request 0", () -> b.submit(List.of(
                TransferRequest.write(r0, 0, again, 0, 1)), T));
        }
        // Closing a segment while a batch uses it: the batch finishes, the mappings go after it.
        final SegmentHandle busy = a0.openSegment("rank1");
        try (TransferBatch b = a0.allocateBatch(64))
        {
            final List<TransferRequest> rs = new ArrayList<>();
            for (int i = 0; i < 64; i++)
            {
                rs.add(TransferRequest.write(r0, 0, busy, 0, 1 << 20));
            }
            b.submit(rs, T);
            busy.close();
            b.await(T).forEach(s -> Assert.assertEquals(s.state(), TransferState.COMPLETED));
        }
    }

    @Test(groups = "host", timeOut = 60_000)
    public void closedObjectsThrowClearly()
    {
        final TransferBatch b = a0.allocateBatch(4);
        b.submit(List.of(TransferRequest.write(r0, 0, s1, 0, 4096)), T);
        b.close();
        b.close();
        expectNamed(ClosedException.class, "TransferBatch", () -> b.submit(List.of(
            TransferRequest.write(r0, 0, s1, 0, 1)), T));
        expectNamed(ClosedException.class, "TransferBatch", () -> b.await(T));
        // Closing the buffer under a registration: the request names the index.
        final DeviceBuffer extra = e0.getOrCreateP2pTransport(2).allocateBuffer(4096);
        final RegisteredMemory m = a0.registerLocalMemory(extra);
        extra.close();
        try (TransferBatch b2 = a0.allocateBatch(1))
        {
            expectNamed(IllegalArgumentException.class, "request 0", () -> b2.submit(List.of(
                TransferRequest.write(m, 0, s1, 0, 1)), T));
        }
        a0.close();
        expectNamed(ClosedException.class, "TransferAgent", () -> a0.allocateBatch(1));
        expectNamed(ClosedException.class, "TransferAgent", () -> a0.registerLocalMemory(src0));
        Assert.assertTrue(s1.isClosed(), "the agent closes its segments");
    }

    /** An engine closed with batches running: they are cancelled and drained, nothing crashes. */
    @Test(groups = "host", timeOut = 60_000)
    public void engineCloseDrainsRunningBatches()
    {
        final TransferBatch b = a0.allocateBatch(512);
        final List<TransferRequest> rs = new ArrayList<>();
        for (int i = 0; i < 512; i++)
        {
            rs.add(TransferRequest.write(r0, 0, s1, 0, 4L << 20));
        }
        b.submit(rs, T);
        final java.util.concurrent.CompletableFuture<List<TransferStatus>> f = b.future();
        e0.close();
        Assert.assertTrue(b.isClosed());
        Assert.assertTrue(f.isDone());
    }
}
