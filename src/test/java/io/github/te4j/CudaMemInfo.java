package io.github.te4j;

import org.bytedeco.cuda.global.cudart;
import org.bytedeco.javacpp.SizeTPointer;

/** Free device memory (cudaMemGetInfo) through the JavaCPP Presets for CUDA: no te4j code involved. */
final class CudaMemInfo
{
    private CudaMemInfo()
    {
    }

    static long freeBytes(final int device)
    {
        if (cudart.cudaSetDevice(device) != 0)
        {
            throw new IllegalStateException("cudaSetDevice(" + device + ") failed");
        }
        try (SizeTPointer free = new SizeTPointer(1); SizeTPointer total = new SizeTPointer(1))
        {
            final int rc = cudart.cudaMemGetInfo(free, total);
            if (rc != 0)
            {
                throw new IllegalStateException("cudaMemGetInfo failed: " + rc);
            }
            return free.get();
        }
    }
}
