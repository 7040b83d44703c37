package io.github.te4j;

import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.testng.Assert;
import org.testng.annotations.Test;

/**
 * Metadata bytes as connectPeers receives them from other ranks: the native decoder refuses a
 * truncated, foreign, wrong-version or damaged entry with a {@link BadHandleException} that names
 * the rank and what is wrong, and the transport stays usable afterwards.
 */
public class RdmaMetadataBytesTest
{
    private static byte[] changed(final byte[] good, final int at, final int xor)
    {
        final byte[] b = good.clone();
        b[at] ^= (byte)xor;
        return b;
    }

    private static void refused(final RdmaTransport rdma, final byte[] mine, final byte[] peer, final String rank,
        final String what)
    {
        final BadHandleException e = Assert.expectThrows(BadHandleException.class,
            () -> rdma.connectPeers(0, Arrays.asList(mine, peer), 3));
        Assert.assertTrue(e.getMessage().contains(rank), e.getMessage());
        Assert.assertTrue(e.getMessage().contains(what), e.getMessage());
    }

    @Test(groups = "host")
    public void malformedEntriesAreRefusedNamingTheRankAndTheField()
    {
        try (TransferEngine engine = TransferEngine.builder().platform(Platform.HOST).build())
        {
            final RdmaTransport rdma = engine.getOrCreateRdmaTransport("soft");
            rdma.initialize(2, 1);
            rdma.register(engine.getOrCreateP2pTransport(2).allocateBuffer(1 << 16));
            rdma.createQueuePairs();
            final byte[] mine = rdma.localMetadata().toBytes();
            // A well-formed peer entry to damage: this rank's own, moved to another port.
            final RdmaMetadata m = rdma.localMetadata();
            final byte[] peer = new RdmaMetadata(m.backend(), m.isRoce(), 2, 1, 0, m.lid() == 1 ? 2 : 1, m.raddr(),
                m.rkey(), m.registeredBytes(), 0, m.interfaceId(), new int[] {0x777, 0x778},
                new byte[RdmaMetadata.KEY_BYTES]).toBytes();

            refused(rdma, mine, Arrays.copyOf(peer, 20), "rank 1", "truncated");
            refused(rdma, mine, new byte[0], "rank 1", "truncated");
            refused(rdma, mine, Arrays.copyOf(peer, peer.length - 1), "rank 1", "length mismatch");
            refused(rdma, mine, changed(peer, 5, 3), "rank 1", "version 1");
            refused(rdma, mine, changed(peer, 0, 1), "rank 1", "magic");
            refused(rdma, mine, changed(peer, 30, 0x10), "rank 1", "checksum mismatch");
            refused(rdma, mine, ForgedHandles.withCrc(changed(peer, 6, 0x10)), "rank 1", "unknown backend");
            final byte[] longer = ForgedHandles.withCrc(Arrays.copyOf(peer, peer.length + 4));
            refused(rdma, mine, longer, "rank 1", "length mismatch");
            final Random rnd = new Random(7);
            for (int i = 0; i < 200; i++)
            {
                final int bit = rnd.nextInt(peer.length * 8);
                final byte[] flipped = changed(peer, bit / 8, 1 << (bit % 8));
                refused(rdma, mine, flipped, "rank 1", "RDMA metadata");
            }
            final byte[] junk = new byte[rnd.nextInt(300)];
            rnd.nextBytes(junk);
            refused(rdma, mine, junk, "rank 1", "RDMA metadata");
            // Another job's shape, well formed: refused as a disagreement, not as damage.
            final byte[] threeRanks = new RdmaMetadata(m.backend(), m.isRoce(), 3, 1, 0, 9, m.raddr(), m.rkey(),
                m.registeredBytes(), 0, m.interfaceId(), new int[] {1, 2, 3}, new byte[RdmaMetadata.KEY_BYTES])
                .toBytes();
            refused(rdma, mine, threeRanks, "rank 1", "3 ranks");
            // The own entry is decoded the same way, and must be this rank's current one.
            final BadHandleException own = Assert.expectThrows(BadHandleException.class,
                () -> rdma.connectPeers(0, Arrays.asList(changed(mine, 40, 1), peer), 3));
            Assert.assertTrue(own.getMessage().contains("own metadata (rank 0)"), own.getMessage());
            final BadHandleException other = Assert.expectThrows(BadHandleException.class,
                () -> rdma.connectPeers(0, Arrays.asList(peer, mine), 3));
            Assert.assertTrue(other.getMessage().contains("not this rank's current metadata"), other.getMessage());
            // Nothing above left the transport half-connected: the own rank still connects.
            rdma.connectPeers(0, Arrays.asList(mine, null), 1);
            Assert.assertEquals(rdma.localRank(), 0);
        }
    }

    @Test(groups = "host")
    public void theViewReadsTheNativeDecodersFields()
    {
        final RdmaMetadata m = RdmaApiTest.sample();
        final byte[] b = m.toBytes();
        Assert.assertEquals(RdmaMetadata.fromBytes(b).toBytes(), b);
        b[0] ^= 1;
        Assert.assertTrue(Assert.expectThrows(BadHandleException.class, () -> RdmaMetadata.fromBytes(b)).getMessage()
            .contains("magic"));
        final byte[] v = m.toBytes();
        v[5] = 9;
        Assert.assertTrue(Assert.expectThrows(BadHandleException.class, () -> RdmaMetadata.fromBytes(v)).getMessage()
            .contains("version 9"));
        final byte[] c = m.toBytes();
        c[c.length - 1] ^= 1;
        Assert.assertTrue(Assert.expectThrows(BadHandleException.class, () -> RdmaMetadata.fromBytes(c)).getMessage()
            .contains("checksum"));
        Assert.assertTrue(Assert.expectThrows(BadHandleException.class,
            () -> RdmaMetadata.fromBytes(Arrays.copyOf(m.toBytes(), 71))).getMessage().contains("truncated"));
        // A copy in, a copy out: the view cannot be changed through either array.
        final byte[] out = m.toBytes();
        out[8] = 0x7f;
        Assert.assertEquals(m.numRanks(), 2);
        Assert.assertEquals(List.of(m.qpns().length), List.of(6));
    }
}
