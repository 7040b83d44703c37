package io.github.te4j;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;
import org.bytedeco.javacpp.BytePointer;
import org.testng.Assert;
import org.testng.SkipException;
import org.testng.annotations.Test;

/**
 * The module API without a GPU: NVRTC compiles of kernels that include te4j's device headers
 * for an explicit architecture (sm_90), the compile log, name expressions, the image cache, the
 * CommCtx layout (NVRTC and nvcc against libte4j's own), and argument validation. Tests that
 * need NVRTC or nvcc skip, with the reason, where they are missing.
 */
public class KernelCompilerTest
{
    static final String PUT_SIGNAL = """
        #include "transport/device/comm_device.cuh"
        using namespace mooncake::device;
        extern "C" __global__ void put_signal(CommCtx ctx, int dst, const unsigned char* src,
                                              unsigned char* dst_local, unsigned long long n,
                                              uint32_t* sig, uint32_t value)
        {
            unsigned char* peer = (unsigned char*)mc_route_put(ctx, dst, dst_local);
            for (unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
                 i += (unsigned long long)gridDim.x * blockDim.x)
            {
                peer[i] = src[i];
            }
            __syncthreads();
            if (threadIdx.x == 0)
            {
                __threadfence_system();
                mc_signal(ctx, dst, 0, 1, sig, value);
            }
        }
        """;

    /** Set (to anything but "0") where NVRTC was installed for the run: a missing NVRTC then fails instead of skipping. */
    static final String REQUIRE_NVRTC = "TE4J_REQUIRE_NVRTC";

    static void needNvrtc()
    {
        if (!KernelCompiler.isAvailable())
        {
            final String why = "NVRTC is unavailable here: " + KernelCompiler.unavailabilityCause().getMessage();
            final String required = System.getenv(REQUIRE_NVRTC);
            if (required != null && !required.isEmpty() && !required.equals("0"))
            {
                Assert.fail(REQUIRE_NVRTC + "=" + required + " but " + why);
            }
            throw new SkipException(why);
        }
    }

    @Test
    public void unavailableNvrtcSaysWhyAndHowToFix()
    {
        final UnavailableException e = KernelCompiler.probe("/nonexistent/te4j-test/libnvrtc.so.13");
        Assert.assertNotNull(e, "a library that does not exist loaded");
        Assert.assertEquals(e.code(), Te4jException.Code.UNAVAILABLE);
        Assert.assertTrue(e.getMessage().contains("unavailable"), e.getMessage());
        Assert.assertTrue(e.getMessage().contains("/nonexistent/te4j-test/libnvrtc.so.13"), e.getMessage());
        Assert.assertTrue(e.getMessage().contains("fix:"), e.getMessage());
        // The probe leaves the library in use (if any) alone.
        Assert.assertEquals(KernelCompiler.isAvailable(), KernelCompiler.unavailabilityCause() == null);
    }

    @Test
    public void compileWithoutNvrtcThrowsTheCause()
    {
        if (KernelCompiler.isAvailable())
        {
            throw new SkipException("NVRTC is available here (" + KernelCompiler.library() + ")");
        }
        final UnavailableException e = Assert.expectThrows(UnavailableException.class,
            () -> KernelCompiler.forArchitecture("sm_90").compile("k.cu", PUT_SIGNAL));
        Assert.assertTrue(e.getMessage().contains("fix:"), e.getMessage());
    }

    @Test
    public void compilesAUserKernelWithTe4jHeadersForSm90()
    {
        needNvrtc();
        final KernelImage cubin = KernelCompiler.forArchitecture("sm_90").compile("put_signal.cu", PUT_SIGNAL);
        Assert.assertEquals(cubin.kind(), KernelImage.Kind.CUBIN);
        final byte[] b = cubin.bytes();
        Assert.assertTrue(b.length > 256, "cubin of " + b.length + " bytes");
        Assert.assertEquals(new String(b, 1, 3, StandardCharsets.ISO_8859_1), "ELF");
        Assert.assertTrue(new String(b, StandardCharsets.ISO_8859_1).contains("put_signal"), "kernel symbol missing");

        final KernelImage ptx = KernelCompiler.forArchitecture("compute_90").compile("put_signal.cu", PUT_SIGNAL);
        Assert.assertEquals(ptx.kind(), KernelImage.Kind.PTX);
        final String text = new String(ptx.bytes(), StandardCharsets.US_ASCII);
        Assert.assertTrue(text.contains(".entry put_signal"), text.substring(0, Math.min(400, text.length())));
        Assert.assertTrue(text.contains(".target sm_90"), "PTX target");
        Assert.assertEquals(ptx.bytes()[ptx.size() - 1], 0, "PTX ends with NUL");
        // A compiled image round-trips through KernelImage.of (what a file or resource gives).
        Assert.assertEquals(KernelImage.of("again", cubin.bytes()).kind(), KernelImage.Kind.CUBIN);
        Assert.assertEquals(KernelImage.of("again", ptx.bytes()).kind(), KernelImage.Kind.PTX);
    }

    @Test
    public void compileErrorCarriesTheLog()
    {
        needNvrtc();
        final String bad = "extern \"C\" __global__ void broken(int* p) { p[0] = undeclared_thing; }\n";
        final Te4jException e = Assert.expectThrows(Te4jException.class,
            () -> KernelCompiler.forArchitecture("sm_90").compile("broken.cu", bad));
        Assert.assertEquals(e.code(), Te4jException.Code.INVALID_ARGUMENT);
        Assert.assertTrue(e.getMessage().contains("broken.cu"), e.getMessage());
        Assert.assertTrue(e.getMessage().contains("undeclared_thing"), "log missing: " + e.getMessage());
        final Te4jException opt = Assert.expectThrows(Te4jException.class,
            () -> KernelCompiler.forArchitecture("sm_90").withOptions("--no-such-option").compile("k.cu", PUT_SIGNAL));
        Assert.assertTrue(opt.getMessage().contains("k.cu"), opt.getMessage());
    }

    /**
     * te4j's headers compile with NVRTC's built-in headers alone (a machine with NVRTC but no
     * CUDA toolkit, such as one with Debian's libnvrtc12): only mc_grid_sync needs the toolkit's
     * cooperative groups, and a kernel calling it without them fails with the fix in the message.
     * Where a toolkit is found, the same kernel compiles because KernelCompiler adds its folder.
     */
    @Test
    public void headersNeedTheToolkitOnlyForGridSync()
    {
        needNvrtc();
        final String gridSync = """
            #include "transport/device/comm_device.cuh"
            extern "C" __global__ void meet(int* p) { p[blockIdx.x] = 1; mooncake::device::mc_grid_sync(); }
            """;
        final String previous = System.getProperty("te4j.cudaInclude");
        System.setProperty("te4j.cudaInclude", CudaToolkitHeaders.NONE);
        try
        {
            KernelCompiler.clearMemoryCache();
            final KernelImage img = KernelCompiler.forArchitecture("sm_90").compile("put_signal.cu", PUT_SIGNAL);
            Assert.assertEquals(img.kind(), KernelImage.Kind.CUBIN);
            final Te4jException e = Assert.expectThrows(Te4jException.class,
                () -> KernelCompiler.forArchitecture("sm_90").compile("meet.cu", gridSync));
            Assert.assertTrue(e.getMessage().contains("cooperative_groups.h"), e.getMessage());
            Assert.assertTrue(e.getMessage().contains("te4j.cudaInclude"), "no fix in: " + e.getMessage());
        }
        finally
        {
            if (previous == null)
            {
                System.clearProperty("te4j.cudaInclude");
            }
            else
            {
                System.setProperty("te4j.cudaInclude", previous);
            }
            KernelCompiler.clearMemoryCache();
        }
        if (CudaToolkitHeaders.find().isEmpty())
        {
            throw new SkipException("no CUDA toolkit headers here: " + CudaToolkitHeaders.FIX);
        }
        final KernelImage img = KernelCompiler.forArchitecture("sm_90").compile("meet.cu", gridSync);
        Assert.assertTrue(new String(img.bytes(), StandardCharsets.ISO_8859_1).contains("meet"), "meet is not in its cubin");
    }

    @Test
    public void nameExpressionsGiveLoweredNames()
    {
        needNvrtc();
        final String src = """
            #include "transport/device/comm_device.cuh"
            template <typename T, int N>
            __global__ void scale(T* p, T f) { for (int i = threadIdx.x; i < N; i += blockDim.x) p[i] *= f; }
            """;
        final KernelImage img = KernelCompiler.forArchitecture("sm_90")
            .compile("scale.cu", src, "&scale<float, 4>", "&scale<int, 8>");
        final String f = img.loweredName("&scale<float, 4>");
        final String i = img.loweredName("&scale<int, 8>");
        Assert.assertTrue(f.startsWith("_Z") && f.contains("scale"), f);
        Assert.assertTrue(i.startsWith("_Z") && i.contains("scale"), i);
        Assert.assertNotEquals(f, i);
        Assert.assertTrue(new String(img.bytes(), StandardCharsets.ISO_8859_1).contains(f), "instance not in the cubin");
        Assert.expectThrows(IllegalArgumentException.class, () -> img.loweredName("&scale<double, 2>"));
        final Te4jException e = Assert.expectThrows(Te4jException.class,
            () -> KernelCompiler.forArchitecture("sm_90").compile("scale.cu", src, "&no_such_kernel<int>"));
        Assert.assertTrue(e.getMessage().contains("no_such_kernel"), e.getMessage());
    }

    @Test
    public void imagesAreCachedInMemoryAndOnDisk() throws Exception
    {
        needNvrtc();
        final String src = PUT_SIGNAL + "\n// cache test " + System.nanoTime() + "\n";
        final KernelCompiler c = KernelCompiler.forArchitecture("sm_90");
        final KernelImage first = c.compile("cached.cu", src);
        Assert.assertFalse(first.fromCache());
        Assert.assertTrue(first.compileNanos() > 0);
        final KernelImage second = c.compile("cached.cu", src);
        Assert.assertTrue(second.fromCache(), "same source, options and architecture compiled again");
        Assert.assertEquals(second.bytes(), first.bytes());
        Assert.assertFalse(c.withOptions("-DTE4J_TEST_OTHER=1").compile("cached.cu", src).fromCache(),
            "other options share a cache entry");
        Assert.assertFalse(KernelCompiler.forArchitecture("sm_80").compile("cached.cu", src).fromCache(),
            "another architecture shares a cache entry");

        final Path dir = Files.createTempDirectory("te4j-kernel-cache");
        final String src2 = src + "// disk\n";
        final KernelImage written = c.withDiskCache(dir).compile("disk.cu", src2, "&put_signal");
        Assert.assertFalse(written.fromCache());
        try (var files = Files.list(dir))
        {
            Assert.assertEquals(files.filter(p -> p.toString().endsWith(".img")).count(), 1L);
        }
        KernelCompiler.clearMemoryCache();
        Assert.assertEquals(KernelCompiler.memoryCacheSize(), 0);
        final long t0 = System.nanoTime();
        final KernelImage read = c.withDiskCache(dir).compile("disk.cu", src2, "&put_signal");
        final long loadNanos = System.nanoTime() - t0;
        Assert.assertTrue(read.fromCache(), "not read from the disk cache");
        Assert.assertEquals(read.bytes(), written.bytes());
        Assert.assertEquals(read.loweredName("&put_signal"), written.loweredName("&put_signal"));
        System.out.println("NVRTC compile " + TimeUnit.NANOSECONDS.toMicros(written.compileNanos())
            + " us, disk-cached load " + TimeUnit.NANOSECONDS.toMicros(loadNanos) + " us");
    }

    /** The layout libte4j marshals (its own sizeof/offsetof) as static_asserts for a device compiler. */
    static String layoutAsserts()
    {
        final Map<String, Long> l = layout();
        return "#include <stddef.h>\n#include \"transport/device/comm_device.cuh\"\n"
            + "using mooncake::device::CommCtx;\n"
            + "static_assert(sizeof(CommCtx) == " + l.get("size") + ", \"sizeof(CommCtx)\");\n"
            + "static_assert(alignof(CommCtx) == " + l.get("align") + ", \"alignof(CommCtx)\");\n"
            + "static_assert(offsetof(CommCtx, p2p) == " + l.get("p2p") + ", \"offsetof p2p\");\n"
            + "static_assert(offsetof(CommCtx, ibgda) == " + l.get("ibgda") + ", \"offsetof ibgda\");\n"
            + "static_assert(offsetof(CommCtx, rank) == " + l.get("rank") + ", \"offsetof rank\");\n"
            + "static_assert(sizeof(mooncake::device::P2PContext) == " + l.get("p2p.size") + ", \"P2PContext\");\n"
            + "static_assert(sizeof(mooncake::device::IbgdaContext) == " + l.get("ibgda.size") + ", \"IbgdaContext\");\n"
            + "extern \"C\" __global__ void layout_probe(CommCtx ctx, int* out) { out[0] = ctx.rank; }\n";
    }

    static Map<String, Long> layout()
    {
        final Map<String, Long> m = new HashMap<>();
        for (final String kv : CommContext.commCtxLayout().split(" "))
        {
            final String[] p = kv.split("=");
            m.put(p[0], Long.parseLong(p[1]));
        }
        Assert.assertEquals((long) m.get("size"), CommContext.commCtxSize());
        return m;
    }

    @Test
    public void commCtxLayoutMatchesNvrtc()
    {
        needNvrtc();
        KernelCompiler.forArchitecture("sm_90").compile("layout.cu", layoutAsserts());
        // And a wrong size is caught (the check can fail).
        final String wrong = layoutAsserts().replace("sizeof(CommCtx) == ", "sizeof(CommCtx) == 1 + ");
        Assert.expectThrows(Te4jException.class, () -> KernelCompiler.forArchitecture("sm_90").compile("bad.cu", wrong));
    }

    @Test
    public void commCtxLayoutMatchesNvcc() throws Exception
    {
        final Path nvcc = Path.of(System.getenv().getOrDefault("CUDA_HOME", "/usr/local/cuda"), "bin", "nvcc");
        if (!Files.isExecutable(nvcc))
        {
            throw new SkipException("nvcc not found at " + nvcc);
        }
        final Path dir = Files.createTempDirectory("te4j-layout");
        final Path src = dir.resolve("layout.cu");
        Files.writeString(src, layoutAsserts());
        final Path include = DeviceHeaders.get().dir();
        final Process p = new ProcessBuilder(nvcc.toString(), "-std=c++17", "-arch=sm_90", "-c", "-I" + include,
            "-o", dir.resolve("layout.o").toString(), src.toString()).redirectErrorStream(true).start();
        final String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        Assert.assertTrue(p.waitFor(300, TimeUnit.SECONDS), "nvcc did not finish");
        Assert.assertEquals(p.exitValue(), 0, "nvcc's CommCtx differs from libte4j's (" + CommContext.commCtxLayout()
            + "):\n" + out);
    }

    /**
     * Every kernel source of the tests, the example and the bench compiles with nvcc against the
     * shipped headers: what NVRTC compiles on the GPU host is checked here without NVRTC.
     */
    @Test
    public void userKernelSourcesCompileWithNvcc() throws Exception
    {
        final Path nvcc = Path.of(System.getenv().getOrDefault("CUDA_HOME", "/usr/local/cuda"), "bin", "nvcc");
        if (!Files.isExecutable(nvcc))
        {
            throw new SkipException("nvcc not found at " + nvcc);
        }
        final Map<String, String> sources = new java.util.LinkedHashMap<>();
        sources.put("put_signal", UserKernelSources.PUT_SIGNAL);
        sources.put("add_many", UserKernelSources.ADD_MANY);
        sources.put("grid_exchange", UserKernelSources.GRID_EXCHANGE);
        sources.put("poke", UserKernelSources.POKE);
        sources.put("wait_or_trap", UserKernelSources.WAIT_OR_TRAP);
        final Path dir = Files.createTempDirectory("te4j-user-kernels");
        for (final Map.Entry<String, String> e : sources.entrySet())
        {
            final Path src = dir.resolve(e.getKey() + ".cu");
            Files.writeString(src, e.getValue());
            final Process p = new ProcessBuilder(nvcc.toString(), "-std=c++17", "-cubin", "-arch=sm_90",
                "-I" + DeviceHeaders.get().dir(), "-o", dir.resolve(e.getKey() + ".cubin").toString(), src.toString())
                .redirectErrorStream(true).start();
            final String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            Assert.assertTrue(p.waitFor(300, TimeUnit.SECONDS), "nvcc did not finish on " + e.getKey());
            Assert.assertEquals(p.exitValue(), 0, e.getKey() + " does not compile:\n" + out);
            final KernelImage img = KernelImage.fromFile(dir.resolve(e.getKey() + ".cubin"));
            Assert.assertEquals(img.kind(), KernelImage.Kind.CUBIN, e.getKey());
        }
    }

    /**
     * The kernels the GPU-host tests compile with NVRTC (UserKernelCudaTest) compile here too,
     * for sm_90 without a GPU and without the CUDA toolkit's headers (none of them calls
     * mc_grid_sync).
     */
    @Test
    public void userKernelSourcesCompileWithNvrtc()
    {
        needNvrtc();
        final Map<String, String> sources = new java.util.LinkedHashMap<>();
        sources.put("add_many", UserKernelSources.ADD_MANY);
        sources.put("grid_exchange", UserKernelSources.GRID_EXCHANGE);
        sources.put("poke", UserKernelSources.POKE);
        sources.put("wait_or_trap", UserKernelSources.WAIT_OR_TRAP);
        final KernelCompiler c = KernelCompiler.forArchitecture("sm_90");
        for (final Map.Entry<String, String> e : sources.entrySet())
        {
            final KernelImage img = c.compile(e.getKey() + ".cu", e.getValue());
            Assert.assertEquals(img.kind(), KernelImage.Kind.CUBIN, e.getKey());
            Assert.assertTrue(new String(img.bytes(), StandardCharsets.ISO_8859_1).contains(e.getKey()),
                e.getKey() + " is not in its cubin");
        }
    }

    @Test
    public void commCtxBytesAreTheNativeStruct()
    {
        try (HostInProcessTest.Pair p = new HostInProcessTest.Pair(Platform.HOST, 4096))
        {
            final Map<String, Long> l = layout();
            for (int r = 0; r < 2; r++)
            {
                final byte[] b = p.ctx[r].commCtxBytes();
                Assert.assertEquals(b.length, CommContext.commCtxSize());
                final ByteBuffer bb = ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
                Assert.assertEquals(bb.getInt((int) (long) l.get("rank")), r, "rank field");
                // P2PContext starts with the availability table, then the peer pointers: both set.
                Assert.assertNotEquals(bb.getLong((int) (long) l.get("p2p")), 0L, "p2p.available");
                try (BytePointer ptr = p.ctx[r].commCtxPointer())
                {
                    final byte[] fromPtr = new byte[b.length];
                    ptr.get(fromPtr);
                    Assert.assertEquals(fromPtr, b);
                }
            }
            final KernelArgs args = KernelArgs.of().add(p.ctx[1]).addInt(7).add(p.windows[0], 16).addLong(-2L)
                .addFloat(1.5f).addByte((byte) 3);
            final Lock[] locks = NativeResource.enterAll(p.ctx[1], p.windows[0]);
            try
            {
                args.marshal();
            }
            finally
            {
                NativeResource.exitAll(locks);
            }
            final long[] offsets = args.marshalledOffsets();
            Assert.assertEquals(offsets.length, args.count());
            final ByteBuffer bb = args.marshalledBlock();
            final long offsetsAt = args.offsetsAddress() - args.blockAddress();
            for (int i = 0; i < offsets.length; i++)
            {
                Assert.assertEquals(bb.getLong((int) (offsetsAt + 8 * i)), offsets[i], "offset " + i + " in the block");
            }
            Assert.assertEquals(bb.getInt((int) (offsets[0] + l.get("rank"))), 1);
            Assert.assertEquals(bb.getInt((int) offsets[1]), 7);
            Assert.assertEquals(bb.getLong((int) offsets[2]), p.windows[0].address() + 16);
            Assert.assertEquals(bb.getLong((int) offsets[3]), -2L);
            Assert.assertEquals(bb.getFloat((int) offsets[4]), 1.5f);
            Assert.assertEquals(bb.get((int) offsets[5]), 3);
            for (final long o : offsets)
            {
                Assert.assertEquals(o % 16, 0, "parameter offsets are 16-byte aligned");
            }
            Assert.assertEquals(args.sizeOf(0), CommContext.commCtxSize());
            // A context's bytes are copied again only after the context changed natively.
            final byte[] ctxBytes = new byte[(int) CommContext.commCtxSize()];
            bb.get((int) offsets[0], ctxBytes);
            Assert.assertEquals(ctxBytes, p.ctx[1].commCtxBytes());
            Assert.assertEquals(args.ctxCopies(), 1);
            marshalEntered(args, p.ctx[1], p.windows[0]);
            Assert.assertEquals(args.ctxCopies(), 1, "an unchanged context is not copied again");
            p.ctx[1].commCtxChanged();
            marshalEntered(args, p.ctx[1], p.windows[0]);
            Assert.assertEquals(args.ctxCopies(), 2, "a changed context is copied again");
            args.addInt(9);
            marshalEntered(args, p.ctx[1], p.windows[0]);
            Assert.assertEquals(args.ctxCopies(), 3, "a new layout copies the context");
            Assert.assertEquals(args.marshalledBlock().getInt((int) args.marshalledOffsets()[6]), 9);
            final CommContext closed = p.ctx[0];
            closed.close();
            Assert.expectThrows(ClosedException.class, closed::commCtxBytes);
            Assert.expectThrows(ClosedException.class, closed::commCtxPointer);
        }
    }

    private static void marshalEntered(final KernelArgs args, final NativeResource... used)
    {
        final Lock[] locks = NativeResource.enterAll(used);
        try
        {
            args.marshal();
        }
        finally
        {
            NativeResource.exitAll(locks);
        }
    }

    @Test
    public void argumentsAreValidated() throws Exception
    {
        for (final String a : new String[] {null, "", "sm9", "sm_", "gfx90a", "sm_90 -G"})
        {
            Assert.expectThrows(IllegalArgumentException.class, () -> KernelCompiler.forArchitecture(a));
        }
        final KernelCompiler c = KernelCompiler.forArchitecture("sm_90");
        Assert.assertEquals(c.architecture(), "sm_90");
        Assert.expectThrows(IllegalArgumentException.class, () -> c.withOptions((String[]) null));
        Assert.expectThrows(IllegalArgumentException.class, () -> c.withOptions("-DA=1", null));
        Assert.expectThrows(IllegalArgumentException.class, () -> c.withOptions("-DA=1\n-DB=2"));
        Assert.expectThrows(IllegalArgumentException.class, () -> c.withOptions(" "));
        Assert.expectThrows(IllegalArgumentException.class, () -> c.withDiskCache(null));
        Assert.assertEquals(c.withOptions("-DA=1").options(), List.of("-DA=1"));
        Assert.assertEquals(c.options(), List.of(), "withOptions changed the original");
        Assert.expectThrows(IllegalArgumentException.class, () -> c.compile(null, PUT_SIGNAL));
        Assert.expectThrows(IllegalArgumentException.class, () -> c.compile("k.cu", null));
        Assert.expectThrows(IllegalArgumentException.class, () -> c.compile("k.cu", "  "));
        Assert.expectThrows(IllegalArgumentException.class, () -> c.compile("k.cu", "a\0b"));
        Assert.expectThrows(IllegalArgumentException.class, () -> c.compile("k.cu", PUT_SIGNAL, (String) null));
        Assert.expectThrows(IllegalArgumentException.class, () -> c.compile("k.cu", PUT_SIGNAL, "&a\n&b"));
        Assert.expectThrows(IllegalArgumentException.class, () -> KernelCompiler.forDevice(-1));
        Assert.expectThrows(IllegalArgumentException.class, () -> KernelCompiler.probe(""));
        Assert.expectThrows(IllegalArgumentException.class, () -> KernelCompiler.probe(null));

        Assert.expectThrows(IllegalArgumentException.class, () -> KernelImage.of("x", null));
        Assert.expectThrows(IllegalArgumentException.class, () -> KernelImage.of(null, new byte[] {1}));
        Assert.expectThrows(IllegalArgumentException.class, () -> KernelImage.of("x", new byte[0]));
        Assert.expectThrows(IllegalArgumentException.class, () -> KernelImage.of("x", "hello".getBytes()));
        final KernelImage ptx = KernelImage.of("p.ptx", ".version 8.0\n.target sm_90\n.address_size 64\n".getBytes());
        Assert.assertEquals(ptx.kind(), KernelImage.Kind.PTX);
        Assert.assertEquals(ptx.bytes()[ptx.size() - 1], 0, "NUL appended to PTX");
        Assert.assertEquals(KernelImage.of("f", new byte[] {0x50, (byte) 0xED, 0x55, (byte) 0xBA, 1, 0}).kind(),
            KernelImage.Kind.FATBIN);
        Assert.expectThrows(java.io.IOException.class, () -> KernelImage.fromResource(getClass(), "/no/such.cubin"));
        Assert.expectThrows(IllegalArgumentException.class, () -> KernelImage.fromFile(null));
        Assert.expectThrows(IllegalArgumentException.class, () -> ptx.loweredName("&k"));

        Assert.expectThrows(IllegalArgumentException.class, () -> LaunchConfig.of(0, 32));
        Assert.expectThrows(IllegalArgumentException.class, () -> LaunchConfig.of(1, 0));
        Assert.expectThrows(IllegalArgumentException.class, () -> LaunchConfig.of(1, 1025));
        Assert.expectThrows(IllegalArgumentException.class, () -> LaunchConfig.of(1, 1, 1, 64, 32, 1));
        Assert.expectThrows(IllegalArgumentException.class, () -> LaunchConfig.of(1, 70000, 1, 1, 1, 1));
        Assert.expectThrows(IllegalArgumentException.class, () -> LaunchConfig.of(1, 32).sharedBytes(-1));
        final LaunchConfig lc = LaunchConfig.of(4, 128).sharedBytes(1024).cooperative(true);
        Assert.assertEquals(lc.blocks(), 4L);
        Assert.assertEquals(lc.threadsPerBlock(), 128);
        Assert.assertTrue(lc.isCooperative());
        Assert.assertFalse(LaunchConfig.of(4, 128).isCooperative());

        Assert.expectThrows(IllegalArgumentException.class, () -> KernelArgs.of().add((CommContext) null));
        Assert.expectThrows(IllegalArgumentException.class, () -> KernelArgs.of().add((DeviceBuffer) null));
        Assert.expectThrows(IllegalArgumentException.class, () -> KernelArgs.of().addBytes(null));
        Assert.expectThrows(IllegalArgumentException.class, () -> KernelArgs.of().addBytes(new byte[0]));

        Assert.expectThrows(IllegalArgumentException.class, () -> DeviceModule.load(null, ptx));
        try (TransferEngine host = TransferEngine.builder().platform(Platform.HOST).build())
        {
            Assert.expectThrows(IllegalArgumentException.class, () -> DeviceModule.load(host, null));
            final UnavailableException e = Assert.expectThrows(UnavailableException.class,
                () -> DeviceModule.load(host, ptx));
            Assert.assertTrue(e.getMessage().contains("CUDA"), e.getMessage());
            final DeviceBuffer b = host.getOrCreateP2pTransport(1).allocateBuffer(64);
            Assert.expectThrows(IllegalArgumentException.class, () -> KernelArgs.of().add(b, 65));
            Assert.expectThrows(IllegalArgumentException.class, () -> KernelArgs.of().add(b, -1));
            Assert.assertEquals(KernelArgs.of().add(b, 64).count(), 1);
        }
    }
}
