package io.github.te4j;

import io.github.te4j.check.Patterns;
import io.github.te4j.exchange.InMemorySegmentDirectory;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.testng.Assert;
import org.testng.annotations.AfterMethod;
import org.testng.annotations.BeforeMethod;
import org.testng.annotations.Test;

/**
 * Notifications in one process on the host platform: two engines publish their segments in an
 * in-memory directory; rank 0 writes random data into rank 1's poisoned segment, part by part,
 * each part with a notification. Rank 1 checks on receipt that the part's bytes are all there,
 * and that notifications come in submit order; back-pressure of a full queue, the size limit,
 * unknown senders, the listener thread.
 */
public class NotificationTest
{
    static final Duration T = Duration.ofSeconds(30);
    static final long AREA = 24L << 20;
    static final int DEPTH = 8;

    private TransferEngine e0;
    private TransferEngine e1;
    private TransferAgent a0;
    private TransferAgent a1;
    private DeviceBuffer src0;
    private DeviceBuffer seg1;
    private RegisteredMemory r0;
    private SegmentHandle s1;
    private InMemorySegmentDirectory dir0;
    private InMemorySegmentDirectory dir1;
    private String space;
    private final List<AutoCloseable> extra = new ArrayList<>();

    @BeforeMethod(alwaysRun = true)
    public void setUp()
    {
        space = "notify" + System.nanoTime();
        e0 = TransferEngine.builder().platform(Platform.HOST).build();
        e1 = TransferEngine.builder().platform(Platform.HOST).build();
        final P2pTransport p0 = e0.getOrCreateP2pTransport(2);
        final P2pTransport p1 = e1.getOrCreateP2pTransport(2);
        a0 = e0.createTransferAgent(p0, "rank0");
        a1 = e1.createTransferAgent(p1, "rank1");
        src0 = p0.allocateBuffer(AREA);
        seg1 = p1.allocateBuffer(AREA);
        r0 = a0.registerLocalMemory(src0);
        a1.registerLocalMemory(seg1);
        dir0 = InMemorySegmentDirectory.open(space);
        dir1 = InMemorySegmentDirectory.open(space);
        a0.publishSegment(dir0);
        a1.publishSegment(dir1);
        s1 = a0.openSegment("rank1", dir0, T);
    }

    @AfterMethod(alwaysRun = true)
    public void tearDown() throws Exception
    {
        for (final AutoCloseable c : extra)
        {
            c.close();
        }
        extra.clear();
        for (final AutoCloseable c : new AutoCloseable[] {e0, e1, dir0, dir1})
        {
            if (c != null)
            {
                c.close();
            }
        }
    }

    private static byte[] message(final int i, final Random rnd)
    {
        final byte[] m = new byte[4 + rnd.nextInt(Notification.MAX_BYTES - 3)];
        rnd.nextBytes(m);
        ByteBuffer.wrap(m).putInt(i);
        return m;
    }

    /**
     * 200 parts of random sizes (4 KiB to 1.5 MiB: the large ones are cut over the host helper
     * threads), each with a notification of random length; the receiver takes them as they come
     * (the queue holds 8, so the sender is held back many times) and checks each part's bytes
     * at the moment its notification arrives.
     */
    @Test(groups = "host", timeOut = 240_000)
    public void notificationsArriveInOrderAfterTheirData() throws Exception
    {
        final int parts = 200;
        final Random rnd = new Random(7);
        final long[] offsets = new long[parts];
        final long[] lengths = new long[parts];
        final long[] seeds = new long[parts];
        final byte[][] messages = new byte[parts][];
        long at = 0;
        for (int i = 0; i < parts; i++)
        {
            lengths[i] = 4096 + rnd.nextInt(i % 10 == 0 ? (3 << 19) : (64 << 10));
            if (at + lengths[i] > AREA)
            {
                at = 0;  // regions are reused only after the receiver checked them (see below)
            }
            offsets[i] = at;
            at += lengths[i];
            seeds[i] = Patterns.seed(11, 0, 1, i);
            messages[i] = message(i, rnd);
        }
        seg1.fill(0, AREA, Patterns.POISON);
        final Notifications inbox = a1.notifications();
        final AtomicReference<String> problem = new AtomicReference<>();
        final CountDownLatch[] checked = new CountDownLatch[parts];
        for (int i = 0; i < parts; i++)
        {
            checked[i] = new CountDownLatch(1);
        }
        final Thread receiver = new Thread(() ->
        {
            try
            {
                for (int i = 0; i < parts && problem.get() == null; i++)
                {
                    final Notification n = inbox.take(T);
                    final int index = ByteBuffer.wrap(n.message()).getInt();
                    if (index != i || !java.util.Arrays.equals(n.message(), messages[i]) || !n.sender().equals("rank0"))
                    {
                        problem.set("notification " + i + ": got " + n + " with index " + index);
                        break;
                    }
                    final String bad = Patterns.verify(seg1, offsets[i], lengths[i], seeds[i]);
                    if (bad != null)
                    {
                        problem.set("part " + i + " when its notification came: " + bad);
                        break;
                    }
                    seg1.fill(offsets[i], lengths[i], Patterns.POISON);  // poisoned again for a later part
                    checked[i].countDown();
                }
            }
            catch (final RuntimeException e)
            {
                problem.set("receiver: " + e);
            }
            finally
            {
                for (final CountDownLatch c : checked)
                {
                    c.countDown();
                }
            }
        }, "notification receiver");
        receiver.start();
        try (TransferBatch b = a0.allocateBatch(parts))
        {
            for (int i = 0; i < parts; i++)
            {
                // A region is written again only once the receiver checked its previous part.
                for (int k = 0; k < i; k++)
                {
                    if (offsets[k] < offsets[i] + lengths[i] && offsets[i] < offsets[k] + lengths[k])
                    {
                        Assert.assertTrue(checked[k].await(60, TimeUnit.SECONDS), "part " + k + " not checked");
                    }
                }
                Patterns.write(src0, offsets[i], lengths[i], seeds[i]);
                Assert.assertEquals(b.submit(List.of(TransferRequest.write(r0, offsets[i], s1, offsets[i], lengths[i])),
                    messages[i], T), i);
            }
            Assert.assertTrue(b.awaitDone(T));
        }
        receiver.join(120_000);
        Assert.assertNull(problem.get(), problem.get());
        Assert.assertFalse(receiver.isAlive());
        Assert.assertEquals(inbox.poll(), Optional.empty());
    }

    /**
     * A receiver that takes nothing: eight notifications fill its queue from this sender, the
     * ninth submit waits until its deadline and fails with the queue-full error having submitted
     * nothing (its destination keeps its poison); once the receiver takes, it goes through.
     */
    @Test(groups = "host", timeOut = 120_000)
    public void fullQueueHoldsTheSenderBackUntilItsDeadline()
    {
        final Notifications inbox = a1.notifications();
        for (int i = 0; i < DEPTH; i++)
        {
            a0.sendNotification("rank1", new byte[] {(byte) i}, T);
        }
        seg1.fill(0, 1 << 20, Patterns.POISON);
        Patterns.write(src0, 0, 1 << 20, 99);
        try (TransferBatch b = a0.allocateBatch(4))
        {
            final long start = System.nanoTime();
            final Te4jTimeoutException e = Assert.expectThrows(Te4jTimeoutException.class, () -> b.submit(
                List.of(TransferRequest.write(r0, 0, s1, 0, 1 << 20)), new byte[] {42}, Duration.ofMillis(300)));
            Assert.assertTrue(System.nanoTime() - start >= TimeUnit.MILLISECONDS.toNanos(300), "failed before its deadline");
            Assert.assertTrue(e.getMessage().contains("receive queue is full"), e.getMessage());
            Assert.assertTrue(e.getMessage().contains("'rank1'"), e.getMessage());
            Assert.assertEquals(b.size(), 0, "nothing of the part was submitted");
            Assert.assertNull(Patterns.verifyPoison(seg1, 0, 1 << 20));
            Assert.expectThrows(Te4jTimeoutException.class, () -> a0.sendNotification("rank1", new byte[1],
                Duration.ZERO));
            for (int i = 0; i < DEPTH; i++)
            {
                final Notification n = inbox.poll().orElseThrow(() -> new AssertionError("a notification is missing"));
                Assert.assertEquals(n.message(), new byte[] {(byte) i});
            }
            Assert.assertEquals(b.submit(List.of(TransferRequest.write(r0, 0, s1, 0, 1 << 20)), new byte[] {42}, T), 0);
            final Notification n = inbox.take(T);
            Assert.assertEquals(n.message(), new byte[] {42});
            Assert.assertNull(Patterns.verify(seg1, 0, 1 << 20, 99));
        }
    }

    /** Over 4 KiB is refused in Java, before anything is submitted or reserved. */
    @Test(groups = "host")
    public void oversizeIsRefusedBeforeAnythingRuns()
    {
        final Notifications inbox = a1.notifications();
        try (TransferBatch b = a0.allocateBatch(4))
        {
            final IllegalArgumentException e = Assert.expectThrows(IllegalArgumentException.class, () -> b.submit(
                List.of(TransferRequest.write(r0, 0, s1, 0, 4096)), new byte[Notification.MAX_BYTES + 1], T));
            Assert.assertTrue(e.getMessage().contains("4097 B is over the limit of 4096 B"), e.getMessage());
            Assert.assertEquals(b.size(), 0);
            final TransferDescriptors d = new TransferDescriptors(1);
            d.write(r0, 0, s1, 0, 4096);
            Assert.expectThrows(IllegalArgumentException.class, () -> b.submit(d, new byte[1 << 20], T));
            Assert.expectThrows(IllegalArgumentException.class, () -> b.submit(d, (byte[]) null, T));
            Assert.assertEquals(b.size(), 0);
        }
        Assert.expectThrows(IllegalArgumentException.class, () -> a0.sendNotification("rank1", new byte[4097], T));
        Assert.expectThrows(IllegalArgumentException.class, () -> a0.sendNotification("rank1", null, T));
        Assert.expectThrows(IllegalArgumentException.class, () -> a0.sendNotification("nobody", new byte[1], T));
        Assert.expectThrows(IllegalArgumentException.class, () -> a0.sendNotification("bad name!", new byte[1], T));
        Assert.expectThrows(IllegalArgumentException.class, () -> a0.sendNotification("rank1", new byte[1], null));
        Assert.assertEquals(inbox.poll(), Optional.empty());
        // At the limit it goes through, and an empty one too.
        a0.sendNotification("rank1", new byte[Notification.MAX_BYTES], T);
        a0.sendNotification("rank1", new byte[0], T);
        Assert.assertEquals(inbox.take(T).size(), Notification.MAX_BYTES);
        Assert.assertEquals(inbox.take(T).size(), 0);
    }

    /** A part naming two segments has no single receiver: refused before anything runs. */
    @Test(groups = "host")
    public void aPartWithANotificationNamesOneSegment()
    {
        final SegmentHandle self = a0.openSegment("rank0");
        try (TransferBatch b = a0.allocateBatch(4))
        {
            final IllegalArgumentException e = Assert.expectThrows(IllegalArgumentException.class, () -> b.submit(
                List.of(TransferRequest.write(r0, 0, s1, 0, 64), TransferRequest.write(r0, 0, self, 64, 64)),
                new byte[1], T));
            Assert.assertTrue(e.getMessage().contains("names one segment"), e.getMessage());
            Assert.assertEquals(b.size(), 0);
        }
    }

    /**
     * A sender whose segment the receiver cannot look up is not delivered, nor dropped: once its
     * segment is published where the receiver looks, its notification comes.
     */
    @Test(groups = "host", timeOut = 60_000)
    public void anUnknownSenderIsNeverDelivered()
    {
        final Notifications inbox = a1.notifications();
        final TransferEngine e2 = TransferEngine.builder().platform(Platform.HOST).build();
        extra.add(e2);
        final InMemorySegmentDirectory elsewhere = InMemorySegmentDirectory.open(space + "-elsewhere");
        extra.add(elsewhere);
        final TransferAgent stranger = e2.createTransferAgent(e2.getOrCreateP2pTransport(2), "stranger");
        elsewhere.publish("rank1", a1.segmentDescriptor());  // the stranger knows rank1; rank1 does not know it
        stranger.publishSegment(elsewhere);
        stranger.sendNotification("rank1", "who am I".getBytes(java.nio.charset.StandardCharsets.UTF_8), T);
        Assert.expectThrows(Te4jTimeoutException.class, () -> inbox.take(Duration.ofMillis(500)));
        // rank0's notification, sent after, is not held up by the stranger's.
        a0.sendNotification("rank1", new byte[] {1}, T);
        final Notification n = inbox.take(T);
        Assert.assertEquals(n.sender(), "rank0");
        Assert.assertEquals(inbox.poll(), Optional.empty());
        dir0.publish("stranger", stranger.segmentDescriptor());
        final Notification late = inbox.take(T);
        Assert.assertEquals(late.sender(), "stranger");
        Assert.assertEquals(new String(late.message(), java.nio.charset.StandardCharsets.UTF_8), "who am I");
    }

    /** A sender that closes after sending: what it sent still comes, then its ring is free for another. */
    @Test(groups = "host", timeOut = 60_000)
    public void aSenderClosedAfterSendingStillDeliversAndFreesItsRing()
    {
        final Notifications inbox = a1.notifications();
        for (int i = 0; i < DEPTH; i++)
        {
            a0.sendNotification("rank1", new byte[] {(byte) i}, T);
        }
        a0.close();
        for (int i = 0; i < DEPTH; i++)
        {
            Assert.assertEquals(inbox.take(T).message(), new byte[] {(byte) i});
        }
        Assert.assertEquals(inbox.poll(), Optional.empty());
        // Every ring is free again: 64 new senders can claim one each.
        final List<TransferAgent> senders = new ArrayList<>();
        for (int i = 0; i < NOTIFY_RINGS; i++)
        {
            final TransferAgent s = e0.createTransferAgent(e0.getOrCreateP2pTransport(2), "sender" + i);
            s.publishSegment(dir0);
            s.sendNotification("rank1", new byte[] {(byte) i}, T);
            senders.add(s);
        }
        final TransferAgent one = e0.createTransferAgent(e0.getOrCreateP2pTransport(2), "oneTooMany");
        one.publishSegment(dir0);
        final Te4jException e = Assert.expectThrows(Te4jException.class, () -> one.sendNotification("rank1",
            new byte[1], T));
        Assert.assertTrue(e.getMessage().contains("already has 64 senders"), e.getMessage());
        final boolean[] seen = new boolean[NOTIFY_RINGS];
        for (int i = 0; i < NOTIFY_RINGS; i++)
        {
            final Notification n = inbox.take(T);
            Assert.assertEquals(n.sender(), "sender" + (n.message()[0] & 0xff));
            seen[n.message()[0] & 0xff] = true;
        }
        for (final boolean s : seen)
        {
            Assert.assertTrue(s);
        }
    }

    static final int NOTIFY_RINGS = 64;

    /** The listener runs on a te4j thread and gets every notification, in order. */
    @Test(groups = "host", timeOut = 60_000)
    public void theListenerIsCalledOnATe4jThread() throws Exception
    {
        final Notifications inbox = a1.notifications();
        final List<String> threads = new CopyOnWriteArrayList<>();
        final List<Integer> got = new CopyOnWriteArrayList<>();
        final CountDownLatch all = new CountDownLatch(100);
        inbox.setListener(n ->
        {
            threads.add(Thread.currentThread().getName());
            got.add(ByteBuffer.wrap(n.message()).getInt());
            all.countDown();
            if (got.size() == 50)
            {
                throw new IllegalStateException("a listener that throws once still gets the next");
            }
        });
        for (int i = 0; i < 100; i++)
        {
            a0.sendNotification("rank1", ByteBuffer.allocate(4).putInt(i).array(), T);
        }
        Assert.assertTrue(all.await(30, TimeUnit.SECONDS), "received " + got.size());
        for (int i = 0; i < 100; i++)
        {
            Assert.assertEquals((int) got.get(i), i);
        }
        for (final String t : threads)
        {
            Assert.assertTrue(t.startsWith("te4j-notify"), t);
        }
        inbox.setListener(null);
        Thread.sleep(50);
        a0.sendNotification("rank1", new byte[] {7}, T);
        Assert.assertEquals(inbox.take(T).message(), new byte[] {7});
    }

    /** A receiver replaced by a new agent under the same name: the sender follows the new area. */
    @Test(groups = "host", timeOut = 60_000)
    public void aRepublishedReceiverGetsTheNextNotifications()
    {
        a1.notifications();
        a0.sendNotification("rank1", new byte[] {1}, T);
        a1.close();
        final TransferAgent again = e1.createTransferAgent(e1.getOrCreateP2pTransport(2), "rank1");
        final Notifications inbox = again.notifications();
        again.publishSegment(dir1);
        a0.sendNotification("rank1", new byte[] {2}, T);
        final Notification n = inbox.take(T);
        Assert.assertEquals(n.sender(), "rank0");
        Assert.assertEquals(n.message(), new byte[] {2}, "the new agent gets only what was sent to it");
        Assert.assertEquals(inbox.poll(), Optional.empty());
    }

    /** Closed agents: the receiver's inbox and a sender's sends throw ClosedException. */
    @Test(groups = "host")
    public void closedAgentsThrow()
    {
        final Notifications inbox = a1.notifications();
        a0.sendNotification("rank1", new byte[1], T);
        a1.close();
        Assert.expectThrows(ClosedException.class, inbox::poll);
        Assert.expectThrows(ClosedException.class, () -> inbox.take(Duration.ZERO));
        Assert.expectThrows(ClosedException.class, () -> a0.sendNotification("rank1", new byte[1], T));
        a0.close();
        Assert.expectThrows(ClosedException.class, () -> a0.sendNotification("rank1", new byte[1], T));
        Assert.expectThrows(ClosedException.class, a0::notifications);
    }
}
