package io.github.te4j;

import io.github.te4j.check.Patterns;
import io.github.te4j.exchange.InMemorySegmentDirectory;
import io.github.te4j.launcher.DeviceMap;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.testng.Assert;
import org.testng.SkipException;
import org.testng.annotations.Test;

/**
 * Notifications on the CUDA platform, both ranks on GPU 0: in one process (two engines, the
 * batch kernel writing into the other engine's device segment through its IPC mapping) and in
 * two processes ({@link NotificationWorker} with platform=cuda). The receiver checks, when each
 * notification arrives, that its part's bytes are in device memory (random data, poisoned
 * destination). Skips where there is no usable GPU.
 */
public class NotificationCudaTest
{
    static final Duration T = Duration.ofSeconds(60);
    static final long AREA = 64L << 20;

    private static void requireGpu()
    {
        final String why = DeviceMap.cudaUnavailableFor(1);
        if (why != null)
        {
            throw new SkipException(why);
        }
    }

    @Test(groups = "cuda", timeOut = 300_000)
    public void notificationsArriveAfterTheirDataOnOneGpu()
    {
        requireGpu();
        final String space = "cuda-notify" + System.nanoTime();
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
            final DeviceBuffer seg = p1.allocateBuffer(AREA);
            final RegisteredMemory rs = a0.registerLocalMemory(src);
            a1.registerLocalMemory(seg);
            final Notifications inbox = a1.notifications();
            a0.publishSegment(d0);
            a1.publishSegment(d1);
            final SegmentHandle s1 = a0.openSegment("gpu1", d0, T);
            seg.fill(0, AREA, Patterns.POISON);
            final int parts = 64;
            final long slot = AREA / parts;
            try (TransferBatch b = a0.allocateBatch(parts * 16))
            {
                for (int i = 0; i < parts; i++)
                {
                    // 16 blocks per part, the layer shape of a KV-cache handoff.
                    final List<TransferRequest> part = new java.util.ArrayList<>();
                    final long block = slot / 16;
                    Patterns.write(src, i * slot, slot, Patterns.seed(31, 0, 1, i));
                    for (int k = 0; k < 16; k++)
                    {
                        part.add(TransferRequest.write(rs, i * slot + k * block, s1, i * slot + k * block, block));
                    }
                    b.submit(part, ByteBuffer.allocate(4).putInt(i).array(), T);
                    if (i % 8 == 7)
                    {
                        // The queue holds 8: take them here, each checked against device memory on arrival.
                        for (int j = i - 7; j <= i; j++)
                        {
                            final Notification n = inbox.take(T);
                            Assert.assertEquals(ByteBuffer.wrap(n.message()).getInt(), j, "order");
                            Assert.assertEquals(n.sender(), "gpu0");
                            Assert.assertNull(Patterns.verify(seg, j * slot, slot, Patterns.seed(31, 0, 1, j)),
                                "part " + j + " when its notification came");
                        }
                    }
                }
                Assert.assertTrue(b.awaitDone(T));
            }
            Assert.assertEquals(inbox.poll(), Optional.empty());
        }
    }

    @Test(groups = "cuda", timeOut = 300_000)
    public void notificationsAcrossTwoProcessesOnOneGpu() throws Exception
    {
        requireGpu();
        NotificationMultiProcessTest.run("stream", "parts=64", "platform=cuda");
    }
}
