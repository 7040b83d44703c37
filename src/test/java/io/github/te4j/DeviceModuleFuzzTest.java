package io.github.te4j;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Random;
import org.testng.Assert;
import org.testng.SkipException;
import org.testng.annotations.Test;

/**
 * Seeded random use of the device-module API: hostile images (random bytes, a PTX, fatbin or
 * ELF header over garbage, a NUL inside), argument lists and launch shapes of every kind, loads
 * on engines that cannot take them, NVRTC asked for a library that is not there or given broken
 * source. Without a GPU every call must end in its documented exception, never a crash; on the
 * GPU host ({@link #randomLaunchesOnCuda}) a loaded kernel gets launches with wrong argument
 * counts and sizes, blocks over its limit, after its module or stream closed, and bad images
 * loaded for real.
 *
 * <p>Bounded in time ({@code -Dte4j.fuzz.moduleSeconds}, 3 s); rounds derive their seeds from
 * {@code -Dte4j.fuzz.moduleSeed}, printed with the round in every failure message.
 */
public class DeviceModuleFuzzTest
{
    private static final byte[] FATBIN_MAGIC = {0x50, (byte) 0xED, 0x55, (byte) 0xBA};
    private static final byte[] ELF_MAGIC = {0x7f, 'E', 'L', 'F'};
    private static final String PTX_HEADER = ".version 8.0\n.target sm_90\n.address_size 64\n";

    private static long seed()
    {
        return Long.getLong("te4j.fuzz.moduleSeed", 0x5eed_30d1L);
    }

    private static long budgetNanos()
    {
        return Long.getLong("te4j.fuzz.moduleSeconds", 3) * 1_000_000_000L;
    }

    /** A random image's bytes: one of the kinds KernelImage tells apart, over garbage. */
    static byte[] hostileImage(final Random rnd)
    {
        final byte[] body = new byte[rnd.nextInt(4) == 0 ? rnd.nextInt(8) : rnd.nextInt(4096)];
        rnd.nextBytes(body);
        final byte[] head;
        switch (rnd.nextInt(5))
        {
            case 0:
                head = FATBIN_MAGIC;
                break;
            case 1:
                head = ELF_MAGIC;
                break;
            case 2:
                head = PTX_HEADER.getBytes(StandardCharsets.US_ASCII);
                break;
            case 3:
                head = (PTX_HEADER + ".visible .entry k(\n").getBytes(StandardCharsets.US_ASCII);
                break;
            default:
                head = new byte[0];
                break;
        }
        final byte[] out = Arrays.copyOf(head, head.length + body.length);
        System.arraycopy(body, 0, out, head.length, body.length);
        return out;
    }

    /** KernelImage.of: an image of some kind, or IllegalArgumentException; never anything else. */
    static KernelImage imageOrNull(final byte[] bytes, final String where)
    {
        try
        {
            final KernelImage img = KernelImage.of("fuzz.img", bytes);
            Assert.assertNotNull(img.kind(), where);
            Assert.assertTrue(img.size() >= bytes.length, where + ": the image lost bytes");
            return img;
        }
        catch (final IllegalArgumentException e)
        {
            Assert.assertNotNull(e.getMessage(), where);
            return null;
        }
    }

    /** A random argument list; returns null when the builder refused an argument (as it must). */
    static KernelArgs randomArgs(final Random rnd, final DeviceBuffer buffer, final String where)
    {
        final KernelArgs args = KernelArgs.of();
        final int n = rnd.nextInt(10);
        int added = 0;
        for (int i = 0; i < n; i++)
        {
            try
            {
                switch (rnd.nextInt(9))
                {
                    case 0: args.addByte((byte) rnd.nextInt()); break;
                    case 1: args.addShort((short) rnd.nextInt()); break;
                    case 2: args.addInt(rnd.nextInt()); break;
                    case 3: args.addLong(rnd.nextLong()); break;
                    case 4: args.addFloat(rnd.nextFloat()); break;
                    case 5: args.addDouble(rnd.nextDouble()); break;
                    case 6: args.addPointer(rnd.nextLong()); break;
                    case 7:
                        final byte[] s = new byte[rnd.nextInt(3) == 0 ? 0 : 1 + rnd.nextInt(64)];
                        args.addBytes(s);
                        Assert.assertTrue(s.length > 0, where + ": an empty struct argument was taken");
                        break;
                    default:
                        final long off = rnd.nextInt(3) == 0 ? rnd.nextLong() : rnd.nextInt((int) buffer.size() + 2);
                        args.add(buffer, off);
                        Assert.assertTrue(off >= 0 && off <= buffer.size(), where + ": offset " + off + " taken");
                        break;
                }
                added++;
            }
            catch (final IllegalArgumentException e)
            {
                Assert.assertNotNull(e.getMessage(), where);
            }
        }
        Assert.assertEquals(args.count(), added, where + ": the argument count");
        return args;
    }

    /** A random launch shape: taken only when every dimension is in CUDA's limits. */
    static LaunchConfig randomShape(final Random rnd, final String where)
    {
        final int[] d = new int[6];
        for (int i = 0; i < 6; i++)
        {
            d[i] = rnd.nextInt(4) == 0 ? rnd.nextInt() : rnd.nextInt(4) == 0 ? 0 : 1 + rnd.nextInt(i < 3 ? 70_000 : 1100);
        }
        try
        {
            final LaunchConfig c = LaunchConfig.of(d[0], d[1], d[2], d[3], d[4], d[5]);
            Assert.assertTrue(c.threadsPerBlock() >= 1 && c.threadsPerBlock() <= 1024, where + ": " + c);
            Assert.assertTrue(c.blocks() >= 1, where + ": " + c);
            return rnd.nextBoolean() ? c : c.sharedBytes(rnd.nextInt(1 << 16));
        }
        catch (final IllegalArgumentException e)
        {
            Assert.assertNotNull(e.getMessage(), where);
            return null;
        }
    }

    @Test(groups = "host", timeOut = 120_000)
    public void hostileInputWithoutAGpu()
    {
        final long seed = seed();
        final long start = System.nanoTime();
        int rounds = 0;
        int images = 0;
        int compiles = 0;
        try (TransferEngine host = TransferEngine.builder().platform(Platform.HOST).build())
        {
            final TransferEngine closed = TransferEngine.builder().platform(Platform.HOST).build();
            closed.close();
            final DeviceBuffer buffer = host.getOrCreateP2pTransport(1).allocateBuffer(256);
            for (int round = 0; round < 5_000 && System.nanoTime() - start < budgetNanos(); round++, rounds++)
            {
                final String where = "seed=" + seed + " round=" + round + " (replay: -Dte4j.fuzz.moduleSeed=" + seed + ")";
                final Random rnd = new Random(seed * 1_000_003L + round);
                final KernelImage img = imageOrNull(hostileImage(rnd), where);
                if (img != null)
                {
                    images++;
                    final UnavailableException e = Assert.expectThrows(UnavailableException.class,
                        () -> DeviceModule.load(host, img));
                    Assert.assertTrue(e.getMessage().contains("CUDA"), where + ": " + e.getMessage());
                    final RuntimeException c = Assert.expectThrows(RuntimeException.class, () -> DeviceModule.load(closed, img));
                    Assert.assertTrue(c instanceof UnavailableException || c instanceof ClosedException, where + ": " + c);
                    try
                    {
                        img.loweredName("k" + rnd.nextInt(10));
                        Assert.fail(where + ": a lowered name of an image compiled without name expressions");
                    }
                    catch (final IllegalArgumentException expected)
                    {
                        Assert.assertNotNull(expected.getMessage(), where);
                    }
                }
                randomArgs(rnd, buffer, where);
                randomShape(rnd, where);
                // NVRTC: a library that is not there says so; broken source is a compile error with its log.
                if (round % 50 == 0)
                {
                    final UnavailableException u = KernelCompiler.probe("/nonexistent/te4j-fuzz-" + rnd.nextInt(1000)
                        + "/libnvrtc.so");
                    Assert.assertNotNull(u, where);
                    Assert.assertTrue(u.getMessage().contains("fix:"), where + ": " + u.getMessage());
                }
                if (round % 200 == 0)
                {
                    compiles++;
                    compileBroken(rnd, where);
                }
            }
            if (Availability.cudaDeviceCount() < 1)
            {
                // The CUDA platform without a GPU: a clear exception, never a crash.
                final Te4jException e = Assert.expectThrows(Te4jException.class,
                    () -> TransferEngine.builder().platform(Platform.CUDA).build().close());
                Assert.assertFalse(e.getMessage().isEmpty(), "seed=" + seed);
            }
        }
        System.out.println("DeviceModuleFuzzTest: seed=" + seed + " rounds=" + rounds + " images taken=" + images
            + " compiles=" + compiles);
        Assert.assertTrue(rounds > 0, "seed=" + seed + ": nothing ran");
    }

    /** Broken CUDA source to NVRTC: a Te4jException carrying the log, or UnavailableException without NVRTC. */
    private static void compileBroken(final Random rnd, final String where)
    {
        final String[] junk = {"extern \"C\" __global__ void k(int* p) { p[0] = ; }", "#include \"no/such/header.cuh\"",
            "__global__ void k() { undefined_call(); }", "\u0001\u0002 garbage {{{", "template <int N> __global__ void k();"
                + " extern \"C\" __global__ void g() { k<-1>(); }"};
        final String source = junk[rnd.nextInt(junk.length)];
        try
        {
            final KernelImage img = KernelCompiler.forArchitecture("sm_90").compile("fuzz" + rnd.nextInt(1 << 20)
                + ".cu", source);
            // Some of these are valid CUDA (a declaration only): an image is fine then.
            Assert.assertNotNull(img.kind(), where);
        }
        catch (final UnavailableException e)
        {
            Assert.assertFalse(KernelCompiler.isAvailable(), where + ": NVRTC is available, yet " + e);
            Assert.assertTrue(e.getMessage().contains("fix:"), where + ": " + e.getMessage());
        }
        catch (final Te4jException e)
        {
            Assert.assertFalse(e.getMessage().isEmpty(), where);
        }
    }

    static final String KERNEL = """
        extern "C" __global__ void fill(unsigned char* p, unsigned long long n, int v)
        {
            for (unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
                 i += (unsigned long long)gridDim.x * blockDim.x)
            {
                p[i] = (unsigned char)v;
            }
        }
        """;

    /** On the GPU host: random launches of a real kernel, most of them wrong. */
    @Test(groups = {"cuda", "cuda-kernels"}, timeOut = 300_000)
    public void randomLaunchesOnCuda()
    {
        if (Availability.cudaDeviceCount() < 1)
        {
            throw new SkipException("needs a CUDA device: " + Availability.describe());
        }
        if (!KernelCompiler.isAvailable())
        {
            throw new SkipException("NVRTC is unavailable: " + KernelCompiler.unavailabilityCause().getMessage());
        }
        final long seed = seed();
        final long start = System.nanoTime();
        final KernelImage image = KernelCompiler.forDevice(0).compile("fuzz_fill.cu", KERNEL);
        int launched = 0;
        int refused = 0;
        try (TransferEngine engine = TransferEngine.builder().platform(Platform.CUDA).device(0).build())
        {
            final DeviceBuffer buf = engine.getOrCreateP2pTransport(1).allocateBuffer(1 << 16);
            final DeviceModule module = DeviceModule.load(engine, image);
            final Kernel fill = module.kernel("fill");
            final OpStream stream = engine.createStream();
            for (int round = 0; round < 2_000 && System.nanoTime() - start < budgetNanos(); round++)
            {
                final String where = "seed=" + seed + " round=" + round + " (replay: -Dte4j.fuzz.moduleSeed=" + seed + ")";
                final Random rnd = new Random(seed * 1_000_003L + round);
                // A bad image loaded for real: the driver's error as Te4jException.
                if (round % 25 == 0)
                {
                    final KernelImage bad = imageOrNull(hostileImage(rnd), where);
                    if (bad != null)
                    {
                        try
                        {
                            DeviceModule.load(engine, bad).close();
                        }
                        catch (final Te4jException e)
                        {
                            Assert.assertFalse(e.getMessage().isEmpty(), where);
                        }
                    }
                }
                final boolean right = rnd.nextInt(4) == 0;
                final KernelArgs args = right
                    ? KernelArgs.of().add(buf, 0).addLong(1 + rnd.nextInt(1 << 16)).addInt(rnd.nextInt())
                    : randomArgs(rnd, buf, where);
                final LaunchConfig shape = rnd.nextBoolean() ? LaunchConfig.of(1 + rnd.nextInt(64), 32 * (1 + rnd.nextInt(32)))
                    : randomShape(rnd, where);
                if (shape == null || (!right && args.count() == 3 && args.sizeOf(0) == 8 && args.sizeOf(1) == 8
                    && args.sizeOf(2) == 4))
                {
                    // A random list that matches fill's signature could carry a wild pointer: that is
                    // a faulting kernel (sticky for the context, UserKernelCudaTest's subject), not a refusal.
                    continue;
                }
                try
                {
                    fill.launch(stream, shape, args);
                    launched++;
                }
                catch (final IllegalArgumentException | Te4jException e)
                {
                    refused++;
                    Assert.assertFalse(right && shape.threadsPerBlock() <= fill.maxThreadsPerBlock()
                        && e instanceof IllegalArgumentException && shape.sharedBytes() == 0, where + ": " + e);
                }
            }
            stream.synchronize(java.time.Duration.ofSeconds(30));
            // After close: the module, then the stream.
            final OpStream other = engine.createStream();
            module.close();
            final KernelArgs good = KernelArgs.of().add(buf, 0).addLong(64).addInt(1);
            Assert.expectThrows(RuntimeException.class, () -> fill.launch(other, LaunchConfig.of(1, 32), good));
            stream.close();
            Assert.expectThrows(RuntimeException.class, () -> fill.launch(stream, LaunchConfig.of(1, 32), good));
        }
        System.out.println("DeviceModuleFuzzTest.cuda: seed=" + seed + " launched=" + launched + " refused=" + refused);
    }
}
