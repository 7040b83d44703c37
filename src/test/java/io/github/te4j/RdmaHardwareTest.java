package io.github.te4j;

import io.github.te4j.launcher.RankProcesses;
import java.util.List;
import org.testng.SkipException;
import org.testng.annotations.Test;

/**
 * RDMA-host integration (group {@code rdma-hw}): two ranks over a real mlx5 NIC, the same
 * checks as the software-NIC tests ({@link RdmaWorker}). Skips, naming the cause, where the
 * hardware backend cannot run (no rdma-core, no mlx5 device, DevX backend unavailable).
 * {@code -Dte4j.rdmaDevice=mlx5_0} picks the device (default: the first mlx5 device).
 */
public class RdmaHardwareTest
{
    @Test(groups = "rdma-hw", timeOut = 300_000)
    public void twoRanksOverMlx5() throws Exception
    {
        final String filter = System.getProperty("te4j.rdmaDevice", "mlx5");
        try (TransferEngine engine = TransferEngine.builder().platform(Platform.HOST).build())
        {
            engine.getOrCreateRdmaTransport(filter).initialize(1, 1);
        }
        catch (final UnavailableException e)
        {
            throw new SkipException("no usable mlx5 RDMA NIC here: " + e.getMessage());
        }
        final int port = RankProcesses.freePort();
        RdmaMultiProcessTest.runRanks(2, r -> RdmaMultiProcessTest.javaCommand(List.of(),
            RdmaMultiProcessTest.args(r, 2, port, "nic=" + filter, "sizes=1,4096,1048577,67108864", "ring=64")));
    }
}
