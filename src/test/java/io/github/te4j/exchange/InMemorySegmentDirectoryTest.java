package io.github.te4j.exchange;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import io.github.te4j.rendezvous.RendezvousException;
import io.github.te4j.rendezvous.RendezvousTimeoutException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.testng.annotations.Test;

public class InMemorySegmentDirectoryTest
{
    private static void eventually(final List<String> events, final List<String> expected) throws InterruptedException
    {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!events.equals(expected) && System.nanoTime() < deadline)
        {
            Thread.sleep(5);
        }
        assertEquals(events, expected);
    }

    @Test
    public void publishLookupWatchAndOwnership() throws Exception
    {
        try (SegmentDirectory a = Exchanges.openDirectory("mem://dir-one");
            SegmentDirectory b = Exchanges.openDirectory("mem://dir-one"))
        {
            a.publish("a.window", new byte[] {1, 2});
            final List<String> events = new CopyOnWriteArrayList<>();
            final SegmentDirectory.Registration reg = b.watch(new SegmentDirectory.Listener()
            {
                @Override
                public void published(final String name, final byte[] d)
                {
                    events.add("+" + name + ":" + d.length);
                }

                @Override
                public void removed(final String name)
                {
                    events.add("-" + name);
                }
            });
            assertEquals(b.lookup("a.window").orElseThrow(), new byte[] {1, 2});
            b.publish("b.window", new byte[3]);
            a.publish("a.window", new byte[5]);
            assertTrue(expectThrows(RendezvousException.class, () -> b.publish("a.window", new byte[1])).getMessage()
                .contains("another member"));
            assertFalse(b.remove("a.window"));
            assertEquals(b.list().keySet().toString(), "[a.window, b.window]");
            a.close();
            eventually(events, List.of("+a.window:2", "+b.window:3", "+a.window:5", "-a.window"));
            assertTrue(b.lookup("a.window").isEmpty());
            reg.close();
            b.publish("c", new byte[0]);
            Thread.sleep(50);
            assertEquals(events.size(), 4, "no call after the registration closed: " + events);
        }
    }

    @Test
    public void awaitSeesALaterPublishAndTimesOutOtherwise() throws Exception
    {
        final ExecutorService pool = Executors.newSingleThreadExecutor();
        try (SegmentDirectory a = InMemorySegmentDirectory.open("dir-two");
            SegmentDirectory b = InMemorySegmentDirectory.open("dir-two"))
        {
            final Future<byte[]> f = pool.submit(() -> b.await("late", Duration.ofSeconds(10)));
            Thread.sleep(100);
            a.publish("late", new byte[] {7});
            assertEquals(f.get(10, TimeUnit.SECONDS), new byte[] {7});
            expectThrows(RendezvousTimeoutException.class, () -> b.await("never", Duration.ofMillis(50)));
        }
        finally
        {
            pool.shutdownNow();
        }
    }

    @Test
    public void namesAndSizesAreChecked()
    {
        try (SegmentDirectory a = InMemorySegmentDirectory.open("dir-three", 8))
        {
            expectThrows(IllegalArgumentException.class, () -> a.publish("bad name", new byte[1]));
            expectThrows(IllegalArgumentException.class, () -> a.publish("x".repeat(129), new byte[1]));
            expectThrows(IllegalArgumentException.class, () -> a.publish("big", new byte[9]));
            a.publish("fits", new byte[8]);
        }
    }
}
