package io.github.te4j;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import org.testng.Assert;
import org.testng.annotations.Test;

/**
 * A rank frees its RDMA-registered window while a peer's writes and atomics into it are in
 * flight (found by the API fuzzer: a JVM crash in the NIC's responder, which had checked the key
 * just before the free). The free must wait for accesses already past their key check; later
 * ones fail as error CQEs at the writer, never as an access to freed memory.
 */
public class RdmaFreeUnderTrafficTest
{
    private static final int CYCLES = Integer.getInteger("te4j.freeUnderTraffic.cycles", 40);

    @Test(groups = "host", timeOut = 300_000)
    public void windowFreedUnderRemoteWritesAndAtomics()
    {
        int refused = 0;
        for (int cycle = 0; cycle < CYCLES; cycle++)
        {
            refused += cycle();
        }
        System.out.println("free under traffic: " + CYCLES + " cycles, " + refused + " writer streams saw error CQEs");
    }

    /** One pair; returns 1 when the writer's stream reported the (expected) error. */
    private static int cycle()
    {
        final long size = 1 << 20;
        try (TransferEngine e0 = TransferEngine.builder().platform(Platform.HOST).build();
            TransferEngine e1 = TransferEngine.builder().platform(Platform.HOST).build())
        {
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
                rdma[r].register(windows[r]);
                rdma[r].createQueuePairs();
                ctx[r] = p2p.importPeerHandles(windows[r], r, Arrays.asList(new IpcHandle[2]), 3, 1L << r);
            }
            final List<RdmaMetadata> all = List.of(rdma[0].localMetadata(), rdma[1].localMetadata());
            for (int r = 0; r < 2; r++)
            {
                rdma[r].connectPeers(r, MetadataBytes.of(all), 3);
                ctx[r].withRdma(rdma[r]);
            }
            final OpStream writer = e0.createStream();
            for (int i = 0; i < 300; i++)
            {
                writer.put(ctx[0], 1, 4096 + 64L * i, windows[0], 0, 64 * 1024);
                writer.signal(ctx[0], 1, 4L * (i % 256), 1);
            }
            windows[1].close();  // rank 1 frees its window while rank 0's stream still runs
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
