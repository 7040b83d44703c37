package io.github.te4j;

import io.github.te4j.launcher.RankProcesses;
import java.util.List;
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
}
