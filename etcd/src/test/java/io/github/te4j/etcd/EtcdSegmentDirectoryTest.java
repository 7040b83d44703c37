package io.github.te4j.etcd;

import io.github.te4j.launcher.EtcdServer;
import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.github.te4j.exchange.Exchanges;
import io.github.te4j.exchange.SegmentDirectory;
import io.github.te4j.rendezvous.RendezvousException;
import io.github.te4j.rendezvous.RendezvousTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.testng.annotations.AfterClass;
import org.testng.annotations.BeforeClass;
import org.testng.annotations.Test;

/** The segment directory on a real etcd: two members (two clients, two leases) of one job. */
public class EtcdSegmentDirectoryTest
{
    private EtcdServer etcd;

    @BeforeClass(alwaysRun = true)
    public void startEtcd() throws Exception
    {
        etcd = EtcdServer.start();
    }

    @AfterClass(alwaysRun = true)
    public void stopEtcd()
    {
        if (etcd != null)
        {
            etcd.close();
        }
    }

    private static void eventually(final List<String> events, final List<String> expected) throws InterruptedException
    {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
        while (!events.equals(expected) && System.nanoTime() < deadline)
        {
            Thread.sleep(10);
        }
        assertEquals(events, expected);
    }

    @Test
    public void publishLookupWatchOwnershipAndRemovalOnClose() throws Exception
    {
        final String uri = etcd.uri("segments", "ttl=3s");
        try (SegmentDirectory a = Exchanges.openDirectory(uri); SegmentDirectory b = Exchanges.openDirectory(uri))
        {
            a.publish("rank0.window", new byte[] {1, 2, 3});
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
            assertEquals(b.lookup("rank0.window").orElseThrow(), new byte[] {1, 2, 3});
            assertEquals(b.await("rank0.window", Duration.ofSeconds(5)), new byte[] {1, 2, 3});
            b.publish("rank1.window", new byte[4]);
            a.publish("rank0.window", new byte[5]);
            assertTrue(expectThrows(RendezvousException.class, () -> b.publish("rank0.window", new byte[1]))
                .getMessage().contains("published by another process"));
            assertFalse(b.remove("rank0.window"));
            assertEquals(a.list().keySet().toString(), "[rank0.window, rank1.window]");
            expectThrows(RendezvousTimeoutException.class, () -> a.await("never", Duration.ofMillis(200)));
            a.close();
            eventually(events, List.of("+rank0.window:3", "+rank1.window:4", "+rank0.window:5", "-rank0.window"));
            assertTrue(b.lookup("rank0.window").isEmpty());
            assertTrue(b.remove("rank1.window"));
            eventually(events, List.of("+rank0.window:3", "+rank1.window:4", "+rank0.window:5", "-rank0.window",
                "-rank1.window"));
            reg.close();
        }
    }

    @Test
    public void aHostileSegmentValueIsRefusedOnLookupAndSkippedByWatches() throws Exception
    {
        final String uri = etcd.uri("segments-hostile", "ttl=3s");
        try (Client raw = Client.builder().endpoints("http://" + etcd.endpoint()).build();
            SegmentDirectory a = Exchanges.openDirectory(uri))
        {
            raw.getKVClient().put(ByteSequence.from(EtcdSettings.ROOT + "segments-hostile/segments/evil", StandardCharsets.UTF_8),
                ByteSequence.from("garbage", StandardCharsets.UTF_8)).get(10, TimeUnit.SECONDS);
            assertTrue(expectThrows(RendezvousException.class, () -> a.lookup("evil")).getMessage().contains("refused"));
            final List<String> events = new CopyOnWriteArrayList<>();
            a.publish("good", new byte[2]);
            a.watch(new SegmentDirectory.Listener()
            {
                @Override
                public void published(final String name, final byte[] d)
                {
                    events.add("+" + name);
                }

                @Override
                public void removed(final String name)
                {
                    events.add("-" + name);
                }
            });
            eventually(events, List.of("+good"));
        }
    }
}
