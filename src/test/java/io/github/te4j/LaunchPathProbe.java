package io.github.te4j;

import java.lang.reflect.Field;
import java.time.Duration;
import java.util.List;
import java.util.Locale;

/**
 * Splits the cost of {@link Kernel#launch(OpStream, LaunchConfig, KernelArgs)} into its layers on
 * a GPU host (a profiling probe, not a test): the whole Java launch, the native launch called
 * directly with everything entered once, the native loop of repeated launches, and the Java work
 * around the native call alone (entering, marshalling, tracking; no launch). Each loop is timed to
 * the end of a synchronize; medians of the rounds, in nanoseconds per launch.
 *
 * <pre>
 * java -cp te4j-tests.jar:lib/* io.github.te4j.LaunchPathProbe [launches] [rounds]
 * </pre>
 */
public final class LaunchPathProbe
{
    private LaunchPathProbe()
    {
    }

    public static void main(final String[] argv) throws Exception
    {
        final int n = argv.length > 0 ? Integer.parseInt(argv[0]) : 50_000;
        final int rounds = argv.length > 1 ? Integer.parseInt(argv[1]) : 7;
        final Duration t = Duration.ofSeconds(60);
        try (TransferEngine engine = TransferEngine.builder().platform(Platform.CUDA).device(0).build();
             OpStream stream = engine.createStream())
        {
            final P2pTransport p2p = engine.getOrCreateP2pTransport(1);
            final DeviceBuffer window = p2p.allocateBuffer(4096);
            final CommContext ctx = p2p.importPeerHandles(window, 0, List.of(p2p.exportHandle(window)), 0b1);
            final String source = "#include \"transport/device/comm_device.cuh\"\n"
                + "extern \"C\" __global__ void tick(mooncake::device::CommCtx ctx, uint32_t* word, int v)\n"
                + "{ if (threadIdx.x == 0 && v < 0) word[0] = (uint32_t)ctx.rank; }\n";
            final KernelImage image = KernelCompiler.forDevice(0).compile("tick.cu", source);
            try (DeviceModule module = DeviceModule.load(engine, image))
            {
                final Kernel k = module.kernel("tick");
                final Field f = Kernel.class.getDeclaredField("function");
                f.setAccessible(true);
                final long function = f.getLong(k);
                final LaunchConfig one = LaunchConfig.of(1, 32);
                final KernelArgs a = KernelArgs.of().add(ctx).add(window).addInt(1);
                final NativeResource[] used = a.resources();
                final double[] full = new double[rounds];
                final double[] direct = new double[rounds];
                final double[] repeated = new double[rounds];
                final double[] javaOnly = new double[rounds];
                k.launch(stream, one, a, 1000);
                stream.synchronize(t);
                for (int r = 0; r < rounds + 1; r++)
                {
                    final int at = Math.max(0, r - 1);  // round 0 warms up and is overwritten
                    long s = System.nanoTime();
                    for (int i = 0; i < n; i++)
                    {
                        k.launch(stream, one, a);
                    }
                    stream.synchronize(t);
                    full[at] = (System.nanoTime() - s) / (double) n;

                    NativeResource.enter2(stream, module);
                    NativeResource.enterEach(used);
                    final long block = a.marshal();
                    final long handle = stream.nativeHandleEntered();
                    s = System.nanoTime();
                    for (int i = 0; i < n; i++)
                    {
                        module.peer().launch(function, handle, 1, 1, 1, 32, 1, 1, 0, 0, block, a.offsetsAddress(), 3);
                    }
                    NativeResource.exitEach(used);
                    NativeResource.exit2(stream, module);
                    stream.synchronize(t);
                    direct[at] = (System.nanoTime() - s) / (double) n;

                    s = System.nanoTime();
                    k.launch(stream, one, a, n);
                    stream.synchronize(t);
                    repeated[at] = (System.nanoTime() - s) / (double) n;

                    s = System.nanoTime();
                    long sink = 0;
                    for (int i = 0; i < n; i++)
                    {
                        NativeResource.enter2(stream, module);
                        NativeResource.enterEach(used);
                        sink += a.marshal() + stream.nativeHandleEntered();
                        stream.userKernelLaunched("tick", module, used);
                        NativeResource.exitEach(used);
                        NativeResource.exit2(stream, module);
                    }
                    javaOnly[at] = (System.nanoTime() - s) / (double) n;
                    if (sink == 42)
                    {
                        System.out.println();
                    }
                }
                java.util.Arrays.sort(full);
                java.util.Arrays.sort(direct);
                java.util.Arrays.sort(repeated);
                java.util.Arrays.sort(javaOnly);
                final int m = rounds / 2;
                System.out.printf(Locale.ROOT, "launch path, ns per launch (median of %d rounds of %d):%n", rounds, n);
                System.out.printf(Locale.ROOT, "  Kernel.launch (whole Java path)      %8.1f%n", full[m]);
                System.out.printf(Locale.ROOT, "  native launch() called directly      %8.1f%n", direct[m]);
                System.out.printf(Locale.ROOT, "  native loop (launchRepeated)         %8.1f%n", repeated[m]);
                System.out.printf(Locale.ROOT, "  Java work around the call, no launch %8.1f%n", javaOnly[m]);
            }
        }
    }
}
