package io.github.te4j;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import org.testng.Assert;
import org.testng.annotations.Test;

/**
 * The Java RDMA API in one process: the metadata encoding and its validation, argument checks,
 * call-order errors, and close order. No multi-rank traffic (see {@link RdmaMultiProcessTest}).
 */
public class RdmaApiTest
{
    static RdmaMetadata sample()
    {
        return new RdmaMetadata(1, true, 2, 3, 0, 40000, 0x7f0012340000L, 0x1234, 1 << 20, 0,
            0x0000ffff7f000001L, new int[] {0x100, 0x101, 0x102, 0x103, 0x104, 0x105});
    }

    @Test(groups = "host")
    public void metadataRoundTrip()
    {
        final RdmaMetadata m = sample();
        final RdmaMetadata back = RdmaMetadata.fromBytes(m.toBytes());
        Assert.assertEquals(back.toBytes(), m.toBytes());
        Assert.assertEquals(back.qpns(), m.qpns());
        Assert.assertEquals(back.lid(), 40000);
        Assert.assertEquals(back.interfaceId(), 0x0000ffff7f000001L);
        Assert.assertTrue(back.isRoce());
        // Explicit layout: magic, version, backend, flags at fixed offsets, big-endian.
        final byte[] b = m.toBytes();
        Assert.assertEquals(Arrays.copyOf(b, 8), new byte[] {0x54, 0x45, 0x34, 0x4d, 0, 2, 1, 1});
        Assert.assertEquals(b.length, RdmaMetadata.HEADER_BYTES + 4 * 6 + 4 + 4);  // qpns, key length 0, CRC
    }

    @Test(groups = "host")
    public void metadataRejectsCorruption()
    {
        final byte[] good = sample().toBytes();
        Assert.assertThrows(BadHandleException.class, () -> RdmaMetadata.fromBytes(null));
        Assert.assertThrows(BadHandleException.class, () -> RdmaMetadata.fromBytes(Arrays.copyOf(good, 20)));
        Assert.assertThrows(BadHandleException.class, () -> RdmaMetadata.fromBytes(Arrays.copyOf(good, good.length - 1)));
        for (int i = 0; i < good.length; i++)
        {
            final byte[] bad = good.clone();
            bad[i] ^= 0x40;
            final int at = i;
            Assert.assertThrows("flipped byte " + at, BadHandleException.class, () -> RdmaMetadata.fromBytes(bad));
        }
        final byte[] version = good.clone();
        version[5] = 1;  // the layout before the NIC key
        final BadHandleException e = Assert.expectThrows(BadHandleException.class, () -> RdmaMetadata.fromBytes(version));
        Assert.assertTrue(e.getMessage().contains("version 1"), e.getMessage());
    }

    @Test(groups = "host")
    public void metadataRejectsValuesNoRankSends()
    {
        final RdmaMetadata m = sample();
        // Each forgery keeps a valid checksum: only the value checks can refuse it.
        final int[][] fields = {{ForgedMetadata.RKEY, 0}, {ForgedMetadata.QPNS, 0}, {ForgedMetadata.QPNS, 0x1000000},
            {ForgedMetadata.LID, 0}, {ForgedMetadata.LID, 65536}, {ForgedMetadata.GID_INDEX, 1},
            {ForgedMetadata.RESERVED, 1}};
        for (final int[] f : fields)
        {
            final byte[] b = m.toBytes();
            java.nio.ByteBuffer.wrap(b).putInt(f[0], f[1]);
            Assert.assertThrows("field at " + f[0] + " = " + f[1], BadHandleException.class,
                () -> RdmaMetadata.fromBytes(ForgedHandles.withCrc(b)));
        }
        final long[][] longs = {{ForgedMetadata.RADDR, 0}, {ForgedMetadata.RADDR, -1},
            {ForgedMetadata.REGISTERED, 0}, {ForgedMetadata.PREFIX, 1}, {ForgedMetadata.IFID, 0x0000ffffe0000001L},
            {ForgedMetadata.IFID, 0x0000ffff00000001L}, {ForgedMetadata.IFID, 0xfe80000000000001L}};
        for (final long[] f : longs)
        {
            final byte[] b = m.toBytes();
            java.nio.ByteBuffer.wrap(b).putLong((int)f[0], f[1]);
            Assert.assertThrows("field at " + f[0] + " = 0x" + Long.toHexString(f[1]), BadHandleException.class,
                () -> RdmaMetadata.fromBytes(ForgedHandles.withCrc(b)));
        }
        Assert.assertEquals(m.endpoint(), "127.0.0.1:40000");
    }

    @Test(groups = "host")
    public void registrationsStayInsideThisEnginesBuffers()
    {
        try (TransferEngine engine = TransferEngine.builder().platform(Platform.HOST).build();
            TransferEngine other = TransferEngine.builder().platform(Platform.HOST).build())
        {
            final RdmaTransport rdma = engine.getOrCreateRdmaTransport("soft");
            rdma.initialize(1, 1);
            final DeviceBuffer window = engine.getOrCreateP2pTransport(1).allocateBuffer(1 << 16);
            final DeviceBuffer foreign = other.getOrCreateP2pTransport(1).allocateBuffer(1 << 16);
            // Another engine's buffer: its free, by that engine, withdraws the registration here too.
            rdma.register(foreign);
            Assert.assertEquals(rdma.registeredAddress(), foreign.address());
            foreign.close();
            Assert.assertEquals(rdma.registeredAddress(), 0L);
            Assert.assertThrows(IllegalArgumentException.class, () -> rdma.register(window.address(), window.size() + 1));
            Assert.assertThrows(IllegalArgumentException.class, () -> rdma.register(window.address() - 8, 64));
            rdma.register(window.address() + 64, 4096);
            rdma.register(window);
            rdma.createQueuePairs();
            final RdmaMetadata before = rdma.localMetadata();
            rdma.createQueuePairs();  // again: recreated (new QP numbers), never freed under the NIC
            final RdmaMetadata mine = rdma.localMetadata();
            Assert.assertNotEquals(mine.qpns(), before.qpns());
            // The own entry must be current: metadata from before the recreation is refused.
            Assert.assertThrows(BadHandleException.class, () -> rdma.connectPeers(0, MetadataBytes.of(List.of(before)), 1));
            rdma.connectPeers(0, MetadataBytes.of(List.of(mine)), 1);
            Assert.assertEquals(rdma.lostPeers(), 0L);
            Assert.assertEquals(rdma.peerTimeout(), Duration.ofMillis(RdmaTransport.DEFAULT_PEER_TIMEOUT_MILLIS));
            Assert.assertThrows(IllegalArgumentException.class, () -> rdma.peerTimeout(Duration.ofMillis(999)));
            rdma.peerTimeout(Duration.ofSeconds(3));
            Assert.assertEquals(rdma.peerTimeout(), Duration.ofSeconds(3));
        }
    }

    @Test(groups = "host")
    public void argumentsAndCallOrder()
    {
        try (TransferEngine engine = TransferEngine.builder().platform(Platform.HOST).build())
        {
            Assert.assertThrows(IllegalArgumentException.class, () -> engine.getOrCreateRdmaTransport(null));
            Assert.assertThrows(IllegalArgumentException.class, () -> engine.getOrCreateRdmaTransport("soft x"));
            final RdmaTransport rdma = engine.getOrCreateRdmaTransport("soft");
            Assert.assertSame(engine.getOrCreateRdmaTransport("soft"), rdma);
            Assert.assertThrows(IllegalArgumentException.class, () -> engine.getOrCreateRdmaTransport("soft@127.0.0.1"));
            Assert.assertThrows(IllegalStateException.class, rdma::createQueuePairs);
            Assert.assertThrows(IllegalStateException.class, rdma::localMetadata);
            Assert.assertThrows(IllegalArgumentException.class, () -> rdma.initialize(0, 1));
            Assert.assertThrows(IllegalArgumentException.class, () -> rdma.initialize(2, 0));
            Assert.assertThrows(IllegalArgumentException.class, () -> rdma.initialize(2, 1, 3));
            rdma.initialize(1, 1, 16);
            Assert.assertThrows(IllegalStateException.class, () -> rdma.initialize(1, 1));
            Assert.assertThrows(IllegalArgumentException.class, () -> rdma.register(0, 64));
            Assert.assertThrows(IllegalArgumentException.class, () -> rdma.register(4096, 0));
            Assert.assertThrows(IllegalArgumentException.class, () -> rdma.qpState(5));
            Assert.assertThrows(IllegalArgumentException.class, () -> rdma.connectPeers(0, null, 1));
            final P2pTransport p2p = engine.getOrCreateP2pTransport(1);
            final DeviceBuffer window = p2p.allocateBuffer(1 << 16);
            final CommContext ctx = p2p.importPeerHandles(window, 0, Arrays.asList((IpcHandle)null), 1L);
            // Not connected yet: refused with the fix named.
            Assert.assertThrows(IllegalArgumentException.class, () -> ctx.withRdma(rdma));
            rdma.register(window);
            rdma.createQueuePairs();
            final RdmaMetadata mine = rdma.localMetadata();
            Assert.assertEquals(mine.registeredBytes(), 1 << 16);
            Assert.assertThrows(IllegalArgumentException.class,
                () -> rdma.connectPeers(0, MetadataBytes.of(Arrays.asList((RdmaMetadata)null)), 1));
            rdma.connectPeers(0, MetadataBytes.of(List.of(mine)), 1);
            final int unfilled = ctx.commCtxVersion();
            Assert.assertSame(ctx.withRdma(rdma), ctx);
            final int filled = ctx.commCtxVersion();
            Assert.assertNotEquals(filled, unfilled, "filling the RDMA tables makes launches copy the CommCtx again");
            Assert.assertSame(ctx.rdma(), rdma);
            Assert.assertFalse(ctx.routesOverRdma(0), "the own rank is never routed over RDMA");
            Assert.assertFalse(rdma.qpState(0).inError());
            Assert.assertTrue(rdma.statistics().containsKey("doorbells"));
            // Closing the transport detaches it from the context; the context stays usable locally.
            rdma.close();
            Assert.assertNull(ctx.rdma());
            Assert.assertNotEquals(ctx.commCtxVersion(), filled, "clearing the tables does too");
            Assert.assertThrows(ClosedException.class, rdma::localMetadata);
            Assert.assertNotSame(engine.getOrCreateRdmaTransport("soft"), rdma);
        }
    }

    @Test(groups = "host")
    public void mlx5FilterWithoutHardwareNamesTheCause()
    {
        // Each build has its own answer: built without rdma-core's headers, it says so and how to
        // fix that; built with them, it names why no mlx5 device is usable here and the fix.
        final String built = Availability.report().get("rdma.mlx5.built");
        Assert.assertTrue("true".equals(built) || "false".equals(built), "rdma.mlx5.built in the availability report: " + built);
        try (TransferEngine engine = TransferEngine.builder().platform(Platform.HOST).build())
        {
            try
            {
                engine.getOrCreateRdmaTransport("mlx5_nonexistent");
                Assert.fail("an mlx5 transport was made without a working DevX backend");
            }
            catch (final UnavailableException e)
            {
                final String m = e.getMessage();
                Assert.assertTrue(m.contains("mlx5"), m);
                if ("false".equals(built))
                {
                    Assert.assertTrue(m.contains("te4j was built without rdma-core headers") && m.contains("rebuild"), m);
                }
                else
                {
                    Assert.assertFalse(m.contains("built without"), m);
                    Assert.assertTrue(m.contains("fix") || m.contains("install") || m.contains("no mlx5"), m);
                }
            }
        }
    }
}
