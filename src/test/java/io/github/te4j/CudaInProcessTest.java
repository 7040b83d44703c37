package io.github.te4j;

import io.github.te4j.check.Patterns;
import io.github.te4j.launcher.DeviceMap;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.testng.Assert;
import org.testng.SkipException;
import org.testng.annotations.AfterClass;
import org.testng.annotations.BeforeClass;
import org.testng.annotations.Test;

/**
 * Two CUDA ranks inside one JVM, placed by {@link DeviceMap}: on GPUs 0 and 1 where there are two
 * with peer access, both on GPU 0 where there is one (direct pointers either way: a process cannot
 * open its own IPC handle). Random data, poisoned destinations, sizes 16 B .. 1 GiB, ordering,
 * many-writer totals, CUDA-graph capture, streams and memory from the JavaCPP Presets for CUDA.
 * Skips with the reason where there is no GPU, or two without peer access.
 */
@Test(groups = {"cuda", "cuda-inprocess"})
public class CudaInProcessTest
{
    private static final Duration T = Duration.ofSeconds(60L * Integer.getInteger("te4j.timeoutScale", 1));
    private static final long MAX = Long.getLong("te4j.test.maxBytes", 1L << 30);
    private static final long SLOT = MAX + 64;
    private static final long SIG = 2 * SLOT;
    private static final long WINDOW = SIG + 256;

    private HostInProcessTest.Pair pair;
    private DeviceBuffer src;

    @BeforeClass(alwaysRun = true)
    public void setUp()
    {
        final String why = DeviceMap.cudaUnavailableFor(2);
        if (why != null)
        {
            throw new SkipException(why);
        }
        System.out.println(DeviceMap.describe(DeviceMap.devices(2, Availability.cudaDeviceCount()),
            Availability.cudaDeviceCount()));
        pair = new HostInProcessTest.Pair(Platform.CUDA, WINDOW);
        src = pair.engines[0].getOrCreateP2pTransport(2).allocateBuffer(SLOT);
    }

    @AfterClass(alwaysRun = true)
    public void tearDown()
    {
        if (pair != null)
        {
            pair.close();
        }
    }

    @Test(timeOut = 600_000)
    public void putWithSignalSizes()
    {
        int expected = 0;
        final List<Long> verified = new ArrayList<>();
        for (long size = 16; size <= MAX; size *= 4)
        {
            for (final long n : new long[] {size, size + 3})
            {
                if (n > MAX)
                {
                    continue;
                }
                final long seed = Patterns.seed(System.nanoTime(), 0, 1, n);
                Patterns.write(src, 0, n, seed);
                pair.windows[1].fill(0, Math.min(n + 64, SLOT), Patterns.POISON);
                pair.streams[0].putWithSignal(pair.ctx[0], 1, 0, src, 0, n, SIG, 1);
                pair.streams[1].waitSignal(pair.ctx[1], SIG, ++expected, T);
                pair.streams[1].synchronize(T);
                pair.streams[0].synchronize(T);
                Assert.assertNull(Patterns.verify(pair.windows[1], 0, n, seed), "size " + n);
                Assert.assertNull(Patterns.verifyPoison(pair.windows[1], n, 16), "overrun at size " + n);
                verified.add(n);
            }
        }
        System.out.println("OK cuda put+signal sizes verified: " + verified);
    }

    /**
     * Ordering: the receiver's stream copies the received bytes away (a put to itself) right after
     * its waitSignal completes on the device, with no host step in between; if any block's data
     * could land after the signal, the snapshot would miss it.
     */
    @Test(timeOut = 300_000)
    public void dataIsVisibleBeforeItsSignal()
    {
        final long size = Math.min(MAX, 8L << 20);
        pair.streams[0].launchShape(132, 512);
        try
        {
            for (int round = 1; round <= 40; round++)
            {
                final long seed = Patterns.seed(System.nanoTime(), 0, 1, round);
                Patterns.write(src, 0, size, seed);
                pair.windows[1].fill(0, size, Patterns.POISON);
                pair.windows[1].fill(SLOT, size, Patterns.POISON);
                pair.streams[1].waitSignal(pair.ctx[1], SIG + 32, round, T);
                pair.streams[1].put(pair.ctx[1], 1, SLOT, pair.windows[1], 0, size);
                pair.streams[0].putWithSignal(pair.ctx[0], 1, 0, src, 0, size, SIG + 32, 1);
                pair.streams[0].synchronize(T);
                pair.streams[1].synchronize(T);
                Assert.assertNull(Patterns.verify(pair.windows[1], SLOT, size, seed), "snapshot of round " + round);
            }
        }
        finally
        {
            pair.streams[0].launchShape(0, 0);
        }
        System.out.println("OK cuda ordering: 40 rounds of " + size + " B, snapshot taken on-device right after the signal");
    }

    @Test(timeOut = 300_000)
    public void manyWriterTotals()
    {
        final int adds = 5000;
        for (int r = 0; r < 2; r++)
        {
            for (int i = 0; i < adds; i++)
            {
                pair.streams[r].redAdd(pair.ctx[r], 1, SIG + 64, r + 1);
            }
        }
        pair.streams[0].synchronize(T);
        pair.streams[1].synchronize(T);
        pair.streams[1].waitSignal(pair.ctx[1], SIG + 64, 3 * adds, T);
        pair.streams[1].synchronize(T);
        Assert.assertEquals(P2pWorker.readInt(pair.windows[1], SIG + 64), 3 * adds);
        System.out.println("OK cuda many-writer total " + 3 * adds);
    }

    @Test(timeOut = 300_000)
    public void graphCaptureReplays()
    {
        final long size = 1 << 20;
        final long seed = 4242;
        Patterns.write(src, 0, size, seed);
        pair.windows[1].fill(0, size, Patterns.POISON);
        final OpStream s = pair.streams[0];
        s.beginCapture();
        s.putWithSignal(pair.ctx[0], 1, 0, src, 0, size, SIG + 128, 1);
        try (CapturedGraph g = s.endCapture())
        {
            for (int i = 0; i < 10; i++)
            {
                g.launch();
            }
            s.synchronize(T);
            pair.streams[1].waitSignal(pair.ctx[1], SIG + 128, 10, T);
            pair.streams[1].synchronize(T);
        }
        Assert.assertNull(Patterns.verify(pair.windows[1], 0, size, seed));
        Assert.assertEquals(P2pWorker.readInt(pair.windows[1], SIG + 128), 10);
        System.out.println("OK cuda graph capture: 10 replays of put+signal");
    }

    @Test(timeOut = 120_000)
    public void timeoutOnDeviceIsReported()
    {
        pair.streams[1].waitSignal(pair.ctx[1], SIG + 192, 1, Duration.ofMillis(200));
        final Te4jTimeoutException e = Assert.expectThrows(Te4jTimeoutException.class,
            () -> pair.streams[1].synchronize(T));
        System.out.println("OK cuda device timeout: " + e.getMessage());
        // the stream is usable again
        pair.streams[0].signal(pair.ctx[0], 1, SIG + 192, 1);
        pair.streams[1].waitSignal(pair.ctx[1], SIG + 192, 1, T);
        pair.streams[1].synchronize(T);
        pair.streams[0].synchronize(T);
    }

    @Test(timeOut = 120_000)
    public void presetsStreamAndMemory()
    {
        PresetsInterop.run(pair, SIG + 240, T);
    }
}
