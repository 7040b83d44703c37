package io.github.te4j;

import java.time.Duration;

/**
 * Child JVM of {@link UserKernelCudaTest#faultsAreReportedWithoutACrash}: launches a user kernel
 * that faults (a sticky error that ends the process's CUDA context, hence its own process) and
 * prints what te4j reported. Exit 0 when the fault came back as an exception; 3 when none came.
 */
public final class UserKernelFaultWorker
{
    private UserKernelFaultWorker()
    {
    }

    public static void main(final String[] args)
    {
        final Duration t = Duration.ofSeconds(60);
        try (TransferEngine engine = TransferEngine.builder().platform(Platform.CUDA).device(0).build();
             OpStream stream = engine.createStream())
        {
            final DeviceBuffer word = engine.getOrCreateP2pTransport(1).allocateBuffer(64);
            try
            {
                if (args[0].equals("illegal-address"))
                {
                    final KernelImage image = KernelCompiler.forDevice(0).compile("poke.cu", UserKernelSources.POKE);
                    final DeviceModule m = DeviceModule.load(engine, image);
                    m.kernel("poke").launch(stream, LaunchConfig.of(1, 1), KernelArgs.of().addPointer(0x10));
                }
                else
                {
                    final KernelImage image = KernelCompiler.forDevice(0).compile("wait.cu", UserKernelSources.WAIT_OR_TRAP);
                    final DeviceModule m = DeviceModule.load(engine, image);
                    m.kernel("wait_or_trap").launch(stream, LaunchConfig.of(1, 1),
                        KernelArgs.of().add(word).addInt(1).addLong(200_000_000L));
                }
                stream.synchronize(t);
                System.out.println("NO-FAULT");
                System.exit(3);
            }
            catch (final Te4jException e)
            {
                System.out.println("CAUGHT code=" + e.code() + " message=" + e.getMessage());
            }
            // The context is gone: later calls report it instead of crashing.
            try
            {
                stream.synchronize(t);
                System.out.println("AFTER synchronize returned");
            }
            catch (final RuntimeException e)
            {
                System.out.println("AFTER " + e.getClass().getSimpleName() + ": " + e.getMessage());
            }
        }
        catch (final RuntimeException e)
        {
            // Closing after a sticky fault may fail too; it must not crash.
            System.out.println("AFTER close: " + e);
        }
        System.out.flush();
        System.exit(0);
    }
}
