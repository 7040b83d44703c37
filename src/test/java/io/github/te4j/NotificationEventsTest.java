package io.github.te4j;

import io.github.te4j.exchange.InMemorySegmentDirectory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import jdk.jfr.EventType;
import jdk.jfr.FlightRecorder;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.testng.Assert;
import org.testng.annotations.Test;

/**
 * The notification JFR events: registered, disabled by default, and recorded with their fields
 * when a recording enables them (a submit's notification and one sent on its own).
 */
public class NotificationEventsTest
{
    static final Duration T = Duration.ofSeconds(30);

    @Test(groups = "host", timeOut = 60_000)
    public void sentAndReceivedAreRecordedWhenEnabled() throws Exception
    {
        final String space = "notifyjfr" + System.nanoTime();
        final Path file = Files.createTempFile("te4j-notify", ".jfr");
        try (TransferEngine e0 = TransferEngine.builder().platform(Platform.HOST).build();
            TransferEngine e1 = TransferEngine.builder().platform(Platform.HOST).build();
            InMemorySegmentDirectory dir0 = InMemorySegmentDirectory.open(space);
            InMemorySegmentDirectory dir1 = InMemorySegmentDirectory.open(space))
        {
            final P2pTransport p0 = e0.getOrCreateP2pTransport(2);
            final P2pTransport p1 = e1.getOrCreateP2pTransport(2);
            final TransferAgent a0 = e0.createTransferAgent(p0, "jfr0");
            final TransferAgent a1 = e1.createTransferAgent(p1, "jfr1");
            final RegisteredMemory src = a0.registerLocalMemory(p0.allocateBuffer(1 << 16));
            a1.registerLocalMemory(p1.allocateBuffer(1 << 16));
            a0.publishSegment(dir0);
            a1.publishSegment(dir1);
            final SegmentHandle s1 = a0.openSegment("jfr1", dir0, T);
            final Notifications inbox = a1.notifications();
            // Off unless recorded: nothing fills or commits an event here.
            a0.sendNotification("jfr1", new byte[] {9}, T);
            Assert.assertEquals(inbox.take(T).message(), new byte[] {9});
            // Registered up front so their settings can be listed (a JVM registers an event class at the
            // latest when it is first committed with a recording on).
            FlightRecorder.register(io.github.te4j.telemetry.NotificationSentEvent.class);
            FlightRecorder.register(io.github.te4j.telemetry.NotificationReceivedEvent.class);
            for (final String name : List.of("io.github.te4j.NotificationSent", "io.github.te4j.NotificationReceived"))
            {
                final EventType type = FlightRecorder.getFlightRecorder().getEventTypes().stream()
                    .filter(t -> t.getName().equals(name)).findFirst().orElseThrow(() -> new AssertionError(name));
                Assert.assertFalse(type.isEnabled(), name + " is on without a recording");
            }
            try (Recording r = new Recording())
            {
                r.enable("io.github.te4j.NotificationSent");
                r.enable("io.github.te4j.NotificationReceived");
                r.start();
                try (TransferBatch b = a0.allocateBatch(1))
                {
                    b.submit(List.of(TransferRequest.write(src, 0, s1, 0, 4096)), new byte[100], T);
                    Assert.assertEquals(inbox.take(T).size(), 100);
                }
                a0.sendNotification("jfr1", new byte[7], T);
                Assert.assertEquals(inbox.poll().orElseThrow().size(), 7);
                r.stop();
                r.dump(file);
            }
            final List<RecordedEvent> events = RecordingFile.readAllEvents(file);
            final List<RecordedEvent> sent = events.stream()
                .filter(e -> e.getEventType().getName().equals("io.github.te4j.NotificationSent")).toList();
            final List<RecordedEvent> received = events.stream()
                .filter(e -> e.getEventType().getName().equals("io.github.te4j.NotificationReceived")).toList();
            Assert.assertEquals(sent.size(), 2, events.toString());
            Assert.assertEquals(received.size(), 2, events.toString());
            final RecordedEvent withSubmit = sent.stream().filter(e -> e.getBoolean("withSubmit")).findFirst()
                .orElseThrow();
            Assert.assertEquals(withSubmit.getString("sender"), "jfr0");
            Assert.assertEquals(withSubmit.getString("target"), "jfr1");
            Assert.assertEquals(withSubmit.getInt("bytes"), 100);
            Assert.assertEquals(withSubmit.getLong("position"), 1L);
            final RecordedEvent took = received.stream().filter(e -> e.getInt("bytes") == 100).findFirst().orElseThrow();
            Assert.assertEquals(took.getString("receiver"), "jfr1");
            Assert.assertEquals(took.getString("sender"), "jfr0");
            Assert.assertEquals(took.getString("via"), "take");
            Assert.assertTrue(received.stream().anyMatch(e -> e.getString("via").equals("poll")));
        }
        finally
        {
            Files.deleteIfExists(file);
        }
    }
}
