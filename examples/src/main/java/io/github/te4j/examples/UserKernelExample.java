package io.github.te4j.examples;

import io.github.te4j.Availability;
import io.github.te4j.CommContext;
import io.github.te4j.DeviceBuffer;
import io.github.te4j.DeviceModule;
import io.github.te4j.Kernel;
import io.github.te4j.KernelArgs;
import io.github.te4j.KernelCompiler;
import io.github.te4j.KernelImage;
import io.github.te4j.LaunchConfig;
import io.github.te4j.OpStream;
import io.github.te4j.P2pTransport;
import io.github.te4j.Platform;
import io.github.te4j.TransferEngine;
import io.github.te4j.launcher.RankProcesses;
import io.github.te4j.exchange.HandleExchange;
import io.github.te4j.rendezvous.Rendezvous;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * Two ranks whose own CUDA kernels, written in the style of Mooncake's device transport
 * example, are compiled by NVRTC at run time and launched from Java with a te4j
 * {@code CommContext}: rank 0's sender kernel writes a pattern into its window, copies it into
 * rank 1's window through the P2P route ({@code mc_route_put}, 16-byte {@code mc_ld_nc} /
 * {@code mc_st_na}) and signals ({@code mc_signal}); rank 1's receiver kernel waits for the
 * signal ({@code mc_ld_acquire_u32}, bounded) and checks every byte.
 *
 * <p>Both ranks use one GPU by default (two processes sharing device 0 through CUDA IPC), so it
 * runs on any machine with one GPU and NVRTC.
 *
 * <pre>
 * java -cp te4j.jar io.github.te4j.examples.UserKernelExample              # both ranks, GPU 0
 * java -cp te4j.jar io.github.te4j.examples.UserKernelExample --devices 0,1  # rank r on GPU r
 * </pre>
 * Exit 0 when rank 1 verified the data, 1 on a failure, 2 when no GPU or no NVRTC is here.
 */
public final class UserKernelExample
{
    static final int DATA_BYTES = 1 << 20;
    /** The signal word sits right after the data (16-byte aligned, as the copy loop needs). */
    static final int SIGNAL_OFFSET = DATA_BYTES;
    static final int WINDOW_BYTES = DATA_BYTES + 64;
    static final Duration TIMEOUT = Duration.ofSeconds(60);

    /** Both kernels, in one program; each rank launches its own. */
    static final String KERNELS = """
        #include "transport/device/comm_device.cuh"

        constexpr int kSignalWordOffset = %d;

        // Rank 0: fill the local window with a pattern, copy it into dst_rank's window through
        // the P2P route with 16-byte non-temporal stores, then signal the peer's word.
        extern "C" __global__ void sender_kernel(mooncake::device::CommCtx ctx, int dst_rank, int data_bytes,
                                                 int* status)
        {
            using namespace mooncake::device;
            if (threadIdx.x != 0 || blockIdx.x != 0) return;
            unsigned char* local = reinterpret_cast<unsigned char*>(ctx.p2p.local_base);
            unsigned char* peer = reinterpret_cast<unsigned char*>(mc_route_put(ctx, dst_rank, local));
            if (peer == nullptr)
            {
                printf("[rank 0] no P2P route to rank %%d\\n", dst_rank);
                status[0] = -1;
                return;
            }
            for (int i = 0; i < data_bytes; ++i) local[i] = (unsigned char)((i * 7 + 3) %% 251);
            for (int i = 0; i < data_bytes; i += 16)
            {
                const mc_int4 v = mc_ld_nc(reinterpret_cast<const mc_int4*>(local + i));
                mc_st_na(reinterpret_cast<mc_int4*>(peer + i), v);
            }
            uint32_t* local_sig = reinterpret_cast<uint32_t*>(local + kSignalWordOffset);
            status[0] = mc_signal(ctx, dst_rank, 0 /* channel */, 1 /* qps_per_rank */, local_sig, 1u);
        }

        // Rank 1: wait for the signal (bounded: a lost sender ends the wait, not the process),
        // then count the bytes that differ from the pattern.
        extern "C" __global__ void receiver_kernel(mooncake::device::CommCtx ctx, int data_bytes,
                                                   unsigned long long timeout_ns, int* result)
        {
            using namespace mooncake::device;
            if (threadIdx.x != 0 || blockIdx.x != 0) return;
            const unsigned char* local = reinterpret_cast<const unsigned char*>(ctx.p2p.local_base);
            const uint32_t* local_sig = reinterpret_cast<const uint32_t*>(local + kSignalWordOffset);
            const unsigned long long deadline = mc_globaltimer_ns() + timeout_ns;
            while (mc_ld_acquire_u32(local_sig) == 0)
            {
                if (mc_globaltimer_ns() > deadline)
                {
                    printf("[rank 1] FAIL: no signal within %%llu ms\\n", timeout_ns / 1000000ull);
                    result[0] = -1;
                    return;
                }
            }
            int mismatches = 0;
            for (int i = 0; i < data_bytes; ++i)
            {
                if (local[i] != (unsigned char)((i * 7 + 3) %% 251)) ++mismatches;
            }
            result[0] = 1;
            result[1] = mismatches;
            printf("[rank 1] %%s: %%d byte mismatches in %%d bytes\\n", mismatches == 0 ? "PASS" : "FAIL", mismatches,
                   data_bytes);
        }
        """.formatted(SIGNAL_OFFSET);

    private UserKernelExample()
    {
    }

    public static void main(final String[] args) throws Exception
    {
        int rank = -1;
        String rendezvous = null;
        String devices = "0,0";
        for (int i = 0; i < args.length; i++)
        {
            switch (args[i])
            {
                case "--rank": rank = Integer.parseInt(args[++i]); break;
                case "--rendezvous": rendezvous = args[++i]; break;
                case "--devices": devices = args[++i]; break;
                default:
                    System.err.println("unknown argument " + args[i]
                        + "; usage: [--devices D0,D1] [--rank 0|1 --rendezvous host:port]");
                    System.exit(64);
            }
        }
        final String[] d = devices.split(",");
        if (d.length != 2)
        {
            System.err.println("--devices takes two CUDA device ordinals, e.g. 0,0 or 0,1");
            System.exit(64);
        }
        final int[] deviceOf = {Integer.parseInt(d[0].trim()), Integer.parseInt(d[1].trim())};
        final String missing = missingPrerequisite(deviceOf);
        if (missing != null)
        {
            System.out.println("user-kernel example skipped: " + missing);
            System.exit(2);
        }
        if (rank < 0)
        {
            System.exit(launchBoth(devices));
        }
        try (HandleExchange exchange = Rendezvous.builder().rank(rank).worldSize(2)
            .endpoint(rendezvous == null ? "127.0.0.1:29601" : rendezvous).defaultTimeout(TIMEOUT)
            .connectTimeout(TIMEOUT).build())
        {
            System.exit(runRank(rank, deviceOf[rank], exchange));
        }
    }

    /** Why the example cannot run here (no GPU, no NVRTC), or null. */
    static String missingPrerequisite(final int[] deviceOf)
    {
        final int count = Availability.cudaDeviceCount();
        for (final int dev : deviceOf)
        {
            if (dev < 0 || dev >= count)
            {
                return "needs CUDA device " + dev + ", " + count + " visible (" + Availability.describe() + ")";
            }
        }
        if (!KernelCompiler.isAvailable())
        {
            return KernelCompiler.unavailabilityCause().getMessage();
        }
        return null;
    }

    /** Starts rank 0 and rank 1 as child JVMs and reports their output. */
    static int launchBoth(final String devices) throws InterruptedException
    {
        final int port = RankProcesses.freePort();
        System.out.println("te4j user-kernel example, ranks on CUDA devices " + devices + ", rendezvous 127.0.0.1:"
            + port);
        try (RankProcesses ranks = new RankProcesses())
        {
            ranks.start(2, UserKernelExample.class.getName(), List.of(), r -> new ArrayList<>(List.of(
                "--rank", "" + r, "--devices", devices, "--rendezvous", "127.0.0.1:" + port)));
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

    /** One rank: compile, load, launch its kernel, report; returns the exit code. */
    static int runRank(final int rank, final int device, final HandleExchange exchange)
    {
        try (TransferEngine engine = TransferEngine.builder().platform(Platform.CUDA).device(device).build())
        {
            final P2pTransport p2p = engine.getOrCreateP2pTransport(2);
            final DeviceBuffer window = p2p.allocateBuffer(WINDOW_BYTES);
            final DeviceBuffer result = p2p.allocateBuffer(64);
            final CommContext ctx = p2p.connect(window, exchange, TIMEOUT);
            final OpStream stream = engine.createStream();
            final KernelImage image = KernelCompiler.forDevice(device).compile("user_kernel_example.cu", KERNELS);
            System.out.println("[rank " + rank + "] compiled " + image + " in " + image.compileNanos() / 1_000_000
                + " ms (NVRTC " + KernelCompiler.version() + ")");
            int status;
            try (DeviceModule module = DeviceModule.load(engine, image))
            {
                if (rank == 0)
                {
                    final Kernel sender = module.kernel("sender_kernel");
                    sender.launch(stream, LaunchConfig.of(1, 32),
                        KernelArgs.of().add(ctx).addInt(1).addInt(DATA_BYTES).add(result));
                    stream.synchronize(TIMEOUT);
                    final int route = readInt(result, 0);
                    System.out.println("[rank 0] sender kernel wrote " + DATA_BYTES + " bytes + signal to rank 1: "
                        + (route == 0 ? "ok" : "route status " + route));
                    status = route == 0 ? 0 : 1;
                }
                else
                {
                    final Kernel receiver = module.kernel("receiver_kernel");
                    receiver.launch(stream, LaunchConfig.of(1, 32), KernelArgs.of().add(ctx).addInt(DATA_BYTES)
                        .addLong(TIMEOUT.toNanos() / 2).add(result));
                    stream.synchronize(TIMEOUT);
                    final int done = readInt(result, 0);
                    final int mismatches = readInt(result, 4);
                    System.out.println("[rank 1] receiver kernel: " + (done == 1 ? "signal received, " + mismatches
                        + " mismatches in " + DATA_BYTES + " bytes" : "no signal"));
                    status = done == 1 && mismatches == 0 ? 0 : 1;
                }
                // Neither rank unmaps or frees while the other may still touch its window.
                exchange.barrier(TIMEOUT);
            }
            return status;
        }
    }

    static int readInt(final DeviceBuffer b, final long offset)
    {
        final byte[] x = new byte[4];
        b.read(offset, x, 0, 4);
        return (x[0] & 0xff) | (x[1] & 0xff) << 8 | (x[2] & 0xff) << 16 | (x[3] & 0xff) << 24;
    }
}
