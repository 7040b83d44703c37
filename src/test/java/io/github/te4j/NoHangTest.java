package io.github.te4j;

import io.github.te4j.launcher.DeviceMap;
import java.time.Duration;
import org.testng.Assert;
import org.testng.SkipException;
import org.testng.annotations.Test;

/**
 * Every wait has a deadline. A peer that never signals makes the wait time out
 * with an exception that names the wait, and the stream stays usable afterwards; synchronize
 * itself is bounded. Rendezvous and file-exchange deadlines are covered by RendezvousTest and
 * FileExchangeTest (rendezvous package).
 */
public class NoHangTest
{
    private static final Duration LONG = Duration.ofSeconds(60);

    static void peerNeverSignals(final Platform platform)
    {
        try (HostInProcessTest.Pair p = new HostInProcessTest.Pair(platform, 1 << 16))
        {
            // Rank 1 waits for a signal that rank 0 never sends.
            p.streams[1].waitSignal(p.ctx[1], 64, 1, Duration.ofMillis(300));
            final Te4jTimeoutException e = Assert.expectThrows(Te4jTimeoutException.class,
                () -> p.streams[1].synchronize(LONG));
            Assert.assertTrue(e.getMessage().toLowerCase().contains("wait"), e.getMessage());
            Assert.assertEquals(e.code(), Te4jException.Code.TIMEOUT);
            // The same stream still works: a real put+signal now arrives and is waited for.
            assertUsable(p);
        }
    }

    static void assertUsable(final HostInProcessTest.Pair p)
    {
        final byte[] data = new byte[4096];
        for (int i = 0; i < data.length; i++)
        {
            data[i] = (byte)(i * 7 + 1);
        }
        p.windows[0].write(8192, data);
        p.streams[0].putWithSignal(p.ctx[0], 1, 8192, p.windows[0], 8192, data.length, 128, 1);
        p.streams[1].waitSignal(p.ctx[1], 128, 1, LONG);
        p.streams[0].synchronize(LONG);
        p.streams[1].synchronize(LONG);
        Assert.assertEquals(p.windows[1].read(8192, data.length), data);
    }

    @Test(groups = "host", timeOut = 120_000)
    public void hostPeerThatNeverSignalsTimesOut()
    {
        peerNeverSignals(Platform.HOST);
    }

    @Test(groups = "host", timeOut = 120_000)
    public void hostSynchronizeHasItsOwnDeadline()
    {
        try (HostInProcessTest.Pair p = new HostInProcessTest.Pair(Platform.HOST, 1 << 16))
        {
            p.streams[1].waitSignal(p.ctx[1], 64, 1, LONG);
            final Te4jTimeoutException e = Assert.expectThrows(Te4jTimeoutException.class,
                () -> p.streams[1].synchronize(Duration.ofMillis(200)));
            Assert.assertTrue(e.getMessage().contains("still running"), e.getMessage());
            // The pending wait is still honoured: the signal arrives and the stream drains cleanly.
            p.streams[0].signal(p.ctx[0], 1, 64, 1);
            p.streams[0].synchronize(LONG);
            p.streams[1].synchronize(LONG);
            assertUsable(p);
        }
    }

    @Test(groups = {"cuda", "cuda-inprocess"}, timeOut = 300_000)
    public void cudaPeerThatNeverSignalsTimesOut()
    {
        final String why = DeviceMap.cudaUnavailableFor(2);
        if (why != null)
        {
            throw new SkipException(why);
        }
        peerNeverSignals(Platform.CUDA);
    }
}
