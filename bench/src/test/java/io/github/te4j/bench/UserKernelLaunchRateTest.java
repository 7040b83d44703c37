package io.github.te4j.bench;

import io.github.te4j.check.Nvcc;
import java.nio.file.Files;
import java.nio.file.Path;
import org.testng.SkipException;
import org.testng.annotations.Test;

/** CI: the launch-rate bench's kernel compiles with nvcc against the shipped headers. */
public class UserKernelLaunchRateTest
{
    @Test
    public void kernelCompilesWithNvcc() throws Exception
    {
        final Path nvcc = Nvcc.find();
        if (nvcc == null)
        {
            throw new SkipException("nvcc not found (CUDA_HOME or /usr/local/cuda)");
        }
        Nvcc.compileCubin(nvcc, Files.createTempDirectory("te4j-bench-kernels"), "tick", UserKernelLaunchRate.KERNEL);
    }
}
