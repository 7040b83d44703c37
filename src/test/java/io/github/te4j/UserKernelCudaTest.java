package io.github.te4j;

import io.github.te4j.check.Patterns;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.testng.Assert;
import org.testng.SkipException;
import org.testng.annotations.AfterClass;
import org.testng.annotations.BeforeClass;
import org.testng.annotations.Test;

/**
 * Users' own kernels on CUDA, both ranks on GPU 0 in one JVM (direct pointers between the
 * ranks' windows): NVRTC- and nvcc-built kernels doing put+signal with random data and
 * poisoned destinations, a many-writer total, a cooperative grid barrier, a CUDA-graph replay,
 * launch validation, and deliberate faults (in child JVMs, since a fault is sticky) reported as
 * exceptions without a crash. Skips with the reason without a GPU (or NVRTC / nvcc for the
 * tests that need them).
 */
@Test(groups = {"cuda", "cuda-kernels"})
public class UserKernelCudaTest
{
    private static final Duration T = Duration.ofSeconds(60L * Integer.getInteger("te4j.timeoutScale", 1));
    private static final long DATA = 1 << 20;
    private static final long SIG = DATA + 256;
    private static final long WINDOW = DATA + 4096;
    private static final int BLOCKS = 8;
    private static final int THREADS = 256;

    private final TransferEngine[] engines = new TransferEngine[2];
    private final DeviceBuffer[] windows = new DeviceBuffer[2];
    private final CommContext[] ctx = new CommContext[2];
    private final OpStream[] streams = new OpStream[2];
    private DeviceBuffer src;
    private int signalled;

    @BeforeClass(alwaysRun = true)
    public void setUp()
    {
        if (Availability.cudaDeviceCount() < 1)
        {
            throw new SkipException("needs a CUDA device: " + Availability.describe());
        }
        final List<IpcHandle> handles = new ArrayList<>();
        for (int r = 0; r < 2; r++)
        {
            engines[r] = TransferEngine.builder().platform(Platform.CUDA).device(0).build();
            windows[r] = engines[r].getOrCreateP2pTransport(2).allocateBuffer(WINDOW);
            handles.add(engines[r].getOrCreateP2pTransport(2).exportHandle(windows[r]));
            streams[r] = engines[r].createStream();
        }
        for (int r = 0; r < 2; r++)
        {
            ctx[r] = engines[r].getOrCreateP2pTransport(2).importPeerHandles(windows[r], r, handles, 0b11);
        }
        src = engines[0].getOrCreateP2pTransport(2).allocateBuffer(DATA);
    }

    @AfterClass(alwaysRun = true)
    public void tearDown()
    {
        for (final TransferEngine e : engines)
        {
            if (e != null)
            {
                e.close();
            }
        }
    }

    private static void needNvrtc()
    {
        if (!KernelCompiler.isAvailable())
        {
            throw new SkipException("NVRTC is unavailable: " + KernelCompiler.unavailabilityCause().getMessage());
        }
    }

    private static KernelImage nvrtc(final String name, final String source, final String... exprs)
    {
        needNvrtc();
        return KernelCompiler.forDevice(0).compile(name, source, exprs);
    }

    private static KernelArgs putArgs(final CommContext c, final DeviceBuffer from, final long n, final int value)
    {
        return KernelArgs.of().add(c).addInt(1).add(from).add(c.localBuffer(), 0).addLong(n)
            .add(c.localBuffer(), SIG).addInt(value);
    }

    /** Rank 0's kernel puts n random bytes into rank 1's window and signals; rank 1 verifies. */
    private void putSignalRounds(final Kernel k, final String what)
    {
        for (final long n : new long[] {1, 4093, 65536, DATA})
        {
            final long seed = Patterns.seed(System.nanoTime(), 0, 1, n);
            Patterns.write(src, 0, n, seed);
            windows[1].fill(0, Math.min(n + 64, DATA), Patterns.POISON);
            k.launch(streams[0], LaunchConfig.of(BLOCKS, THREADS), putArgs(ctx[0], src, n, 1));
            signalled += BLOCKS;
            streams[1].waitSignal(ctx[1], SIG, signalled, T);
            streams[1].synchronize(T);
            streams[0].synchronize(T);
            Assert.assertNull(Patterns.verify(windows[1], 0, n, seed), what + " size " + n);
            if (n + 16 <= DATA)
            {
                Assert.assertNull(Patterns.verifyPoison(windows[1], n, 16), what + " overrun at size " + n);
            }
        }
    }

    /**
     * A launch needs no CUDA context current on the launching thread (te4j does not set one per
     * launch): a thread that never called CUDA launches, the test's thread prepares and verifies.
     */
    private void launchFromAFreshThread(final Kernel k) throws InterruptedException
    {
        final long n = 65536;
        final long seed = Patterns.seed(System.nanoTime(), 0, 1, n);
        Patterns.write(src, 0, n, seed);
        windows[1].fill(0, n + 64, Patterns.POISON);
        final KernelArgs args = putArgs(ctx[0], src, n, 1);
        final RuntimeException[] failed = new RuntimeException[1];
        final Thread fresh = new Thread(() ->
        {
            try
            {
                k.launch(streams[0], LaunchConfig.of(BLOCKS, THREADS), args);
            }
            catch (final RuntimeException e)
            {
                failed[0] = e;
            }
        }, "never-used-cuda");
        fresh.start();
        fresh.join();
        if (failed[0] != null)
        {
            throw failed[0];
        }
        signalled += BLOCKS;
        streams[1].waitSignal(ctx[1], SIG, signalled, T);
        streams[0].synchronize(T);
        Assert.assertNull(Patterns.verify(windows[1], 0, n, seed), "launch from a fresh thread");
        Assert.assertNull(Patterns.verifyPoison(windows[1], n, 16), "overrun, launch from a fresh thread");
    }

    @Test(timeOut = 300_000)
    public void nvrtcKernelPutsAndSignals() throws InterruptedException
    {
        final KernelImage image = nvrtc("put_signal.cu", UserKernelSources.PUT_SIGNAL);
        try (DeviceModule m = DeviceModule.load(engines[0], image))
        {
            final Kernel k = m.kernel("put_signal");
            if (k.parameterCount() >= 0)
            {
                Assert.assertEquals(k.parameterCount(), 7);
                Assert.assertEquals(k.parameterSizes()[0], CommContext.commCtxSize(), "CommCtx by value");
            }
            putSignalRounds(k, "nvrtc");
            launchFromAFreshThread(k);
            System.out.println("OK nvrtc put+signal (" + image + ", compile " + image.compileNanos() / 1000 + " us)");
        }
    }

    @Test(timeOut = 300_000)
    public void nvccCubinPutsAndSignals() throws Exception
    {
        final Path nvcc = Path.of(System.getenv().getOrDefault("CUDA_HOME", "/usr/local/cuda"), "bin", "nvcc");
        if (!Files.isExecutable(nvcc))
        {
            throw new SkipException("nvcc not found at " + nvcc);
        }
        final Path dir = Files.createTempDirectory("te4j-cubin");
        Files.writeString(dir.resolve("put_signal.cu"), UserKernelSources.PUT_SIGNAL);
        final Process p = new ProcessBuilder(nvcc.toString(), "-std=c++17", "-cubin", "-arch=sm_" + computeCapability(),
            "-I" + DeviceHeaders.get().dir(), "-o", dir.resolve("put_signal.cubin").toString(),
            dir.resolve("put_signal.cu").toString()).redirectErrorStream(true).start();
        final String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        Assert.assertTrue(p.waitFor(300, TimeUnit.SECONDS) && p.exitValue() == 0, "nvcc failed:\n" + out);
        final KernelImage image = KernelImage.fromFile(dir.resolve("put_signal.cubin"));
        Assert.assertEquals(image.kind(), KernelImage.Kind.CUBIN);
        try (DeviceModule m = DeviceModule.load(engines[0], image))
        {
            putSignalRounds(m.kernel("put_signal"), "cubin");
        }
        System.out.println("OK nvcc cubin put+signal");
    }

    private static int computeCapability()
    {
        return Integer.parseInt(KernelCompiler.forDevice(0).architecture().substring(3));
    }

    @Test(timeOut = 300_000)
    public void manyWritersAddUpExactly()
    {
        final KernelImage image = nvrtc("add_many.cu", UserKernelSources.ADD_MANY);
        final int blocks = 16;
        final int threads = 128;
        final int rounds = 50;
        final long word = SIG + 64;
        final DeviceBuffer failures = engines[0].getOrCreateP2pTransport(2).allocateBuffer(64);
        try (DeviceModule m0 = DeviceModule.load(engines[0], image);
             DeviceModule m1 = DeviceModule.load(engines[1], image))
        {
            for (final CommContext c : ctx)
            {
                c.localBuffer().fill(word, 8, (byte) 0);
            }
            // Both ranks add to rank 1's word (remote for rank 0, local for rank 1) at once.
            m0.kernel("add_many").launch(streams[0], LaunchConfig.of(blocks, threads),
                KernelArgs.of().add(ctx[0]).addInt(1).add(ctx[0].localBuffer(), word).addInt(rounds).add(failures));
            m1.kernel("add_many").launch(streams[1], LaunchConfig.of(blocks, threads),
                KernelArgs.of().add(ctx[1]).addInt(1).add(ctx[1].localBuffer(), word).addInt(rounds).add(failures));
            streams[0].synchronize(T);
            streams[1].synchronize(T);
            Assert.assertEquals(readInt(windows[1], word), 2 * blocks * threads * rounds, "total at rank 1");
            Assert.assertEquals(readInt(windows[0], word), 0, "rank 0's word was touched");
            Assert.assertEquals(readInt(failures, 0), 0, "mc_red_add reported failures");
        }
        finally
        {
            failures.close();
        }
        System.out.println("OK many-writer total " + 2 * blocks * threads * rounds);
    }

    @Test(timeOut = 300_000)
    public void cooperativeLaunchSyncsTheGrid()
    {
        final KernelImage image = nvrtc("grid_exchange.cu", UserKernelSources.GRID_EXCHANGE);
        try (DeviceModule m = DeviceModule.load(engines[0], image))
        {
            final Kernel k = m.kernel("grid_exchange");
            final int max = k.maxCooperativeBlocks(128, 0);
            Assert.assertTrue(max >= 1, "maxCooperativeBlocks " + max);
            final int blocks = Math.min(max, 1024);
            final DeviceBuffer scratch = engines[0].getOrCreateP2pTransport(2).allocateBuffer(64 + 8L * blocks);
            try
            {
                k.launch(streams[0], LaunchConfig.of(blocks, 128).cooperative(true), KernelArgs.of()
                    .add(scratch, 0).add(scratch, 64).add(scratch, 64 + 4L * blocks).addLong(10_000_000_000L));
                streams[0].synchronize(T);
                final byte[] b = new byte[4 * blocks];
                scratch.read(64 + 4L * blocks, b, 0, b.length);
                final ByteBuffer bb = ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
                for (int i = 0; i < blocks; i++)
                {
                    Assert.assertEquals(bb.getInt(4 * i), ((i + 1) % blocks) * 7 + 1, "block " + i);
                }
                Assert.assertEquals(readInt(scratch, 0), blocks, "arrivals");
                Assert.expectThrows(IllegalArgumentException.class, () -> k.launch(streams[0],
                    LaunchConfig.of(max + 1, 128).cooperative(true),
                    KernelArgs.of().add(scratch, 0).add(scratch, 0).add(scratch, 0).addLong(1)));
            }
            finally
            {
                scratch.close();
            }
            System.out.println("OK cooperative grid barrier over " + blocks + " blocks");
        }
    }

    @Test(timeOut = 300_000)
    public void graphReplaysTheUserKernel()
    {
        final KernelImage image = nvrtc("put_signal.cu", UserKernelSources.PUT_SIGNAL);
        try (DeviceModule m = DeviceModule.load(engines[0], image))
        {
            final Kernel k = m.kernel("put_signal");
            final long n = 100_003;
            streams[0].beginCapture();
            k.launch(streams[0], LaunchConfig.of(BLOCKS, THREADS), putArgs(ctx[0], src, n, 1));
            try (CapturedGraph g = streams[0].endCapture())
            {
                for (int round = 0; round < 5; round++)
                {
                    // The graph reads the source at each replay: new data each round.
                    final long seed = Patterns.seed(System.nanoTime(), 0, 1, round);
                    Patterns.write(src, 0, n, seed);
                    windows[1].fill(0, n + 64, Patterns.POISON);
                    g.launch();
                    signalled += BLOCKS;
                    streams[1].waitSignal(ctx[1], SIG, signalled, T);
                    streams[1].synchronize(T);
                    streams[0].synchronize(T);
                    Assert.assertNull(Patterns.verify(windows[1], 0, n, seed), "replay " + round);
                    Assert.assertNull(Patterns.verifyPoison(windows[1], n, 16), "overrun in replay " + round);
                }
            }
            System.out.println("OK graph replay of a user kernel x5");
        }
    }

    @Test(timeOut = 300_000)
    public void launchesAreValidated()
    {
        final KernelImage image = nvrtc("put_signal.cu", UserKernelSources.PUT_SIGNAL);
        final DeviceModule m = DeviceModule.load(engines[0], image);
        final Kernel k = m.kernel("put_signal");
        final LaunchConfig one = LaunchConfig.of(1, 32);
        Assert.expectThrows(IllegalArgumentException.class, () -> k.launch(null, one, putArgs(ctx[0], src, 1, 1)));
        Assert.expectThrows(IllegalArgumentException.class, () -> k.launch(streams[0], null, putArgs(ctx[0], src, 1, 1)));
        Assert.expectThrows(IllegalArgumentException.class, () -> k.launch(streams[0], one, null));
        Assert.expectThrows(IllegalArgumentException.class, () -> k.launch(streams[0], one, putArgs(ctx[0], src, 1, 1), 0));
        final Te4jException missing = Assert.expectThrows(Te4jException.class, () -> m.kernel("no_such_kernel"));
        Assert.assertTrue(missing.getMessage().contains("no_such_kernel"), missing.getMessage());
        if (k.parameterCount() >= 0)
        {
            final IllegalArgumentException count = Assert.expectThrows(IllegalArgumentException.class,
                () -> k.launch(streams[0], one, KernelArgs.of().add(ctx[0]).addInt(1)));
            Assert.assertTrue(count.getMessage().contains("7 parameters"), count.getMessage());
            final IllegalArgumentException type = Assert.expectThrows(IllegalArgumentException.class,
                () -> k.launch(streams[0], one, KernelArgs.of().add(ctx[0]).addLong(1).add(src).add(src).addLong(1)
                    .add(src).addInt(1)));
            Assert.assertTrue(type.getMessage().contains("parameter 1 is 4 bytes"), type.getMessage());
            final IllegalArgumentException ctxAsPointer = Assert.expectThrows(IllegalArgumentException.class,
                () -> k.launch(streams[0], one, KernelArgs.of().add(src).addInt(1).add(src).add(src).addLong(1)
                    .add(src).addInt(1)));
            Assert.assertTrue(ctxAsPointer.getMessage().contains("parameter 0"), ctxAsPointer.getMessage());
        }
        try (TransferEngine host = TransferEngine.builder().platform(Platform.HOST).build();
             OpStream hostStream = host.createStream())
        {
            Assert.expectThrows(IllegalArgumentException.class, () -> k.launch(hostStream, one, putArgs(ctx[0], src, 1, 1)));
        }
        final DeviceBuffer gone = engines[0].getOrCreateP2pTransport(2).allocateBuffer(64);
        gone.close();
        Assert.expectThrows(ClosedException.class, () -> k.launch(streams[0], one, putArgs(ctx[0], gone, 1, 1)));
        m.close();
        Assert.expectThrows(ClosedException.class, () -> k.launch(streams[0], one, putArgs(ctx[0], src, 1, 1)));
        Assert.expectThrows(ClosedException.class, () -> m.kernel("put_signal"));
        streams[0].synchronize(T);
    }

    @Test(timeOut = 300_000)
    public void faultsAreReportedWithoutACrash() throws Exception
    {
        needNvrtc();
        for (final String kind : new String[] {"illegal-address", "wait-timeout"})
        {
            final List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java")
                .toString(), "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"),
                UserKernelFaultWorker.class.getName(), kind));
            final Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            final String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            Assert.assertTrue(p.waitFor(120, TimeUnit.SECONDS), kind + ": worker did not finish:\n" + out);
            Assert.assertEquals(p.exitValue(), 0, kind + ": worker failed or crashed:\n" + out);
            Assert.assertTrue(out.contains("CAUGHT code=DEVICE_FAULT"), kind + ":\n" + out);
            Assert.assertTrue(out.contains(kind.equals("illegal-address") ? "poke" : "wait_or_trap"),
                kind + ": the exception does not name the kernel:\n" + out);
            Assert.assertTrue(out.contains("restart"), kind + ": the exception does not say it is sticky:\n" + out);
            Assert.assertTrue(out.contains("AFTER "), kind + ": no report after the fault:\n" + out);
            System.out.println("OK " + kind + " reported:\n" + out);
        }
    }

    static int readInt(final DeviceBuffer b, final long offset)
    {
        final byte[] x = new byte[4];
        b.read(offset, x, 0, 4);
        return ByteBuffer.wrap(x).order(ByteOrder.LITTLE_ENDIAN).getInt();
    }
}
