package io.github.te4j.bench;

import io.github.te4j.Availability;
import io.github.te4j.CommContext;
import io.github.te4j.DeviceBuffer;
import io.github.te4j.DeviceModule;
import io.github.te4j.IpcHandle;
import io.github.te4j.Kernel;
import io.github.te4j.KernelArgs;
import io.github.te4j.KernelCompiler;
import io.github.te4j.KernelImage;
import io.github.te4j.LaunchConfig;
import io.github.te4j.OpStream;
import io.github.te4j.P2pTransport;
import io.github.te4j.Platform;
import io.github.te4j.TransferEngine;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * The cost of launching a user kernel from Java: the same NVRTC-compiled kernel (a
 * {@code CommCtx} by value, a pointer and an int, one block) enqueued N times on one stream by
 * a Java loop of {@link Kernel#launch(OpStream, LaunchConfig, KernelArgs)} calls and by the C++
 * loop of {@link Kernel#launch(OpStream, LaunchConfig, KernelArgs, int)}, alternating, each
 * timed to the end of its synchronize; also the NVRTC compile time and a cached module load.
 *
 * <pre>
 * java -cp te4j-bench.jar io.github.te4j.bench.UserKernelLaunchRate [--device 0] [--launches 20000] [--rounds 7]
 * </pre>
 * Exit 0 after printing the figures, 3 when no GPU or no NVRTC is here.
 */
public final class UserKernelLaunchRate
{
    /** The kernel launched: it reads its CommCtx and does no work (v is never negative here). */
    public static final String KERNEL = """
        #include "transport/device/comm_device.cuh"
        extern "C" __global__ void tick(mooncake::device::CommCtx ctx, uint32_t* word, int v)
        {
            if (threadIdx.x == 0 && v < 0) word[0] = (uint32_t)ctx.rank;
        }
        """;

    private UserKernelLaunchRate()
    {
    }

    public static void main(final String[] args)
    {
        int device = 0;
        int launches = 20_000;
        int rounds = 7;
        for (int i = 0; i < args.length; i++)
        {
            switch (args[i])
            {
                case "--device": device = Integer.parseInt(args[++i]); break;
                case "--launches": launches = Integer.parseInt(args[++i]); break;
                case "--rounds": rounds = Integer.parseInt(args[++i]); break;
                default:
                    System.err.println("unknown argument " + args[i] + "; usage: [--device D] [--launches N] [--rounds R]");
                    System.exit(BenchMain.EXIT_USAGE);
            }
        }
        if (device >= Availability.cudaDeviceCount() || !KernelCompiler.isAvailable())
        {
            System.out.println("unavailable: " + (KernelCompiler.isAvailable()
                ? "no CUDA device " + device + " (" + Availability.describe() + ")"
                : KernelCompiler.unavailabilityCause().getMessage()));
            System.exit(BenchMain.EXIT_UNAVAILABLE);
        }
        final Duration t = Duration.ofSeconds(60);
        try (TransferEngine engine = TransferEngine.builder().platform(Platform.CUDA).device(device).build();
             OpStream stream = engine.createStream())
        {
            final P2pTransport p2p = engine.getOrCreateP2pTransport(1);
            final DeviceBuffer window = p2p.allocateBuffer(4096);
            final IpcHandle own = p2p.exportHandle(window);
            final CommContext ctx = p2p.importPeerHandles(window, 0, List.of(own), 0b1);
            KernelCompiler.clearMemoryCache();
            final KernelImage image = KernelCompiler.forDevice(device).compile("tick.cu", KERNEL);
            // A cached compile and a module load: the first of the process (classes loaded, code
            // cold) and the median of later ones, each module closed before the next.
            final double[] loads = new double[6];
            for (int i = 0; i < loads.length; i++)
            {
                final long start = System.nanoTime();
                final KernelImage cached = KernelCompiler.forDevice(device).compile("tick.cu", KERNEL);
                try (DeviceModule m = DeviceModule.load(engine, cached))
                {
                    m.kernel("tick");
                    loads[i] = (System.nanoTime() - start) / 1e6;
                }
            }
            final double firstLoadMs = loads[0];
            final double laterLoadMs = Stats.of(Arrays.copyOfRange(loads, 1, loads.length)).median();
            final KernelImage again = KernelCompiler.forDevice(device).compile("tick.cu", KERNEL);
            try (DeviceModule module = DeviceModule.load(engine, again))
            {
                final Kernel k = module.kernel("tick");
                final LaunchConfig one = LaunchConfig.of(1, 32);
                final KernelArgs a = KernelArgs.of().add(ctx).add(window).addInt(1);
                // Warm-up: the first launches load the module's code onto the GPU.
                k.launch(stream, one, a, 1000);
                for (int i = 0; i < 1000; i++)
                {
                    k.launch(stream, one, a);
                }
                stream.synchronize(t);
                final double[] java = new double[rounds];
                final double[] cpp = new double[rounds];
                for (int r = 0; r < rounds; r++)
                {
                    long s = System.nanoTime();
                    for (int i = 0; i < launches; i++)
                    {
                        k.launch(stream, one, a);
                    }
                    stream.synchronize(t);
                    java[r] = launches / ((System.nanoTime() - s) / 1e9);
                    s = System.nanoTime();
                    k.launch(stream, one, a, launches);
                    stream.synchronize(t);
                    cpp[r] = launches / ((System.nanoTime() - s) / 1e9);
                }
                final double j = Stats.of(java).median();
                final double c = Stats.of(cpp).median();
                System.out.printf(Locale.ROOT, "user kernel launch rate on CUDA:%d, %d launches x %d rounds (median)%n",
                    device, launches, rounds);
                System.out.printf(Locale.ROOT, "  java loop   %12.0f launches/s%n", j);
                System.out.printf(Locale.ROOT, "  c++ loop    %12.0f launches/s%n", c);
                System.out.printf(Locale.ROOT, "  java / c++  %12.3f%n", j / c);
                System.out.printf(Locale.ROOT, "NVRTC %d compile of tick.cu: %.1f ms; cached compile + module load:"
                    + " first %.3f ms, later (median of %d) %.3f ms%n",
                    KernelCompiler.version(), image.compileNanos() / 1e6, firstLoadMs, loads.length - 1, laterLoadMs);
            }
        }
    }
}
