package io.github.te4j;

import io.github.te4j.check.Patterns;
import io.github.te4j.exchange.InMemorySegmentDirectory;
import io.github.te4j.launcher.DeviceMap;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.bytedeco.cuda.global.cudart;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.Pointer;
import org.testng.Assert;
import org.testng.SkipException;
import org.testng.annotations.Test;

/**
 * Issue 30, item 4, on the GPU: memory allocated through the JavaCPP Presets for CUDA
 * ({@code cudaMalloc}, {@code cudaMallocHost}, {@code cudaMallocManaged}) is told apart by
 * {@link MemoryKind}, registered with a CUDA-platform agent through its {@link Pointer}, and
 * carried by batches both ways to and from a te4j buffer (random data, poisoned destinations,
 * every byte checked). Pageable memory on the CUDA route, and device memory on the host route,
 * are refused with the reason. Skips where there is no usable GPU.
 */
public class PresetsMemoryCudaTest
{
    private static final Duration T = Duration.ofSeconds(60);
    private static final int N = 1 << 20;

    private static void ok(final int cudaStatus, final String what)
    {
        Assert.assertEquals(cudaStatus, 0, what + " failed: CUDA error " + cudaStatus);
    }

    private static byte[] poison(final int n)
    {
        final byte[] p = new byte[n];
        Arrays.fill(p, Patterns.POISON);
        return p;
    }

    /** The bytes of device memory, copied out with the presets. */
    private static byte[] deviceBytes(final Pointer dev, final int n)
    {
        try (BytePointer host = new BytePointer(n))
        {
            ok(cudart.cudaMemcpy(host, dev, n, cudart.cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
            final byte[] out = new byte[n];
            host.get(out);
            return out;
        }
    }

    @Test(groups = "cuda", timeOut = 300_000)
    public void presetsMemoryRegisteredDetectedAndTransferred()
    {
        final String why = DeviceMap.cudaUnavailableFor(1);
        if (why != null)
        {
            throw new SkipException(why);
        }
        ok(cudart.cudaSetDevice(0), "cudaSetDevice(0)");
        final List<Pointer> aside = new java.util.ArrayList<>();
        final Pointer dev = allocate(p -> cudart.cudaMalloc(p, N), "cudaMalloc", aside);
        final Pointer pinned = allocate(p -> cudart.cudaMallocHost(p, N), "cudaMallocHost", aside);
        final Pointer managed = allocate(p -> cudart.cudaMallocManaged(p, N, cudart.cudaMemAttachGlobal),
            "cudaMallocManaged", aside);
        final String space = "presets" + System.nanoTime();
        try (BytePointer pageable = MemoryLifetimeTest.outsideFreedTe4jMemory(N);
            TransferEngine e0 = TransferEngine.builder().platform(Platform.CUDA).device(0).build();
            TransferEngine e1 = TransferEngine.builder().platform(Platform.CUDA).device(0).build();
            TransferEngine host = TransferEngine.builder().platform(Platform.HOST).build();
            InMemorySegmentDirectory d0 = InMemorySegmentDirectory.open(space);
            InMemorySegmentDirectory d1 = InMemorySegmentDirectory.open(space))
        {
            Assert.assertEquals(MemoryKind.of(dev), MemoryKind.DEVICE);
            Assert.assertEquals(MemoryKind.of(pinned), MemoryKind.PINNED_HOST);
            Assert.assertEquals(MemoryKind.of(managed), MemoryKind.MANAGED);
            Assert.assertEquals(MemoryKind.of(pageable), MemoryKind.PAGEABLE_HOST);
            System.out.println("OK kinds: cudaMalloc=DEVICE cudaMallocHost=PINNED_HOST cudaMallocManaged=MANAGED"
                + " BytePointer=PAGEABLE_HOST");

            final P2pTransport p0 = e0.getOrCreateP2pTransport(2);
            final P2pTransport p1 = e1.getOrCreateP2pTransport(2);
            final TransferAgent a0 = e0.createTransferAgent(p0, "presets0");
            final TransferAgent a1 = e1.createTransferAgent(p1, "presets1");
            final DeviceBuffer seg = p1.allocateBuffer(8L * N);
            a1.registerLocalMemory(seg);
            a1.publishSegment(d1);
            final SegmentHandle s1 = a0.openSegment("presets1", d0, T);
            final RegisteredMemory rDev = a0.registerLocalMemory(dev);
            final RegisteredMemory rPinned = a0.registerLocalMemory(pinned);
            final RegisteredMemory rManaged = a0.registerLocalMemory(managed);

            // WRITE: random bytes from each kind into a poisoned te4j buffer.
            final Random rnd = new Random(Patterns.seed(30, 4, 0, 1));
            final byte[] fromDev = new byte[N];
            final byte[] fromPinned = new byte[N];
            final byte[] fromManaged = new byte[N];
            rnd.nextBytes(fromDev);
            rnd.nextBytes(fromPinned);
            rnd.nextBytes(fromManaged);
            try (BytePointer staged = new BytePointer(fromDev))
            {
                ok(cudart.cudaMemcpy(dev, staged, N, cudart.cudaMemcpyHostToDevice), "cudaMemcpy H2D");
            }
            new BytePointer(pinned).capacity(N).put(fromPinned);
            new BytePointer(managed).capacity(N).put(fromManaged);
            seg.fill(0, 8L * N, Patterns.POISON);
            try (TransferBatch b = a0.allocateBatch(3))
            {
                b.submit(List.of(TransferRequest.write(rDev, 0, s1, 0, N),
                    TransferRequest.write(rPinned, 0, s1, 2L * N, N),
                    TransferRequest.write(rManaged, 0, s1, 4L * N, N)), T);
                b.await(T).forEach(s -> Assert.assertEquals(s.state(), TransferState.COMPLETED, s.toString()));
            }
            Assert.assertEquals(seg.read(0, N), fromDev, "cudaMalloc memory -> te4j buffer");
            Assert.assertEquals(seg.read(2L * N, N), fromPinned, "cudaMallocHost memory -> te4j buffer");
            Assert.assertEquals(seg.read(4L * N, N), fromManaged, "cudaMallocManaged memory -> te4j buffer");
            Assert.assertEquals(seg.read(N, N), poison(N), "no byte past the device WRITE");
            Assert.assertEquals(seg.read(3L * N, N), poison(N), "no byte past the pinned WRITE");

            // READ: random bytes of the te4j buffer into each kind, poisoned first.
            final byte[] toDev = new byte[N];
            final byte[] toPinned = new byte[N];
            rnd.nextBytes(toDev);
            rnd.nextBytes(toPinned);
            seg.write(6L * N, toDev);
            seg.write(7L * N, toPinned);
            ok(cudart.cudaMemset(dev, Patterns.POISON & 0xff, N), "cudaMemset");
            new BytePointer(pinned).capacity(N).put(poison(N));
            try (TransferBatch b = a0.allocateBatch(2))
            {
                b.submit(List.of(TransferRequest.read(rDev, 0, s1, 6L * N, N / 2),
                    TransferRequest.read(rPinned, 0, s1, 7L * N, N / 2)), T);
                b.await(T).forEach(s -> Assert.assertEquals(s.state(), TransferState.COMPLETED, s.toString()));
            }
            final byte[] devNow = deviceBytes(dev, N);
            Assert.assertEquals(Arrays.copyOf(devNow, N / 2), Arrays.copyOf(toDev, N / 2), "te4j buffer -> cudaMalloc");
            Assert.assertEquals(Arrays.copyOfRange(devNow, N / 2, N), poison(N / 2), "no byte past the device READ");
            final byte[] pinnedNow = new byte[N];
            new BytePointer(pinned).capacity(N).get(pinnedNow);
            Assert.assertEquals(Arrays.copyOf(pinnedNow, N / 2), Arrays.copyOf(toPinned, N / 2),
                "te4j buffer -> cudaMallocHost");
            Assert.assertEquals(Arrays.copyOfRange(pinnedNow, N / 2, N), poison(N / 2), "no byte past the pinned READ");
            System.out.println("OK presets memory: WRITE and READ byte for byte (device, pinned, managed)");

            // What the route cannot carry is refused, with the reason.
            final IllegalArgumentException pageableRefused = Assert.expectThrows(IllegalArgumentException.class,
                () -> a0.registerLocalMemory(pageable));
            Assert.assertTrue(pageableRefused.getMessage().contains("PAGEABLE_HOST"), pageableRefused.getMessage());
            final TransferAgent hostAgent = host.createTransferAgent(host.getOrCreateP2pTransport(2), "host");
            final IllegalArgumentException deviceRefused = Assert.expectThrows(IllegalArgumentException.class,
                () -> hostAgent.registerLocalMemory(dev));
            Assert.assertTrue(deviceRefused.getMessage().contains("DEVICE"), deviceRefused.getMessage());
            System.out.println("OK refused: " + pageableRefused.getMessage());
            System.out.println("OK refused: " + deviceRefused.getMessage());
            a0.unregisterLocalMemory(rDev);
            a0.unregisterLocalMemory(rPinned);
            a0.unregisterLocalMemory(rManaged);
        }
        finally
        {
            ok(cudart.cudaFree(dev), "cudaFree");
            ok(cudart.cudaFreeHost(pinned), "cudaFreeHost");
            ok(cudart.cudaFree(managed), "cudaFree(managed)");
            for (final Pointer p : aside)
            {
                ok(MemoryKind.of(p) == MemoryKind.PINNED_HOST ? cudart.cudaFreeHost(p)
                    : cudart.cudaFree(p), "freeing an allocation set aside");
            }
        }
    }

    /** A CUDA allocator of the presets, into the pointer given; returns its status. */
    private interface Allocator
    {
        int allocate(Pointer into);
    }

    /**
     * An allocation of {@link #N} bytes, its size set (the presets' pointers carry only an
     * address). CUDA hands freed virtual addresses out again at once, and earlier tests of this
     * JVM freed te4j buffers: te4j must take such an allocation as the live memory it is (the
     * driver knows it), not as the freed te4j buffer that lay there. {@code aside} is unused and
     * kept for the callers' cleanup.
     */
    private static Pointer allocate(final Allocator allocator, final String what, final List<Pointer> aside)
    {
        final Pointer p = new Pointer();
        ok(allocator.allocate(p), what);
        p.capacity(N);
        LiveMemory.checkLocalRegistration(p.address(), N);   // throws if refused as freed te4j memory
        return p;
    }
}
