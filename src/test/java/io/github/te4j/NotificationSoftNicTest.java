package io.github.te4j;

import io.github.te4j.check.Patterns;
import io.github.te4j.exchange.HandleExchange;
import io.github.te4j.exchange.InMemorySegmentDirectory;
import io.github.te4j.rendezvous.FileExchange;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.testng.Assert;
import org.testng.annotations.AfterMethod;
import org.testng.annotations.BeforeMethod;
import org.testng.annotations.Test;

/**
 * Notifications over the software NIC, two engines in one process (loopback TCP): rank 0's
 * segment view of rank 1 is RDMA only, so every data WRITE, and every notification slot, is an
 * RDMA work request. The receiver checks each part's bytes when its notification arrives
 * (random data, poisoned destination), the order, and back-pressure read over RDMA.
 */
public class NotificationSoftNicTest
{
    static final Duration T = Duration.ofSeconds(30);
    static final long AREA = 8L << 20;
    static final int DEPTH = 8;

    private TransferEngine e0;
    private TransferEngine e1;
    private TransferAgent a0;
    private TransferAgent a1;
    private DeviceBuffer src0;
    private DeviceBuffer seg1;
    private RegisteredMemory r0;
    private SegmentHandle s1;
    private InMemorySegmentDirectory dir0;
    private InMemorySegmentDirectory dir1;

    @BeforeMethod(alwaysRun = true)
    public void setUp() throws Exception
    {
        final String space = "notifysoft" + System.nanoTime();
        e0 = TransferEngine.builder().platform(Platform.HOST).build();
        e1 = TransferEngine.builder().platform(Platform.HOST).build();
        final P2pTransport p0 = e0.getOrCreateP2pTransport(2);
        final P2pTransport p1 = e1.getOrCreateP2pTransport(2);
        a0 = e0.createTransferAgent(p0, "soft0");
        a1 = e1.createTransferAgent(p1, "soft1");
        src0 = p0.allocateBuffer(AREA);
        seg1 = p1.allocateBuffer(AREA);
        r0 = a0.registerLocalMemory(src0);
        a1.registerLocalMemory(seg1);
        final RdmaTransport n0 = e0.getOrCreateRdmaTransport("soft");
        final RdmaTransport n1 = e1.getOrCreateRdmaTransport("soft");
        n0.initialize(2, 1, 256);
        n1.initialize(2, 1, 256);
        n0.register(src0);
        n1.register(seg1);
        connectPair(n0, n1);
        a0.useRdma(n0);
        a1.useRdma(n1);
        a1.notifications();  // the area, registered with the NIC at publish
        dir0 = InMemorySegmentDirectory.open(space);
        dir1 = InMemorySegmentDirectory.open(space);
        a0.publishSegment(dir0);
        a1.publishSegment(dir1);
        s1 = a0.openSegment("soft1", dir0, T);
        Assert.assertTrue(s1.isRdma(), "rank 1's segment must be reached over the software NIC");
    }

    /** Connects two initialized transports of one process as ranks 0 and 1. */
    static void connectPair(final RdmaTransport n0, final RdmaTransport n1) throws Exception
    {
        final Path dir = Files.createTempDirectory("te4j-notify-rdma");
        final CompletableFuture<Void> other = CompletableFuture.runAsync(() ->
        {
            try (HandleExchange x1 = FileExchange.builder().directory(dir).rank(1).worldSize(2).defaultTimeout(T).build())
            {
                n1.connect(x1, T);
            }
        });
        try (HandleExchange x0 = FileExchange.builder().directory(dir).rank(0).worldSize(2).defaultTimeout(T).build())
        {
            n0.connect(x0, T);
        }
        other.get(30, TimeUnit.SECONDS);
    }

    @AfterMethod(alwaysRun = true)
    public void tearDown() throws Exception
    {
        for (final AutoCloseable c : new AutoCloseable[] {e0, e1, dir0, dir1})
        {
            if (c != null)
            {
                c.close();
            }
        }
    }

    /** 100 parts of random data, each with a notification; each part checked when its notification comes. */
    @Test(groups = "host", timeOut = 240_000)
    public void notificationsArriveInOrderAfterTheirDataOverTheSoftNic() throws Exception
    {
        final int parts = 100;
        final long slot = AREA / parts;
        seg1.fill(0, AREA, Patterns.POISON);
        final Notifications inbox = a1.notifications();
        final java.util.concurrent.atomic.AtomicReference<String> problem = new java.util.concurrent.atomic.AtomicReference<>();
        final Thread receiver = new Thread(() ->
        {
            try
            {
                for (int i = 0; i < parts; i++)
                {
                    final Notification n = inbox.take(T);
                    final ByteBuffer m = ByteBuffer.wrap(n.message());
                    final int index = m.getInt();
                    final long len = m.getLong();
                    if (index != i || !n.sender().equals("soft0") || n.size() != 12 + (i % 7) * 500)
                    {
                        problem.set("notification " + i + ": index " + index + " from " + n.sender() + ", " + n.size()
                            + " B");
                        return;
                    }
                    final String bad = Patterns.verify(seg1, i * slot, len, Patterns.seed(21, 0, 1, i));
                    if (bad != null)
                    {
                        problem.set("part " + i + " when its notification came: " + bad);
                        return;
                    }
                }
            }
            catch (final RuntimeException e)
            {
                problem.set("receiver: " + e);
            }
        }, "notification receiver");
        receiver.start();
        try (TransferBatch b = a0.allocateBatch(parts))
        {
            for (int i = 0; i < parts; i++)
            {
                final long len = 1 + Math.floorMod(Patterns.mix(i), slot);
                Patterns.write(src0, i * slot, len, Patterns.seed(21, 0, 1, i));
                final byte[] message = ByteBuffer.allocate(12 + (i % 7) * 500).putInt(i).putLong(len).array();
                Assert.assertEquals(b.submit(List.of(TransferRequest.write(r0, i * slot, s1, i * slot, len)), message, T),
                    i);
            }
            Assert.assertTrue(b.awaitDone(T));
        }
        receiver.join(120_000);
        Assert.assertNull(problem.get(), problem.get());
        Assert.assertEquals(inbox.poll(), Optional.empty());
    }

    /** The queue full over RDMA: the ninth notification fails at its deadline, and goes once the receiver took one. */
    @Test(groups = "host", timeOut = 120_000)
    public void fullQueueHoldsTheSenderBackOverTheSoftNic()
    {
        final Notifications inbox = a1.notifications();
        for (int i = 0; i < DEPTH; i++)
        {
            a0.sendNotification("soft1", new byte[] {(byte) i}, T);
        }
        seg1.fill(0, 4096, Patterns.POISON);
        try (TransferBatch b = a0.allocateBatch(2))
        {
            final Te4jTimeoutException e = Assert.expectThrows(Te4jTimeoutException.class, () -> b.submit(
                List.of(TransferRequest.write(r0, 0, s1, 0, 4096)), new byte[] {42}, Duration.ofMillis(300)));
            Assert.assertTrue(e.getMessage().contains("receive queue is full"), e.getMessage());
            Assert.assertEquals(b.size(), 0, "nothing of the part was submitted");
            Assert.assertNull(Patterns.verifyPoison(seg1, 0, 4096));
            Assert.assertEquals(inbox.take(T).message(), new byte[] {0});
            Patterns.write(src0, 0, 4096, 5);
            Assert.assertEquals(b.submit(List.of(TransferRequest.write(r0, 0, s1, 0, 4096)), new byte[] {42}, T), 0);
            for (int i = 1; i < DEPTH; i++)
            {
                Assert.assertEquals(inbox.take(T).message(), new byte[] {(byte) i});
            }
            Assert.assertEquals(inbox.take(T).message(), new byte[] {42});
            Assert.assertNull(Patterns.verify(seg1, 0, 4096, 5));
        }
    }

    /**
     * The ring over RDMA is the rank's: a new agent of rank 0 takes it over once the receiver
     * took what the closed one sent (delivered under the closed one's name), never before; and
     * one process cannot have two agents of one rank sending to the same receiver.
     */
    @Test(groups = "host", timeOut = 120_000)
    public void anotherAgentOfTheRankTakesTheRingOverOnceItIsTaken()
    {
        final Notifications inbox = a1.notifications();
        for (int i = 0; i < 3; i++)
        {
            a0.sendNotification("soft1", new byte[] {(byte) i}, T);
        }
        final RdmaTransport n0 = a0.rdma();
        final TransferAgent twin = e0.createTransferAgent(e0.getOrCreateP2pTransport(2), "soft0twin");
        twin.useRdma(n0);
        twin.publishSegment(dir0);
        final IllegalStateException twice = Assert.expectThrows(IllegalStateException.class,
            () -> twin.sendNotification("soft1", new byte[1], T));
        Assert.assertTrue(twice.getMessage().contains("one agent per rank"), twice.getMessage());
        a0.close();
        final Te4jTimeoutException early = Assert.expectThrows(Te4jTimeoutException.class,
            () -> twin.sendNotification("soft1", new byte[] {9}, Duration.ofMillis(300)));
        Assert.assertTrue(early.getMessage().contains("left 3 notification(s)"), early.getMessage());
        for (int i = 0; i < 3; i++)
        {
            final Notification n = inbox.take(T);
            Assert.assertEquals(n.sender(), "soft0");
            Assert.assertEquals(n.message(), new byte[] {(byte) i});
        }
        twin.sendNotification("soft1", new byte[] {9}, T);
        final Notification n = inbox.take(T);
        Assert.assertEquals(n.sender(), "soft0twin");
        Assert.assertEquals(n.message(), new byte[] {9});
        Assert.assertEquals(inbox.poll(), Optional.empty());
    }

    /**
     * The publication an mlx5 NIC is given (docs/MLX5.md: the slot's WRITE, then a fenced 8-byte
     * compare-and-swap of its sequence word, TransferBatch.submitPublication) reaches the NIC as
     * those two work requests, in that order: the software NIC, which executes no
     * compare-and-swap, places the WRITE's bytes and fails the second request with a local QP
     * operation error, leaving the word untouched. The work requests' bytes are pinned natively
     * (test_rdma_wqe_format, test_mlx5_backend).
     */
    @Test(groups = "host", timeOut = 120_000)
    public void aPublicationIsTheSlotWriteThenACompareAndSwap()
    {
        seg1.fill(0, 8192, Patterns.POISON);
        Patterns.write(src0, 0, 200, 77);
        try (TransferBatch b = a0.allocateBatch(4))
        {
            final TransferRequest slot = TransferRequest.write(r0, 0, s1, 4096 + 8, 200);
            final IllegalArgumentException misaligned = Assert.expectThrows(IllegalArgumentException.class,
                () -> b.submitPublication(slot, TransferRequest.write(r0, 4096, s1, 4100, 8), 0, 1, T));
            Assert.assertTrue(misaligned.getMessage().contains("8-byte aligned"), misaligned.getMessage());
            final IllegalArgumentException read = Assert.expectThrows(IllegalArgumentException.class,
                () -> b.submitPublication(slot, TransferRequest.read(r0, 4096, s1, 4096, 8), 0, 1, T));
            Assert.assertTrue(read.getMessage().contains("a WRITE and an 8-byte word"), read.getMessage());
            Assert.assertEquals(b.size(), 0, "refused before anything was submitted");

            final int first = b.submitPublication(slot, TransferRequest.write(r0, 4096, s1, 4096, 8), 0, 1, T);
            Assert.assertEquals(first, 0);
            Assert.assertEquals(b.size(), 2);
            Assert.assertTrue(b.awaitDone(T));
            Assert.assertEquals(b.status(0).state(), TransferState.COMPLETED, "the slot's WRITE: " + b.status(0));
            final TransferStatus swap = b.status(1);
            Assert.assertEquals(swap.state(), TransferState.FAILED, "the compare-and-swap: " + swap);
            Assert.assertTrue(String.valueOf(swap.cause()).contains("local QP operation error"), String.valueOf(swap));
        }
        Assert.assertNull(Patterns.verify(seg1, 4096 + 8, 200, 77), "the slot's bytes");
        Assert.assertNull(Patterns.verifyPoison(seg1, 4096, 8), "the sequence word is untouched");
    }
}
