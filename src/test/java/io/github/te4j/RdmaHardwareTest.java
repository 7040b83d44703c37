package io.github.te4j;

import io.github.te4j.check.Patterns;
import io.github.te4j.exchange.InMemorySegmentDirectory;
import io.github.te4j.launcher.RankProcesses;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.testng.Assert;
import org.testng.SkipException;
import org.testng.annotations.Test;

/**
 * RDMA-host integration (group {@code rdma-hw}): two ranks over a real mlx5 NIC through the DevX
 * backend, the same checks as the software-NIC tests ({@link RdmaWorker}: put+signal 1 B .. 64 MiB,
 * many writers, ordering, ring wraparound, error CQEs and recovery), plus a second connect over
 * queue pairs that carried traffic (the NIC restarts them at WQE 0). The many-writer phase is
 * the mixed-transport case: every rank adds to its own counter (self route) and to the others'
 * (RDMA) on the same words, which only stays exact because the mlx5 backend sends the own
 * rank's adds through the loopback QP too ({@code TE4J_RDMA_ATOMICS=nic}, the default). Skips, naming the cause,
 * where the hardware backend cannot run (no rdma-core, no mlx5 device, DevX not permitted, port
 * down). {@code -Dte4j.rdmaDevice=mlx5_0} picks the device (default: the first mlx5 device).
 */
public class RdmaHardwareTest
{
    private static String filter()
    {
        return System.getProperty("te4j.rdmaDevice", "mlx5");
    }

    /** Opens the NIC once in this JVM (platform's device 0); skips with the cause when it cannot. */
    private static void requireNic(final Platform platform)
    {
        try (TransferEngine engine = TransferEngine.builder().platform(platform).build())
        {
            final RdmaTransport rdma = engine.getOrCreateRdmaTransport(filter());
            rdma.initialize(1, 1);
            if (!rdma.backend().equals("mlx5"))
            {
                throw new AssertionError("filter '" + filter() + "' gave backend " + rdma.backend());
            }
        }
        catch (final UnavailableException e)
        {
            throw new SkipException("no usable mlx5 RDMA NIC here: " + e.getMessage());
        }
    }

    @Test(groups = "rdma-hw", timeOut = 300_000)
    public void twoRanksOverMlx5() throws Exception
    {
        requireNic(Platform.HOST);
        final int port = RankProcesses.freePort();
        RdmaMultiProcessTest.runRanks(2, r -> RdmaMultiProcessTest.javaCommand(List.of(),
            RdmaMultiProcessTest.args(r, 2, port, "nic=" + filter(), "backend=mlx5",
                "sizes=1,4096,1048577,67108864", "ring=64", "reconnectTwice=true")));
    }

    /** GPU memory registered with the NIC (dma-buf or nvidia-peermem), WQEs posted by kernels. */
    @Test(groups = "rdma-hw", timeOut = 600_000)
    public void twoCudaRanksOverMlx5() throws Exception
    {
        final int n = Availability.cudaDeviceCount();
        if (n < 1)
        {
            throw new SkipException("needs a CUDA device, found " + n + ": " + Availability.describe());
        }
        requireNic(Platform.CUDA);
        final int port = RankProcesses.freePort();
        RdmaMultiProcessTest.runRanks(2, r -> RdmaMultiProcessTest.javaCommand(List.of(),
            RdmaMultiProcessTest.args(r, 2, port, "platform=cuda", "device=" + (r % n), "nic=" + filter(),
                "backend=mlx5", "sizes=" + RdmaMultiProcessTest.ALL_SIZES, "ring=64", "writers=4", "writes=200",
                "reconnectTwice=true")));
    }

    /**
     * Notifications over the NIC (docs/MLX5.md, "Notifications over mlx5"): two agents of one
     * process, each with its own transport on the device, the receiver's segment reached over
     * RDMA only. 40 parts of random data into a poisoned segment, each with a notification whose
     * slot's sequence word is the fenced compare-and-swap; more than the ring holds, so ring
     * positions wrap and the sender waits for room. Each part's bytes are checked when its
     * notification is taken, in submit order.
     */
    @Test(groups = "rdma-hw", timeOut = 300_000)
    public void notificationsOverMlx5() throws Exception
    {
        requireNic(Platform.HOST);
        final Duration t = Duration.ofSeconds(30);
        final long bytes = 4L << 20;
        final String space = "notifymlx5" + System.nanoTime();
        try (TransferEngine e0 = TransferEngine.builder().platform(Platform.HOST).build();
            TransferEngine e1 = TransferEngine.builder().platform(Platform.HOST).build();
            InMemorySegmentDirectory dir0 = InMemorySegmentDirectory.open(space);
            InMemorySegmentDirectory dir1 = InMemorySegmentDirectory.open(space))
        {
            final P2pTransport p0 = e0.getOrCreateP2pTransport(2);
            final P2pTransport p1 = e1.getOrCreateP2pTransport(2);
            final TransferAgent a0 = e0.createTransferAgent(p0, "hw0");
            final TransferAgent a1 = e1.createTransferAgent(p1, "hw1");
            final DeviceBuffer src0 = p0.allocateBuffer(bytes);
            final DeviceBuffer seg1 = p1.allocateBuffer(bytes);
            final RegisteredMemory r0 = a0.registerLocalMemory(src0);
            a1.registerLocalMemory(seg1);
            final RdmaTransport n0 = e0.getOrCreateRdmaTransport(filter());
            final RdmaTransport n1 = e1.getOrCreateRdmaTransport(filter());
            n0.initialize(2, 1, 256);
            n1.initialize(2, 1, 256);
            n0.register(src0);
            n1.register(seg1);
            NotificationSoftNicTest.connectPair(n0, n1);
            a0.useRdma(n0);
            a1.useRdma(n1);
            final Notifications inbox = a1.notifications();
            a0.publishSegment(dir0);
            a1.publishSegment(dir1);
            final SegmentHandle s1 = a0.openSegment("hw1", dir0, t);
            Assert.assertTrue(s1.isRdma(), "rank 1's segment must be reached over the NIC");
            seg1.fill(0, bytes, Patterns.POISON);
            final int parts = 40;
            final long slot = bytes / parts;
            try (TransferBatch b = a0.allocateBatch(parts))
            {
                for (int i = 0; i < parts; i++)
                {
                    final long len = 1 + Math.floorMod(Patterns.mix(i), slot);
                    Patterns.write(src0, i * slot, len, Patterns.seed(31, 0, 1, i));
                    final byte[] message = ByteBuffer.allocate(12 + (i % 5) * 800).putInt(i).putLong(len).array();
                    b.submit(List.of(TransferRequest.write(r0, i * slot, s1, i * slot, len)), message, t);
                    if (i % 8 == 7)
                    {
                        takeAndCheck(inbox, seg1, slot, i - 7, i, t);  // room for the next eight
                    }
                }
                Assert.assertTrue(b.awaitDone(t));
            }
            a0.sendNotification("hw1", new byte[] {7}, t);
            final Notification alone = inbox.take(t);
            Assert.assertEquals(alone.sender(), "hw0");
            Assert.assertEquals(alone.message(), new byte[] {7});
            Assert.assertEquals(inbox.poll(), Optional.empty());
        }
    }

    /** Takes notifications from..to (inclusive) in order and checks each part's bytes as it comes. */
    private static void takeAndCheck(final Notifications inbox, final DeviceBuffer seg, final long slot, final int from,
        final int to, final Duration t)
    {
        for (int i = from; i <= to; i++)
        {
            final Notification n = inbox.take(t);
            final ByteBuffer m = ByteBuffer.wrap(n.message());
            Assert.assertEquals(m.getInt(), i, "notification order");
            Assert.assertEquals(n.sender(), "hw0");
            Assert.assertNull(Patterns.verify(seg, i * slot, m.getLong(), Patterns.seed(31, 0, 1, i)),
                "part " + i + " when its notification came");
        }
    }
}
