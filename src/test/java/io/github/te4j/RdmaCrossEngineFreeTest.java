package io.github.te4j;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import org.testng.Assert;
import org.testng.annotations.Test;

/**
 * A rank's NIC holds a raw registration of a buffer that belongs to a third engine of the same
 * process; that engine is closed (freeing the buffer) while a peer's signals and puts stream
 * into it. Every NIC of the process must stop touching the buffer before it is freed: the
 * writer's stream sees error CQEs or success, never a JVM crash, and the freed memory can no
 * longer be registered.
 */
public class RdmaCrossEngineFreeTest
{
    private static final int CYCLES = Integer.getInteger("te4j.crossEngineFree.cycles", 12);

    @Test(groups = "host", timeOut = 300_000)
    public void foreignEngineBufferFreedUnderTraffic()
    {
        int refused = 0;
        for (int cycle = 0; cycle < CYCLES; cycle++)
        {
            refused += cycle();
        }
        System.out.println("cross-engine free under traffic: " + CYCLES + " cycles, " + refused
            + " writer streams saw error CQEs, no crash");
    }

    @Test(groups = "host")
    public void freedBufferCannotBeRegistered()
    {
        try (TransferEngine owner = TransferEngine.builder().platform(Platform.HOST).build();
            TransferEngine user = TransferEngine.builder().platform(Platform.HOST).build())
        {
            final DeviceBuffer b = owner.getOrCreateP2pTransport(1).allocateBuffer(1 << 16);
            final long address = b.address();
            final RdmaTransport rdma = user.getOrCreateRdmaTransport("soft");
            rdma.initialize(1, 1);
            rdma.register(address + 4096, 4096);  // inside a live buffer: tied to it
            Assert.assertEquals(rdma.registeredAddress(), address + 4096);
            final IllegalArgumentException outside = Assert.expectThrows(IllegalArgumentException.class,
                () -> rdma.register(address + 4096, 1 << 16));
            Assert.assertTrue(outside.getMessage().contains("reaches outside"), outside.getMessage());
            b.close();
            Assert.assertEquals(rdma.registeredAddress(), 0, "the free withdrew the registration");
            final IllegalArgumentException freed = Assert.expectThrows(IllegalArgumentException.class,
                () -> rdma.register(address, 4096));
            Assert.assertTrue(freed.getMessage().contains("already freed"), freed.getMessage());
        }
    }

    @Test(groups = "host")
    public void peerMappingIsWithdrawnWhenItsWindowUnmapsIt()
    {
        try (TransferEngine e0 = TransferEngine.builder().platform(Platform.HOST).build();
            TransferEngine e1 = TransferEngine.builder().platform(Platform.HOST).build();
            TransferEngine user = TransferEngine.builder().platform(Platform.HOST).build())
        {
            final P2pTransport p0 = e0.getOrCreateP2pTransport(2);
            final P2pTransport p1 = e1.getOrCreateP2pTransport(2);
            final DeviceBuffer w0 = p0.allocateBuffer(1 << 16);
            final DeviceBuffer w1 = p1.allocateBuffer(1 << 16);
            final List<IpcHandle> handles = Arrays.asList(p0.exportHandle(w0), p1.exportHandle(w1));
            final CommContext ctx0 = p0.importPeerHandles(w0, 0, handles, 3);
            // Where rank 0's window maps rank 1's buffer (a mapping of its own, not rank 1's address).
            final java.nio.ByteBuffer table = java.nio.ByteBuffer.allocateDirect(16).order(java.nio.ByteOrder.nativeOrder());
            Assert.assertEquals(io.github.te4j.internal.NativeApi.copyMemory(Platform.HOST.nativeId(), 0,
                new org.bytedeco.javacpp.BytePointer(table).address(), ctx0.peerPtrsTablePtr(), 16), 0);
            final long mapped = table.getLong(8);
            Assert.assertNotEquals(mapped, 0L);
            Assert.assertNotEquals(mapped, w1.address(), "rank 1's buffer is reached through a mapping of it");
            final RdmaTransport rdma = user.getOrCreateRdmaTransport("soft");
            rdma.initialize(1, 1);
            rdma.register(mapped, 4096);
            Assert.assertEquals(rdma.registeredAddress(), mapped);
            ctx0.close();  // unmaps rank 1's buffer from this process
            Assert.assertEquals(rdma.registeredAddress(), 0L, "the unmap withdrew the registration");
            final IllegalArgumentException e = Assert.expectThrows(IllegalArgumentException.class,
                () -> rdma.register(mapped, 4096));
            Assert.assertTrue(e.getMessage().contains("already freed"), e.getMessage());
        }
    }

    /** One pair plus a third engine owning rank 1's registered memory; 1 when the writer saw an error CQE. */
    private static int cycle()
    {
        final long size = 1 << 20;
        try (TransferEngine e0 = TransferEngine.builder().platform(Platform.HOST).build();
            TransferEngine e1 = TransferEngine.builder().platform(Platform.HOST).build())
        {
            final TransferEngine owner = TransferEngine.builder().platform(Platform.HOST).build();
            final DeviceBuffer foreign = owner.getOrCreateP2pTransport(1).allocateBuffer(size);
            final TransferEngine[] engines = {e0, e1};
            final DeviceBuffer[] windows = new DeviceBuffer[2];
            final RdmaTransport[] rdma = new RdmaTransport[2];
            final CommContext[] ctx = new CommContext[2];
            for (int r = 0; r < 2; r++)
            {
                final P2pTransport p2p = engines[r].getOrCreateP2pTransport(2);
                windows[r] = p2p.allocateBuffer(size);
                rdma[r] = engines[r].getOrCreateRdmaTransport("soft");
                rdma[r].initialize(2, 1);
                if (r == 1)
                {
                    rdma[r].register(foreign.address(), foreign.size());  // another engine's memory
                }
                else
                {
                    rdma[r].register(windows[r]);
                }
                rdma[r].createQueuePairs();
                ctx[r] = p2p.importPeerHandles(windows[r], r, Arrays.asList(new IpcHandle[2]), 3, 1L << r);
            }
            final List<RdmaMetadata> all = List.of(rdma[0].localMetadata(), rdma[1].localMetadata());
            for (int r = 0; r < 2; r++)
            {
                rdma[r].connectPeers(r, MetadataBytes.of(all), 3);
            }
            // Rank 1 only receives: its window context does not route over RDMA (its registration
            // is not its window), rank 0's does.
            ctx[0].withRdma(rdma[0]);
            final OpStream writer = e0.createStream();
            for (int i = 0; i < 300; i++)
            {
                writer.put(ctx[0], 1, 4096 + 64L * i, windows[0], 0, 16 * 1024);
                writer.signal(ctx[0], 1, 4L * (i % 256), 1);
            }
            owner.close();  // frees the memory rank 1's NIC writes into, under the stream
            Assert.assertEquals(rdma[1].registeredAddress(), 0, "the free withdrew rank 1's registration");
            try
            {
                writer.synchronize(Duration.ofSeconds(60));
                return 0;
            }
            catch (final Te4jException e)
            {
                Assert.assertTrue(e.code() == Te4jException.Code.REMOTE_ERROR, "unexpected failure: " + e);
                return 1;
            }
        }
    }
}
