package io.github.te4j.examples;

import io.github.te4j.Availability;
import io.github.te4j.CommContext;
import io.github.te4j.DeviceBuffer;
import io.github.te4j.OpStream;
import io.github.te4j.P2pTransport;
import io.github.te4j.Platform;
import io.github.te4j.TransferEngine;
import io.github.te4j.launcher.DeviceMap;
import io.github.te4j.launcher.RankProcesses;
import io.github.te4j.exchange.Exchanges;
import io.github.te4j.exchange.HandleExchange;
import io.github.te4j.exchange.LaunchEnvironment;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The Java counterpart of Mooncake's device_transport_example: rank 0 puts a known pattern into
 * rank 1's buffer and signals; rank 1 waits for the signal and verifies; a barrier comes before
 * anyone frees memory.
 *
 * <pre>
 * java -cp te4j.jar io.github.te4j.examples.TwoRankExample            # starts both ranks itself
 * java -cp te4j.jar io.github.te4j.examples.TwoRankExample --platform cuda
 * java -cp te4j.jar ... TwoRankExample --rank 1 --rendezvous tcp://10.0.0.1:29600   # one rank by hand
 * java -cp te4j.jar:te4j-etcd.jar ... TwoRankExample --rank 1 --rendezvous etcd://10.0.0.9:2379/job1
 * java -cp te4j.jar ... TwoRankExample --rank 0 --rendezvous file:///shared/te4j-xchg  # a shared folder
 * torchrun --no-python --nproc-per-node 2 java ... TwoRankExample --from-environment  # rank, GPU, rendezvous
 * java -cp te4j.jar ... TwoRankExample --platform cuda --device 0         # both ranks on GPU 0
 * </pre>
 * Without --platform it picks CUDA when there is a GPU and the ranks' devices reach each other,
 * else the host platform. Without --device, rank r uses GPU r modulo the GPUs present
 * ({@link DeviceMap}): both ranks share GPU 0 on a one-GPU machine, where rank 1's buffer
 * reaches rank 0 through CUDA IPC on that device.
 */
public final class TwoRankExample
{
    static final int DATA_BYTES = 1 << 20;
    /** The signal word sits after the data, 16-byte aligned. */
    static final int SIGNAL_OFFSET = DATA_BYTES;
    static final int WINDOW_BYTES = DATA_BYTES + 64;
    /** Bound of every wait; generous because two ranks on one GPU only time-slice it. */
    static final Duration TIMEOUT = Duration.ofSeconds(60);

    private TwoRankExample()
    {
    }

    public static void main(final String[] args) throws Exception
    {
        int rank = -1;
        String rendezvous = null;
        boolean fromEnvironment = false;
        String platformName = "auto";
        int device = -1;
        for (int i = 0; i < args.length; i++)
        {
            switch (args[i])
            {
                case "--rank": rank = Integer.parseInt(args[++i]); break;
                case "--rendezvous": rendezvous = args[++i]; break;
                case "--exchange-dir": rendezvous = Path.of(args[++i]).toUri().toString(); break;
                case "--from-environment": fromEnvironment = true; break;
                case "--platform": platformName = args[++i]; break;
                case "--device": device = Integer.parseInt(args[++i]); break;
                default:
                    System.err.println("unknown argument " + args[i] + "; usage: [--platform auto|host|cuda]"
                        + " [--device D] [--rank 0|1 --rendezvous tcp://host:port|etcd://host:2379/job|file:///dir"
                        + " | --from-environment]");
                    System.exit(64);
            }
        }
        if (fromEnvironment)
        {
            // torchrun, Slurm, Open MPI or TE4J_* variables: the rank, its GPU and where to meet.
            final LaunchEnvironment env = LaunchEnvironment.fromEnvironment();
            if (env.worldSize() != 2)
            {
                System.err.println("te4j two-rank example: the launcher started " + env.worldSize() + " ranks, not 2");
                System.exit(64);
            }
            rank = env.rank();
            device = device >= 0 ? device : env.device();
            rendezvous = rendezvous != null ? rendezvous : env.rendezvous().orElse(null);
        }
        final Platform platform = choosePlatform(platformName);
        final Throwable unavailable = Availability.unavailabilityCause(platform);
        if (unavailable != null)
        {
            System.err.println("te4j two-rank example: " + unavailable.getMessage());
            System.exit(3);
        }
        if (rank < 0)
        {
            System.exit(launchBoth(platform, device));
        }
        if (platform == Platform.CUDA && device < 0)
        {
            device = DeviceMap.deviceOf(rank);
        }
        final int code;
        final String where = rendezvous == null ? "tcp://127.0.0.1:29600"
            : rendezvous.contains("://") ? rendezvous : "tcp://" + rendezvous;
        final Map<String, String> options = where.startsWith("file:") ? Map.of("timeout", TIMEOUT.toSeconds() + "s")
            : Map.of("timeout", TIMEOUT.toSeconds() + "s", "connectTimeout", TIMEOUT.toSeconds() + "s");
        try (HandleExchange exchange = Exchanges.open(where, rank, 2, options))
        {
            code = runRank(platform, rank, Math.max(device, 0), exchange);
        }
        System.exit(code);
    }

    static Platform choosePlatform(final String name)
    {
        if (!"auto".equals(name))
        {
            return Platform.valueOf(name.toUpperCase());
        }
        return Availability.isAvailable(Platform.CUDA) && DeviceMap.cudaUnavailableFor(2) == null
            ? Platform.CUDA : Platform.HOST;
    }

    /** Starts rank 0 and rank 1 as child JVMs (on {@code device}, or the default map when < 0). */
    static int launchBoth(final Platform platform, final int device) throws InterruptedException
    {
        final int port = RankProcesses.freePort();
        final int[] devices = new int[2];
        for (int r = 0; r < 2; r++)
        {
            devices[r] = platform != Platform.CUDA ? 0 : device >= 0 ? device : DeviceMap.deviceOf(r);
        }
        System.out.println("te4j two-rank example on " + platform
            + (platform == Platform.CUDA ? " (" + DeviceMap.describe(devices, Availability.cudaDeviceCount()) + ")" : "")
            + ", rendezvous 127.0.0.1:" + port);
        try (RankProcesses ranks = new RankProcesses())
        {
            ranks.start(2, TwoRankExample.class.getName(), List.of(), r -> new ArrayList<>(List.of(
                "--rank", "" + r, "--platform", platform.name().toLowerCase(), "--device", "" + devices[r],
                "--rendezvous", "tcp://127.0.0.1:" + port)));
            int worst = 0;
            for (final RankProcesses.Result r : ranks.await(Duration.ofMinutes(3)))
            {
                System.out.print(r.output);
                worst = Math.max(worst, r.exitCode == 0 ? 0 : 1);
            }
            System.out.println(worst == 0 ? "example passed" : "example FAILED");
            return worst;
        }
    }

    /** One rank of the example on CUDA device {@code device} (ignored on the host); returns the exit code. */
    static int runRank(final Platform platform, final int rank, final int device, final HandleExchange exchange)
    {
        try (TransferEngine engine = TransferEngine.builder().platform(platform).device(device).build())
        {
            final P2pTransport p2p = engine.getOrCreateP2pTransport(2);
            final DeviceBuffer window = p2p.allocateBuffer(WINDOW_BYTES);
            final CommContext ctx = p2p.connect(window, exchange, TIMEOUT);
            final OpStream stream = engine.createStream();
            int status = 0;
            if (rank == 0)
            {
                final byte[] pattern = pattern();
                window.write(0, pattern);
                stream.putWithSignal(ctx, 1, 0, window, 0, DATA_BYTES, SIGNAL_OFFSET, 1);
                stream.synchronize(TIMEOUT);
                System.out.println("[rank 0] put " + DATA_BYTES + " bytes + signal to rank 1 on " + platform);
            }
            else
            {
                stream.waitSignal(ctx, SIGNAL_OFFSET, 1, TIMEOUT);
                stream.synchronize(TIMEOUT);
                final byte[] got = window.read(0, DATA_BYTES);
                final byte[] want = pattern();
                int mismatches = 0;
                for (int i = 0; i < DATA_BYTES; i++)
                {
                    if (got[i] != want[i])
                    {
                        mismatches++;
                    }
                }
                System.out.println("[rank 1] signal received; verified " + DATA_BYTES + " bytes: " + mismatches
                    + " mismatches");
                status = mismatches == 0 ? 0 : 1;
            }
            // rank 0 must not free its buffer while rank 1 still has it mapped, and the reverse
            exchange.barrier(TIMEOUT);
            return status;
        }
    }

    /** The known pattern: byte i = (i * 7 + 3) mod 251. */
    static byte[] pattern()
    {
        final byte[] p = new byte[DATA_BYTES];
        for (int i = 0; i < DATA_BYTES; i++)
        {
            p[i] = (byte)((i * 7L + 3) % 251);
        }
        return p;
    }
}
