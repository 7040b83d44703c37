package io.github.te4j;

import io.github.te4j.check.Patterns;
import io.github.te4j.launcher.DeviceMap;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.testng.Assert;
import org.testng.annotations.Test;

/**
 * Two host-platform ranks inside one JVM (two engines), handles passed directly: the API's
 * data path, argument checks, close order and use-after-close, without process plumbing.
 */
public class HostInProcessTest
{
    private static final Duration T = Duration.ofSeconds(30);

    /** Two connected ranks sharing one window size. */
    static final class Pair implements AutoCloseable
    {
        final TransferEngine[] engines = new TransferEngine[2];
        final DeviceBuffer[] windows = new DeviceBuffer[2];
        final CommContext[] ctx = new CommContext[2];
        final OpStream[] streams = new OpStream[2];

        Pair(final Platform platform, final long bytes)
        {
            final List<IpcHandle> handles = new ArrayList<>();
            for (int r = 0; r < 2; r++)
            {
                // CUDA: round-robin over the GPUs present; two ranks on one device import each
                // other's buffers as direct pointers, as ranks on two devices with peer access do.
                engines[r] = TransferEngine.builder().platform(platform)
                    .device(platform == Platform.CUDA ? DeviceMap.deviceOf(r) : 0).build();
                windows[r] = engines[r].getOrCreateP2pTransport(2).allocateBuffer(bytes);
                handles.add(engines[r].getOrCreateP2pTransport(2).exportHandle(windows[r]));
                streams[r] = engines[r].createStream();
            }
            for (int r = 0; r < 2; r++)
            {
                ctx[r] = engines[r].getOrCreateP2pTransport(2).importPeerHandles(windows[r], r, handles, 0b11);
            }
        }

        @Override
        public void close()
        {
            for (final TransferEngine e : engines)
            {
                if (e != null)
                {
                    e.close();
                }
            }
        }
    }

    @Test(timeOut = 60_000)
    public void putSignalBetweenTwoEngines()
    {
        try (Pair p = new Pair(Platform.HOST, 1 << 20))
        {
            final long sig = (1 << 20) - 64;
            final DeviceBuffer src = p.engines[0].getOrCreateP2pTransport(2).allocateBuffer(1 << 19);
            Patterns.write(src, 0, 1 << 19, 99);
            p.windows[1].fill(0, 1 << 19, Patterns.POISON);
            p.streams[0].putWithSignal(p.ctx[0], 1, 0, src, 0, (1 << 19) - 3, sig, 1);
            p.streams[1].waitSignal(p.ctx[1], sig, 1, T);
            p.streams[1].synchronize(T);
            p.streams[0].synchronize(T);
            Assert.assertNull(Patterns.verify(p.windows[1], 0, (1 << 19) - 3, 99));
            Assert.assertNull(Patterns.verifyPoison(p.windows[1], (1 << 19) - 3, 3));
            Assert.assertTrue(p.ctx[0].allPeersAccessible());
            p.ctx[0].verifyPeerAccess();
        }
    }

    @Test(timeOut = 60_000)
    public void manyWriterThreadsTotal() throws Exception
    {
        try (Pair p = new Pair(Platform.HOST, 4096))
        {
            final int threads = 8;
            final int adds = 2000;
            final Thread[] ts = new Thread[threads];
            for (int t = 0; t < threads; t++)
            {
                final int from = t % 2;
                ts[t] = new Thread(() ->
                {
                    try (OpStream s = p.engines[from].createStream())
                    {
                        for (int i = 0; i < adds; i++)
                        {
                            s.redAdd(p.ctx[from], 1, 128, 3);
                        }
                        s.synchronize(T);
                    }
                });
                ts[t].start();
            }
            for (final Thread t : ts)
            {
                t.join();
            }
            p.streams[1].waitSignal(p.ctx[1], 128, threads * adds * 3, T);
            p.streams[1].synchronize(T);
            Assert.assertEquals(P2pWorker.readInt(p.windows[1], 128), threads * adds * 3);
        }
    }

    @Test(timeOut = 60_000)
    public void waitIsWrapAroundAware()
    {
        try (Pair p = new Pair(Platform.HOST, 4096))
        {
            // the word goes 0xFFFFFFF0 -> 0x00000010: 0x10 is "after" 0xFFFFFFF0
            p.streams[0].redAdd(p.ctx[0], 1, 0, 0xFFFFFFF0);
            p.streams[0].synchronize(T);
            p.streams[0].redAdd(p.ctx[0], 1, 0, 0x20);
            p.streams[0].synchronize(T);
            p.streams[1].waitSignal(p.ctx[1], 0, 0xFFFFFFF8, T);
            p.streams[1].synchronize(T);
            Assert.assertEquals(P2pWorker.readInt(p.windows[1], 0), 0x10);
        }
    }

    @Test(timeOut = 60_000)
    public void timeoutIsReportedAndStreamStaysUsable()
    {
        try (Pair p = new Pair(Platform.HOST, 4096))
        {
            p.streams[1].waitSignal(p.ctx[1], 8, 1, Duration.ofMillis(100));
            final Te4jTimeoutException e = Assert.expectThrows(Te4jTimeoutException.class,
                () -> p.streams[1].synchronize(T));
            Assert.assertTrue(e.getMessage().toLowerCase().contains("wait"), e.getMessage());
            p.streams[0].signal(p.ctx[0], 1, 8, 1);
            p.streams[1].waitSignal(p.ctx[1], 8, 1, T);
            p.streams[1].synchronize(T);
            p.streams[0].synchronize(T);
        }
    }

    @Test
    public void argumentsAreCheckedInJava()
    {
        try (Pair p = new Pair(Platform.HOST, 4096))
        {
            final OpStream s = p.streams[0];
            final CommContext c = p.ctx[0];
            final DeviceBuffer w = p.windows[0];
            Assert.expectThrows(IllegalArgumentException.class, () -> s.put(c, 2, 0, 0, 16));
            Assert.expectThrows(IllegalArgumentException.class, () -> s.put(c, -1, 0, 0, 16));
            Assert.expectThrows(IllegalArgumentException.class, () -> s.put(c, 1, 0, 0, 0));
            Assert.expectThrows(IllegalArgumentException.class, () -> s.put(c, 1, 0, 0, -5));
            Assert.expectThrows(IndexOutOfBoundsException.class, () -> s.put(c, 1, 4090, 0, 16));
            Assert.expectThrows(IndexOutOfBoundsException.class, () -> s.put(c, 1, Long.MAX_VALUE, 0, 16));
            Assert.expectThrows(IndexOutOfBoundsException.class, () -> s.put(c, 1, 0, 4095, 2));
            Assert.expectThrows(IllegalArgumentException.class, () -> s.signal(c, 1, 2, 1));
            Assert.expectThrows(IndexOutOfBoundsException.class, () -> s.signal(c, 1, 4096, 1));
            Assert.expectThrows(IllegalArgumentException.class, () -> s.signal(null, 1, 0, 1));
            Assert.expectThrows(IllegalArgumentException.class, () -> s.waitSignal(c, 0, 1, Duration.ZERO));
            Assert.expectThrows(IllegalArgumentException.class, () -> s.waitSignal(c, 0, 1, null));
            Assert.expectThrows(IllegalArgumentException.class, () -> s.put(c, 1, 0, null, 0, 16));
            Assert.expectThrows(IndexOutOfBoundsException.class, () -> w.read(4000, 100));
            Assert.expectThrows(IllegalArgumentException.class, () -> w.read(0, -1));
            Assert.expectThrows(IllegalArgumentException.class, () -> w.write(0, (byte[]) null));
            Assert.expectThrows(IllegalArgumentException.class,
                () -> p.engines[0].getOrCreateP2pTransport(2).allocateBuffer(0));
            Assert.expectThrows(IllegalArgumentException.class,
                () -> p.engines[0].getOrCreateP2pTransport(3));
            Assert.expectThrows(IllegalArgumentException.class, () -> s.launchShape(-1, 0));
            Assert.expectThrows(IllegalArgumentException.class, () -> s.launchShape(1, 33));
            // a buffer of the other engine is not this stream's
            Assert.expectThrows(IllegalArgumentException.class,
                () -> p.engines[0].getOrCreateP2pTransport(2).exportHandle(p.windows[1]));
            // graph capture is CUDA only
            Assert.expectThrows(UnavailableException.class, s::beginCapture);
        }
    }

    @Test
    public void importRejectsBadHandles()
    {
        try (TransferEngine e0 = TransferEngine.builder().build(); TransferEngine e1 = TransferEngine.builder().build())
        {
            final P2pTransport t0 = e0.getOrCreateP2pTransport(2);
            final P2pTransport t1 = e1.getOrCreateP2pTransport(2);
            final DeviceBuffer b0 = t0.allocateBuffer(4096);
            final DeviceBuffer b1 = t1.allocateBuffer(8192);
            final IpcHandle h1 = t1.exportHandle(b1);
            // size mismatch
            Assert.expectThrows(BadHandleException.class,
                () -> t0.importPeerHandles(b0, 0, Arrays.asList(null, h1), 0b11));
            // missing handle of an active rank; inactive rank may be null
            Assert.expectThrows(BadHandleException.class,
                () -> t0.importPeerHandles(b0, 0, Arrays.asList(null, null), 0b11));
            t0.importPeerHandles(b0, 0, Arrays.asList(null, null), 0b01).close();
            // wrong list length, own rank missing from the mask, mask too wide
            Assert.expectThrows(IllegalArgumentException.class,
                () -> t0.importPeerHandles(b0, 0, List.of(h1), 0b11));
            Assert.expectThrows(IllegalArgumentException.class,
                () -> t0.importPeerHandles(b0, 0, Arrays.asList(null, h1), 0b10));
            Assert.expectThrows(IllegalArgumentException.class,
                () -> t0.importPeerHandles(b0, 0, Arrays.asList(null, h1), 0b111));
            // a tampered native blob (same size, forged token) is refused natively
            final int[] blob = h1.blob();
            blob[blob.length - 1] ^= 0x5a5a;
            blob[ForgedHandles.SIZE_LO] = 4096;
            final IpcHandle forged = IpcHandle.ofBlob(blob);
            Assert.expectThrows(Te4jException.class,
                () -> t0.importPeerHandles(b0, 0, Arrays.asList(null, forged), 0b11));
        }
    }

    @Test
    public void useAfterCloseAndDoubleClose()
    {
        final Pair p = new Pair(Platform.HOST, 4096);
        final OpStream s = p.streams[0];
        final CommContext c = p.ctx[0];
        final DeviceBuffer w = p.windows[0];
        p.close();
        p.close();
        Assert.assertTrue(s.isClosed());
        Assert.assertTrue(c.isClosed());
        Assert.assertTrue(w.isClosed());
        Assert.expectThrows(ClosedException.class, () -> s.synchronize(T));
        Assert.expectThrows(ClosedException.class, () -> s.signal(c, 1, 0, 1));
        Assert.expectThrows(ClosedException.class, () -> w.read(0, 4));
        Assert.expectThrows(ClosedException.class, c::verifyPeerAccess);
        Assert.expectThrows(ClosedException.class, () -> p.engines[0].getOrCreateP2pTransport(2));
        w.close();
        c.close();
        s.close();
    }

    @Test
    public void closingABufferClosesItsWindow()
    {
        try (Pair p = new Pair(Platform.HOST, 4096))
        {
            p.windows[0].close();
            Assert.assertTrue(p.ctx[0].isClosed());
            Assert.expectThrows(ClosedException.class, () -> p.streams[0].signal(p.ctx[0], 1, 0, 1));
        }
    }
}
