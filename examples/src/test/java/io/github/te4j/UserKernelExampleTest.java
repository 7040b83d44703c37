package io.github.te4j;

import io.github.te4j.check.Nvcc;
import io.github.te4j.examples.UserKernelExampleRunner;
import java.nio.file.Files;
import java.nio.file.Path;
import org.testng.Assert;
import org.testng.SkipException;
import org.testng.annotations.Test;

/**
 * The user-kernel example end to end: two rank processes sharing GPU 0, kernels compiled by
 * NVRTC and launched from Java. Skips with the reason without a GPU or NVRTC.
 */
public class UserKernelExampleTest
{
    /** CI: the example's kernels compile with nvcc against the shipped headers (no GPU needed). */
    @Test
    public void kernelsCompileWithNvcc() throws Exception
    {
        final Path nvcc = Nvcc.find();
        if (nvcc == null)
        {
            throw new SkipException("nvcc not found (CUDA_HOME or /usr/local/cuda)");
        }
        Nvcc.compileCubin(nvcc, Files.createTempDirectory("te4j-example-kernels"), "example",
            UserKernelExampleRunner.kernels());
    }

    /** CI: the example's kernels compile with NVRTC for sm_90 as the example compiles them (no GPU needed). */
    @Test
    public void kernelsCompileWithNvrtc()
    {
        if (!KernelCompiler.isAvailable())
        {
            final String why = "NVRTC is unavailable here: " + KernelCompiler.unavailabilityCause().getMessage();
            final String required = System.getenv("TE4J_REQUIRE_NVRTC");
            if (required != null && !required.isEmpty() && !required.equals("0"))
            {
                Assert.fail("TE4J_REQUIRE_NVRTC=" + required + " but " + why);
            }
            throw new SkipException(why);
        }
        final KernelImage image = KernelCompiler.forArchitecture("sm_90").compile("user_kernel_example.cu",
            UserKernelExampleRunner.kernels());
        Assert.assertEquals(image.kind(), KernelImage.Kind.CUBIN);
    }

    @Test(groups = {"cuda", "cuda-kernels"}, timeOut = 300_000)
    public void bothRanksOnOneGpu() throws Exception
    {
        final String missing = UserKernelExampleRunner.missingPrerequisite(0, 0);
        if (missing != null)
        {
            throw new SkipException(missing);
        }
        Assert.assertEquals(UserKernelExampleRunner.launchBoth("0,0"), 0, "the example failed (its output is above)");
    }
}
