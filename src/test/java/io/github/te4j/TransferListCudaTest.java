package io.github.te4j;

import io.github.te4j.check.Patterns;
import io.github.te4j.exchange.InMemorySegmentDirectory;
import io.github.te4j.launcher.DeviceMap;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.testng.Assert;
import org.testng.SkipException;
import org.testng.annotations.Test;

/**
 * Transfer lists on the CUDA platform, two engines in one process on GPU 0 (the list kernel over
 * the other engine's segment, mapped like a peer's): a random list of READs and WRITEs reposted
 * with its sources changed between posts, ranges, cancel (every copy all or nothing, cancelled
 * ones untouched, the next post whole), a post after the memory went away, and 4096 x 4 KiB
 * reposted many times. Every destination poisoned and checked byte for byte. Skips where there
 * is no usable GPU.
 */
public class TransferListCudaTest
{
    static final Duration T = Duration.ofSeconds(60);
    static final long AREA = 64L << 20;

    @Test(groups = "cuda", timeOut = 300_000)
    public void listsOnOneGpu()
    {
        final String why = DeviceMap.cudaUnavailableFor(1);
        if (why != null)
        {
            throw new SkipException(why);
        }
        final String space = "cuda-list" + System.nanoTime();
        try (TransferEngine e0 = TransferEngine.builder().platform(Platform.CUDA).device(0).build();
            TransferEngine e1 = TransferEngine.builder().platform(Platform.CUDA).device(0).build();
            InMemorySegmentDirectory d0 = InMemorySegmentDirectory.open(space);
            InMemorySegmentDirectory d1 = InMemorySegmentDirectory.open(space))
        {
            final P2pTransport p0 = e0.getOrCreateP2pTransport(2);
            final P2pTransport p1 = e1.getOrCreateP2pTransport(2);
            final TransferAgent a0 = e0.createTransferAgent(p0, "gpu0");
            final TransferAgent a1 = e1.createTransferAgent(p1, "gpu1");
            final DeviceBuffer src = p0.allocateBuffer(AREA);
            final DeviceBuffer dst = p0.allocateBuffer(AREA);
            final DeviceBuffer seg = p1.allocateBuffer(AREA);
            final RegisteredMemory rs = a0.registerLocalMemory(src);
            final RegisteredMemory rd = a0.registerLocalMemory(dst);
            a1.registerLocalMemory(seg);
            a1.publishSegment(d1);
            final SegmentHandle s1 = a0.openSegment("gpu1", d0, T);
            // 16 MiB requests: several chunks each, so the per-copy decision words are exercised.
            final List<BatchPlan.Item> plan = BatchPlan.make(Patterns.seed(9, 0, 1, 3), 300, AREA / 2, 16L << 20);
            try (TransferList list = a0.prepareList(TransferListTest.descriptors(plan, rs, rd, s1)))
            {
                final int[][] ranges = {{0, 300}, {0, 300}, {17, 18}, {100, 250}, {0, 300}, {299, 300}};
                for (int round = 0; round < ranges.length; round++)
                {
                    final long seedSrc = Patterns.seed(round, 0, 1, 13);
                    final long seedSeg = Patterns.seed(round, 1, 0, 14);
                    stage(plan, src, dst, seg, seedSrc, seedSeg);
                    final int from = ranges[round][0];
                    final int to = ranges[round][1];
                    final List<TransferStatus> st = list.post(from, to, T).await(T);
                    for (int i = 0; i < st.size(); i++)
                    {
                        Assert.assertEquals(st.get(i).state(), TransferState.COMPLETED, "request " + (from + i));
                    }
                    verify(plan, plan.subList(from, to), dst, seg, seedSrc, seedSeg, "round " + round);
                }
                // Cancel right after the post: each request all or nothing; the next post runs whole.
                for (int round = 0; round < 3; round++)
                {
                    stage(plan, src, dst, seg, 100 + round, 200 + round);
                    final TransferPost p = list.post(T);
                    p.cancel();
                    final List<TransferStatus> st = p.await(T);
                    final List<BatchPlan.Item> landed = new ArrayList<>();
                    for (int i = 0; i < st.size(); i++)
                    {
                        final TransferState s = st.get(i).state();
                        Assert.assertTrue(s == TransferState.COMPLETED || s == TransferState.CANCELLED, "request " + i
                            + ": " + s);
                        if (s == TransferState.COMPLETED)
                        {
                            landed.add(plan.get(i));
                        }
                    }
                    verify(plan, landed, dst, seg, 100 + round, 200 + round, "cancelled round " + round);
                    stage(plan, src, dst, seg, 300 + round, 400 + round);
                    final List<TransferStatus> again = list.post(T).await(T);
                    again.forEach(s -> Assert.assertEquals(s.state(), TransferState.COMPLETED));
                    verify(plan, plan, dst, seg, 300 + round, 400 + round, "after the cancel, round " + round);
                }
            }
            // The bench's shape: 4096 x 4 KiB WRITEs, reposted 200 times, the source changed each 50.
            final int n = 4096;
            final TransferDescriptors blocks = new TransferDescriptors(n);
            for (int i = 0; i < n; i++)
            {
                blocks.write(rs, i * 4096L, s1, (long) ((i * 2654435761L) % 8192) * 4096L, 4096);
            }
            try (TransferList list = a0.prepareList(blocks))
            {
                for (int round = 0; round < 200; round++)
                {
                    if (round % 50 == 0)
                    {
                        Patterns.write(src, 0, n * 4096L, 500 + round);
                        seg.fill(0, AREA, Patterns.POISON);
                    }
                    final TransferPost p = list.post(T);
                    Assert.assertTrue(p.awaitDone(T), "round " + round);
                    if (round % 50 == 49)
                    {
                        Assert.assertEquals(p.statuses().get(n - 1).state(), TransferState.COMPLETED);
                        final long seed = 500 + round - 49;
                        for (int i = 0; i < n; i += 97)
                        {
                            final long remote = (long) ((i * 2654435761L) % 8192) * 4096L;
                            Assert.assertEquals(seg.read(remote, 4096), BatchPlan.pattern(seed, i * 4096L, 4096),
                                "block " + i + ", round " + round);
                        }
                    }
                }
            }
            // Memory unregistered after prepare: the next post names it.
            final TransferDescriptors one = new TransferDescriptors(1);
            one.read(rd, 0, s1, 0, 4096);
            try (TransferList list = a0.prepareList(one))
            {
                list.post(T).await(T);
                a0.unregisterLocalMemory(rd);
                final IllegalStateException e = Assert.expectThrows(IllegalStateException.class, () -> list.post(T));
                Assert.assertTrue(e.getMessage().contains("unregistered"), e.getMessage());
            }
        }
    }

    private static void stage(final List<BatchPlan.Item> plan, final DeviceBuffer src, final DeviceBuffer dst,
        final DeviceBuffer seg, final long seedSrc, final long seedSeg)
    {
        Patterns.write(src, 0, AREA, seedSrc);
        dst.fill(0, AREA, Patterns.POISON);
        seg.fill(0, AREA, Patterns.POISON);
        for (final BatchPlan.Item it : plan)
        {
            if (it.opcode == TransferOpcode.READ)
            {
                seg.write(it.remoteOffset, BatchPlan.pattern(seedSeg, it.remoteOffset, (int) it.length));
            }
        }
    }

    private static void verify(final List<BatchPlan.Item> plan, final List<BatchPlan.Item> landed,
        final DeviceBuffer dst, final DeviceBuffer seg, final long seedSrc, final long seedSeg, final String what)
    {
        Assert.assertNull(BatchPlan.verifyArea(dst.read(0, (int) (AREA / 2)), landed, TransferOpcode.READ, true,
            seedSeg, 0), what + ": READ destinations");
        final byte[] image = seg.read(0, (int) (AREA / 2));
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
}
