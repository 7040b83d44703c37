package io.github.te4j;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import org.testng.Assert;
import org.testng.annotations.Test;

/**
 * Where NVRTC builds find the CUDA toolkit's headers (cooperative_groups.h and the like): an
 * explicit setting wins when it holds the toolkit's marker header, and a folder without it is
 * passed over.
 */
public class CudaToolkitHeadersTest
{
    @Test(groups = "host")
    public void explicitFolderWinsWhenItHoldsTheToolkit() throws Exception
    {
        final Path dir = Files.createTempDirectory("te4j-cuda-include");
        Files.writeString(dir.resolve("cuda_runtime_api.h"), "// marker\n");
        Files.writeString(dir.resolve("cooperative_groups.h"), "// stand-in\n");
        final String before = System.getProperty("te4j.cudaInclude");
        System.setProperty("te4j.cudaInclude", dir.toString());
        try
        {
            final Optional<Path> found = CudaToolkitHeaders.find();
            Assert.assertEquals(found.orElse(null), dir);
            Assert.assertTrue(CudaToolkitHeaders.provides(dir, "cooperative_groups.h"));
            Assert.assertFalse(CudaToolkitHeaders.provides(dir, "no_such_header.h"));
            Assert.assertEquals(CudaToolkitHeaders.searchPath(dir), List.of(dir));
            Files.createDirectories(dir.resolve("cccl/cuda/std"));
            Files.writeString(dir.resolve("cccl/cuda/std/type_traits"), "// stand-in\n");
            Assert.assertEquals(CudaToolkitHeaders.searchPath(dir), List.of(dir, dir.resolve("cccl")),
                "CUDA 13 keeps libcu++ under include/cccl");
            Assert.assertTrue(CudaToolkitHeaders.provides(dir, "cuda/std/type_traits"));
            Assert.assertFalse(CudaToolkitHeaders.provides(dir, "../" + dir.getFileName() + "/cooperative_groups.h"),
                "a header name that climbs out of the folder is never taken");
        }
        finally
        {
            restore(before);
        }
    }

    @Test(groups = "host")
    public void folderWithoutTheToolkitIsPassedOver() throws Exception
    {
        final Path empty = Files.createTempDirectory("te4j-not-cuda");
        final String before = System.getProperty("te4j.cudaInclude");
        System.setProperty("te4j.cudaInclude", empty.toString());
        try
        {
            Assert.assertNotEquals(CudaToolkitHeaders.find().orElse(null), empty);
        }
        finally
        {
            restore(before);
        }
    }

    private static void restore(final String before)
    {
        if (before == null)
        {
            System.clearProperty("te4j.cudaInclude");
        }
        else
        {
            System.setProperty("te4j.cudaInclude", before);
        }
    }
}
