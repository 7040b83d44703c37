package io.github.te4j.check;

import io.github.te4j.KernelCompiler;
import io.github.te4j.KernelImage;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * Compiles a user-kernel source with nvcc against te4j's shipped headers, the check CI can make
 * of kernel sources without a GPU or NVRTC (nvcc is there).
 */
public final class Nvcc
{
    private Nvcc()
    {
    }

    /** nvcc of CUDA_HOME (default /usr/local/cuda), or null when it is not installed. */
    public static Path find()
    {
        final Path nvcc = Path.of(System.getenv().getOrDefault("CUDA_HOME", "/usr/local/cuda"), "bin", "nvcc");
        return Files.isExecutable(nvcc) ? nvcc : null;
    }

    /**
     * Compiles {@code source} to an sm_90 cubin in {@code dir}; returns it as an image, or throws
     * {@link AssertionError} with nvcc's output when it does not compile.
     */
    public static KernelImage compileCubin(final Path nvcc, final Path dir, final String name, final String source)
        throws IOException, InterruptedException
    {
        final Path src = dir.resolve(name + ".cu");
        final Path cubin = dir.resolve(name + ".cubin");
        Files.writeString(src, source);
        final Process p = new ProcessBuilder(nvcc.toString(), "-std=c++17", "-cubin", "-arch=sm_90",
            "-I" + KernelCompiler.includeDirectory(), "-o", cubin.toString(), src.toString())
            .redirectErrorStream(true).start();
        final String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(300, TimeUnit.SECONDS))
        {
            p.destroyForcibly();
            throw new AssertionError("nvcc did not finish on " + name);
        }
        if (p.exitValue() != 0)
        {
            throw new AssertionError(name + " does not compile:\n" + out);
        }
        return KernelImage.fromFile(cubin);
    }
}
