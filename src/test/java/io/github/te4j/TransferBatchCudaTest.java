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
 * Transfer batches on the CUDA platform, two engines in one process on GPU 0 (the batch kernel
 * over the other engine's segment, mapped like a peer's): random READ/WRITE batches verified
 * byte for byte against poison, a batch whose deadline has passed (every copy all or nothing),
 * and bad input refused by index. Skips where there is no usable GPU.
 */
public class TransferBatchCudaTest
{
    static final Duration T = Duration.ofSeconds(60);
    static final long AREA = 64L << 20;

    @Test(groups = "cuda", timeOut = 300_000)
    public void randomBatchesOnOneGpu()
    {
        final String why = DeviceMap.cudaUnavailableFor(1);
        if (why != null)
        {
            throw new SkipException(why);
        }
        final String space = "cuda-batch" + System.nanoTime();
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
            for (int round = 0; round < 3; round++)
            {
                final long seedSrc = Patterns.seed(round, 0, 1, 3);
                final long seedSeg = Patterns.seed(round, 1, 0, 4);
                Patterns.write(src, 0, AREA, seedSrc);
                dst.fill(0, AREA, Patterns.POISON);
                final List<BatchPlan.Item> plan = BatchPlan.make(seedSrc ^ 5, 300, AREA / 2, 16L << 20);
                seg.fill(0, AREA, Patterns.POISON);
                final List<BatchPlan.Item> writes = new ArrayList<>();
                final List<TransferRequest> reqs = new ArrayList<>();
                for (final BatchPlan.Item it : plan)
                {
                    if (it.opcode == TransferOpcode.READ)
                    {
                        seg.write(it.remoteOffset, BatchPlan.pattern(seedSeg, it.remoteOffset, (int) it.length));
                        reqs.add(TransferRequest.read(rd, it.localOffset, s1, it.remoteOffset, it.length));
                    }
                    else
                    {
                        writes.add(it);
                        reqs.add(TransferRequest.write(rs, it.localOffset, s1, it.remoteOffset, it.length));
                    }
                }
                try (TransferBatch b = a0.allocateBatch(reqs.size()))
                {
                    b.submit(reqs.subList(0, 100), T);
                    b.submit(reqs.subList(100, reqs.size()), T);
                    final List<TransferStatus> st = b.future().join();
                    for (int i = 0; i < st.size(); i++)
                    {
                        Assert.assertEquals(st.get(i).state(), TransferState.COMPLETED, "request " + i + ": " + st.get(i));
                    }
                }
                Assert.assertNull(BatchPlan.verifyArea(dst.read(0, (int) (AREA / 2)), plan, TransferOpcode.READ, true,
                    seedSeg, 0), "READ destinations, round " + round);
                final byte[] image = seg.read(0, (int) (AREA / 2));
                for (final BatchPlan.Item it : plan)
                {
                    if (it.opcode == TransferOpcode.READ)
                    {
                        java.util.Arrays.fill(image, (int) it.remoteOffset, (int) (it.remoteOffset + it.length),
                            Patterns.POISON);
                    }
                }
                Assert.assertNull(BatchPlan.verifyArea(image, writes, TransferOpcode.WRITE, false, seedSrc, 0),
                    "WRITE destinations, round " + round);
            }
            // A deadline already passed: each copy is all or nothing; TIMEOUT ones left their poison.
            dst.fill(0, 1 << 20, Patterns.POISON);
            try (TransferBatch b = a0.allocateBatch(256))
            {
                final List<TransferRequest> reqs = new ArrayList<>();
                for (int i = 0; i < 256; i++)
                {
                    reqs.add(TransferRequest.read(rd, i * 4096L, s1, i * 4096L, 4096));
                }
                b.submit(reqs, Duration.ZERO);
                final List<TransferStatus> st = b.await(T);
                for (int i = 0; i < st.size(); i++)
                {
                    final TransferState s = st.get(i).state();
                    Assert.assertTrue(s == TransferState.COMPLETED || s == TransferState.TIMEOUT, "request " + i + ": " + s);
                    if (s == TransferState.TIMEOUT)
                    {
                        Assert.assertNull(Patterns.verifyPoison(dst, i * 4096L, 4096), "request " + i);
                    }
                }
            }
            try (TransferBatch b = a0.allocateBatch(2))
            {
                final IndexOutOfBoundsException e = Assert.expectThrows(IndexOutOfBoundsException.class, () -> b.submit(
                    List.of(TransferRequest.write(rs, 0, s1, 0, 1), TransferRequest.write(rs, 0, s1, AREA - 1, 2)), T));
                Assert.assertTrue(e.getMessage().contains("request 1"), e.getMessage());
            }
        }
    }
}
