package io.github.te4j;

import java.util.concurrent.TimeUnit;
import org.testng.Assert;
import org.testng.annotations.Test;

/** The segment owner's liveness check that every batch submit asks: a pidfd, with /proc behind it. */
public class ProcessWatchTest
{
    private static Process sleeper() throws Exception
    {
        return new ProcessBuilder("sleep", "60").redirectErrorStream(true).start();
    }

    @Test(groups = "host", timeOut = 60_000)
    public void aRunningProcessHasNotExitedUntilItIsKilled() throws Exception
    {
        final Process p = sleeper();
        try (ProcessWatch w = ProcessWatch.of((int) p.pid()))
        {
            Assert.assertFalse(w.exited(), "a sleeping child");
            Assert.assertFalse(w.exited(), "asked again");
            p.destroyForcibly();
            Assert.assertTrue(p.waitFor(30, TimeUnit.SECONDS));
            Assert.assertTrue(w.exited(), "after the child was killed and reaped");
        }
        finally
        {
            p.destroyForcibly();
        }
    }

    @Test(groups = "host", timeOut = 60_000)
    public void aKilledProcessIsSeenBeforeItIsReaped() throws Exception
    {
        // A pidfd turns readable at exit, before the parent reaps: nothing here waits for the child
        // (the JDK's reaper thread may reap it meanwhile; either way the watch must see it gone).
        final Process p = sleeper();
        try (ProcessWatch w = ProcessWatch.of((int) p.pid()))
        {
            p.destroyForcibly();
            final long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (!w.exited() && System.nanoTime() < end)
            {
                Thread.onSpinWait();
            }
            Assert.assertTrue(w.exited(), "within 30 s of the kill");
        }
        finally
        {
            p.destroyForcibly();
            p.waitFor(30, TimeUnit.SECONDS);
        }
    }

    @Test(groups = "host", timeOut = 60_000)
    public void aPidWithNoProcessHasExited() throws Exception
    {
        final Process p = sleeper();
        final int pid = (int) p.pid();
        p.destroyForcibly();
        Assert.assertTrue(p.waitFor(30, TimeUnit.SECONDS));
        try (ProcessWatch w = ProcessWatch.of(pid))
        {
            Assert.assertTrue(w.exited(), "pid " + pid + " after its process was reaped");
        }
    }

    @Test(groups = "host", timeOut = 60_000)
    public void aClosedWatchStillAnswersFromProc() throws Exception
    {
        final Process p = sleeper();
        try
        {
            final ProcessWatch w = ProcessWatch.of((int) p.pid());
            w.close();
            w.close();  // twice is harmless
            Assert.assertFalse(w.exited(), "closed, the child still runs");
            p.destroyForcibly();
            Assert.assertTrue(p.waitFor(30, TimeUnit.SECONDS));
            Assert.assertTrue(w.exited(), "closed, the child reaped");
        }
        finally
        {
            p.destroyForcibly();
        }
    }

    @Test(groups = "host", timeOut = 60_000)
    public void thisProcessHasNotExited()
    {
        try (ProcessWatch w = ProcessWatch.of((int) ProcessHandle.current().pid()))
        {
            Assert.assertFalse(w.exited());
        }
    }
}
