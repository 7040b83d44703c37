package io.github.te4j;

import io.github.te4j.check.Patterns;
import io.github.te4j.exchange.InMemorySegmentDirectory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.testng.Assert;
import org.testng.annotations.Test;

/**
 * te4j's JFR events recorded in process with {@link Recording} on the host platform: a batch in
 * two parts (BatchSubmit each, one BatchComplete), a cancelled batch, a list prepared
 * (ListPrepare) and posted whole, as a range and cancelled (ListPost each, with its outcome);
 * none of them under the JDK's default settings.
 * PeerLost is recorded by {@link TransferListMultiProcessTest} (it needs an owner that exits).
 */
public class TransferTelemetryTest
{
    static final Duration T = Duration.ofSeconds(30);

    @Test(groups = "host", timeOut = 120_000)
    public void eventsAppearWithTheirFields() throws Exception
    {
        final String space = "jfr" + System.nanoTime();
        final Path file = Files.createTempFile("te4j-telemetry", ".jfr");
        try (TransferEngine e0 = TransferEngine.builder().platform(Platform.HOST).build();
            TransferEngine e1 = TransferEngine.builder().platform(Platform.HOST).build();
            InMemorySegmentDirectory dir0 = InMemorySegmentDirectory.open(space);
            InMemorySegmentDirectory dir1 = InMemorySegmentDirectory.open(space);
            Recording recording = new Recording())
        {
            for (final String name : new String[] {"BatchSubmit", "BatchComplete", "ListPrepare", "ListPost", "PeerLost"})
            {
                recording.enable("io.github.te4j." + name).withoutThreshold();
            }
            final P2pTransport p0 = e0.getOrCreateP2pTransport(2);
            final P2pTransport p1 = e1.getOrCreateP2pTransport(2);
            final TransferAgent a0 = e0.createTransferAgent(p0, "jfr0");
            final TransferAgent a1 = e1.createTransferAgent(p1, "jfr1");
            final DeviceBuffer src = p0.allocateBuffer(8L << 20);
            final DeviceBuffer seg = p1.allocateBuffer(8L << 20);
            final RegisteredMemory r0 = a0.registerLocalMemory(src);
            a1.registerLocalMemory(seg);
            a1.publishSegment(dir1);
            a0.publishSegment(dir0);
            final SegmentHandle s1 = a0.openSegment("jfr1", dir0, T);
            Patterns.write(src, 0, 1 << 20, 3);
            // Not recorded: before start, and under the JDK's default settings (te4j's events are off there).
            final Path quiet = Files.createTempFile("te4j-telemetry-default", ".jfr");
            try (Recording defaults = new Recording(jdk.jfr.Configuration.getConfiguration("default")))
            {
                defaults.start();
                try (TransferBatch b = a0.allocateBatch(1))
                {
                    b.submit(List.of(TransferRequest.write(r0, 0, s1, 0, 10)), T);
                    b.await(T);
                }
                final TransferDescriptors one = new TransferDescriptors(1);
                one.write(r0, 0, s1, 0, 10);
                try (TransferList l = a0.prepareList(one))
                {
                    l.post(T).await(T);
                }
                defaults.stop();
                defaults.dump(quiet);
            }
            for (final RecordedEvent e : RecordingFile.readAllEvents(quiet))
            {
                Assert.assertFalse(e.getEventType().getName().startsWith("io.github.te4j."),
                    "recorded under the default settings: " + e);
            }
            Files.deleteIfExists(quiet);
            recording.start();
            try (TransferBatch b = a0.allocateBatch(8))
            {
                final List<TransferRequest> rs = new ArrayList<>();
                for (int i = 0; i < 8; i++)
                {
                    rs.add(TransferRequest.write(r0, i * 1000L, s1, i * 4096L, 1000 + i));
                }
                b.submit(rs.subList(0, 3), T);
                b.submit(rs.subList(3, 8), T);
                b.await(T).forEach(s -> Assert.assertEquals(s.state(), TransferState.COMPLETED));
            }
            final TransferDescriptors d = new TransferDescriptors(10);
            for (int i = 0; i < 10; i++)
            {
                d.write(r0, i * 4096L, s1, (1 << 20) + i * 4096L, 4096);
            }
            final TransferDescriptors busy = new TransferDescriptors(1024);
            for (int i = 0; i < 1024; i++)
            {
                busy.write(r0, 0, s1, 4L << 20, 4L << 20);
            }
            try (TransferList list = a0.prepareList(d))
            {
                list.post(T).await(T);
                list.post(2, 5, T).await(T);
                try (TransferBatch ahead = a0.allocateBatch(busy.size()))
                {
                    ahead.submit(busy, T);
                    final TransferPost p = list.post(T);
                    p.cancel();
                    ahead.cancel();
                    p.await(T).forEach(s -> Assert.assertEquals(s.state(), TransferState.CANCELLED));
                    ahead.await(T);
                }
            }
            recording.stop();
            recording.dump(file);
        }
        final List<RecordedEvent> events = RecordingFile.readAllEvents(file);
        Files.deleteIfExists(file);
        final List<RecordedEvent> submits = named(events, "BatchSubmit");
        final List<RecordedEvent> completes = named(events, "BatchComplete");
        final List<RecordedEvent> prepares = named(events, "ListPrepare");
        final List<RecordedEvent> posts = named(events, "ListPost");
        // The 8-request batch in two parts and the busy one; nothing from before the start.
        Assert.assertEquals(submits.size(), 3, "BatchSubmit events: " + submits);
        final RecordedEvent first = submits.get(0);
        Assert.assertEquals(first.getString("agent"), "jfr0");
        Assert.assertEquals(first.getString("platform"), "HOST");
        Assert.assertEquals(first.getInt("first"), 0);
        Assert.assertEquals(first.getInt("requests"), 3);
        Assert.assertEquals(first.getLong("bytes"), 1000 + 1001 + 1002);
        Assert.assertEquals(submits.get(1).getInt("first"), 3);
        Assert.assertEquals(submits.get(1).getInt("requests"), 5);
        Assert.assertEquals(submits.get(1).getLong("batchId"), first.getLong("batchId"));
        Assert.assertEquals(submits.get(2).getLong("bytes"), 1024L * (4L << 20));
        Assert.assertEquals(completes.size(), 2, "BatchComplete events: " + completes);
        final RecordedEvent done = completes.get(0);
        Assert.assertEquals(done.getLong("batchId"), first.getLong("batchId"));
        Assert.assertEquals(done.getInt("requests"), 8);
        Assert.assertEquals(done.getInt("completed"), 8);
        Assert.assertEquals(done.getInt("failed") + done.getInt("timedOut") + done.getInt("cancelled"), 0);
        Assert.assertTrue(done.getDuration().toNanos() >= 0);
        final RecordedEvent busyDone = completes.get(1);
        Assert.assertEquals(busyDone.getInt("requests"), 1024);
        Assert.assertTrue(busyDone.getInt("cancelled") > 0, "the cancelled batch: " + busyDone);
        Assert.assertEquals(busyDone.getInt("completed") + busyDone.getInt("cancelled"), 1024);
        Assert.assertEquals(prepares.size(), 1, "ListPrepare events: " + prepares);
        Assert.assertEquals(prepares.get(0).getInt("requests"), 10);
        Assert.assertEquals(prepares.get(0).getLong("bytes"), 10 * 4096L);
        final long listId = prepares.get(0).getLong("listId");
        Assert.assertEquals(posts.size(), 3, "ListPost events: " + posts);
        for (int k = 0; k < 3; k++)
        {
            Assert.assertEquals(posts.get(k).getLong("listId"), listId);
            Assert.assertEquals(posts.get(k).getLong("post"), k + 1);
        }
        Assert.assertEquals(posts.get(0).getString("outcome"), "COMPLETED");
        Assert.assertEquals(posts.get(0).getInt("to"), 10);
        Assert.assertEquals(posts.get(0).getLong("bytes"), 10 * 4096L);
        Assert.assertEquals(posts.get(1).getInt("from"), 2);
        Assert.assertEquals(posts.get(1).getInt("to"), 5);
        Assert.assertEquals(posts.get(1).getLong("bytes"), 3 * 4096L);
        Assert.assertEquals(posts.get(1).getInt("skipped"), 0);
        Assert.assertEquals(posts.get(2).getString("outcome"), "CANCELLED");
        Assert.assertEquals(posts.get(2).getInt("skipped"), 10);
        Assert.assertEquals(named(events, "PeerLost").size(), 0, "no owner was lost");
    }

    private static List<RecordedEvent> named(final List<RecordedEvent> events, final String name)
    {
        final List<RecordedEvent> out = new ArrayList<>();
        for (final RecordedEvent e : events)
        {
            if (e.getEventType().getName().equals("io.github.te4j." + name))
            {
                out.add(e);
            }
        }
        out.sort((x, y) -> x.getStartTime().compareTo(y.getStartTime()));
        return out;
    }
}
