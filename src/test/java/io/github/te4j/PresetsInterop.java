package io.github.te4j;

import io.github.te4j.check.Patterns;
import java.time.Duration;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.bytedeco.cuda.global.cudart;
import org.bytedeco.javacpp.Pointer;
import org.testng.Assert;

/** A stream and an allocation made through the JavaCPP Presets for CUDA, used by te4j. */
final class PresetsInterop
{
    private PresetsInterop()
    {
    }

    static void run(final HostInProcessTest.Pair pair, final long signalOffset, final Duration t)
    {
        Assert.assertEquals(cudart.cudaSetDevice(0), 0);
        final CUstream_st stream = new CUstream_st();
        Assert.assertEquals(cudart.cudaStreamCreateWithFlags(stream, cudart.cudaStreamNonBlocking), 0);
        final Pointer mem = new Pointer();
        final long bytes = 1 << 20;
        Assert.assertEquals(cudart.cudaMalloc(mem, bytes), 0);
        try (OpStream s = pair.engines[0].wrapStream(stream))
        {
            final DeviceBuffer ext = pair.engines[0].getOrCreateP2pTransport(2).registerBuffer(mem.address(), bytes);
            Patterns.write(ext, 0, bytes, 777);
            pair.windows[1].fill(0, bytes, Patterns.POISON);
            s.putWithSignal(pair.ctx[0], 1, 0, ext, 0, bytes, signalOffset, 1);
            s.synchronize(t);
            Assert.assertNull(Patterns.verify(pair.windows[1], 0, bytes, 777));
            ext.close();
            // pool memory is refused with a clear error
            final Pointer pool = new Pointer();
            if (cudart.cudaMallocAsync(pool, 4096, stream) == 0 && cudart.cudaStreamSynchronize(stream) == 0)
            {
                final Te4jException e = Assert.expectThrows(Te4jException.class,
                    () -> pair.engines[0].getOrCreateP2pTransport(2).registerBuffer(pool.address(), 4096));
                System.out.println("OK pool memory refused: " + e.getMessage());
                cudart.cudaFreeAsync(pool, stream);
                cudart.cudaStreamSynchronize(stream);
            }
        }
        finally
        {
            cudart.cudaFree(mem);
            cudart.cudaStreamDestroy(stream);
        }
        System.out.println("OK presets stream + registered cudaMalloc buffer");
    }
}
