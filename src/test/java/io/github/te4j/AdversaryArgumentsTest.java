package io.github.te4j;

import org.testng.Assert;
import org.testng.annotations.Test;

/**
 * Valid-looking input a hostile caller can pass: the 5-argument put with a null context (the
 * same exception as every other method's), and a queue-pair shape whose rings would commit
 * gigabytes of NIC control memory (refused up front by a documented cap, nothing allocated).
 */
public class AdversaryArgumentsTest
{
    @Test(groups = "host")
    public void fiveArgumentPutWithNullContextIsAnIllegalArgument()
    {
        try (TransferEngine engine = TransferEngine.builder().platform(Platform.HOST).build())
        {
            final OpStream s = engine.createStream();
            final IllegalArgumentException e = Assert.expectThrows(IllegalArgumentException.class,
                () -> s.put(null, 0, 0, 0, 8));
            Assert.assertEquals(e.getMessage(), "ctx is null");
        }
    }

    @Test(groups = "host")
    public void queuePairShapesPastTheControlMemoryCapAreRefused()
    {
        try (TransferEngine engine = TransferEngine.builder().platform(Platform.HOST).build())
        {
            final RdmaTransport rdma = engine.getOrCreateRdmaTransport("soft");
            // 64 x 1024 QPs of 2048 slots: about 17 GiB of rings and CQs.
            final IllegalArgumentException e = Assert.expectThrows(IllegalArgumentException.class,
                () -> rdma.initialize(64, 1024, 2048));
            Assert.assertTrue(e.getMessage().contains("over the cap of " + RdmaTransport.MAX_RING_SLOTS), e.getMessage());
            Assert.assertEquals(rdma.numRanks(), 0, "nothing was initialized");
            // The largest default-ring shape under the cap is accepted.
            final int qps = (int)Math.min(1024, RdmaTransport.MAX_RING_SLOTS / (64L * RdmaTransport.DEFAULT_RING));
            rdma.initialize(64, qps);
            Assert.assertEquals(rdma.qpsPerRank(), qps);
        }
    }
}
