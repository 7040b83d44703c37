package io.github.te4j;

import io.github.te4j.exchange.InMemorySegmentDirectory;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import org.testng.Assert;
import org.testng.annotations.AfterClass;
import org.testng.annotations.BeforeClass;
import org.testng.annotations.Test;

/**
 * Seeded random calls of the notification entry points on the host platform, good and hostile
 * mixed: sends and submits with messages of 0 to 8 KiB and null, unknown and malformed segment
 * names, null, negative, zero and short timeouts, parts naming two segments or a bad request,
 * poll and take with any timeout, listeners set and cleared. A model holds every notification
 * that a call accepted, in order; the receiver must deliver exactly those, in that order, and
 * every refused call must have changed nothing. A second test feeds mutated version-3 segment
 * descriptors to the decoder: it returns or throws {@link BadHandleException}, nothing else.
 *
 * <p>Bounded in time ({@code -Dte4j.fuzz.notifySeconds}, 4 s); the seed
 * ({@code -Dte4j.fuzz.notifySeed}) is in every failure message.
 */
public class NotificationFuzzTest
{
    private static final Duration T = Duration.ofSeconds(30);
    private static final int AREA = 1 << 20;
    private static final int DEPTH = 8;

    private TransferEngine e0;
    private TransferEngine e1;
    private TransferAgent a0;
    private TransferAgent a1;
    private RegisteredMemory r0;
    private SegmentHandle s1;
    private SegmentHandle self;
    private InMemorySegmentDirectory dir0;
    private InMemorySegmentDirectory dir1;

    @BeforeClass(alwaysRun = true)
    public void setUp()
    {
        final String space = "notifyfuzz" + System.nanoTime();
        e0 = TransferEngine.builder().platform(Platform.HOST).build();
        e1 = TransferEngine.builder().platform(Platform.HOST).build();
        final P2pTransport p0 = e0.getOrCreateP2pTransport(2);
        final P2pTransport p1 = e1.getOrCreateP2pTransport(2);
        a0 = e0.createTransferAgent(p0, "rank0");
        a1 = e1.createTransferAgent(p1, "rank1");
        r0 = a0.registerLocalMemory(p0.allocateBuffer(AREA));
        a1.registerLocalMemory(p1.allocateBuffer(AREA));
        dir0 = InMemorySegmentDirectory.open(space);
        dir1 = InMemorySegmentDirectory.open(space);
        a0.publishSegment(dir0);
        a1.publishSegment(dir1);
        s1 = a0.openSegment("rank1", dir0, T);
        self = a0.openSegment("rank0");
    }

    @AfterClass(alwaysRun = true)
    public void tearDown() throws Exception
    {
        for (final AutoCloseable c : new AutoCloseable[] {e0, e1, dir0, dir1})
        {
            if (c != null)
            {
                c.close();
            }
        }
    }

    private static final byte[] VOID = new byte[0];

    /** The next message the receiver must deliver, past void slots; null when none. */
    private static byte[] nextMessage(final ArrayDeque<byte[]> model)
    {
        while (model.peek() == VOID)
        {
            model.poll();
        }
        return model.poll();
    }

    private static byte[] message(final Random rnd, final int serial)
    {
        final int k = rnd.nextInt(10);
        final int n = k == 0 ? 0 : k == 1 ? Notification.MAX_BYTES : k == 2 ? Notification.MAX_BYTES + 1
            : k == 3 ? Notification.MAX_BYTES + 1 + rnd.nextInt(4096) : 4 + rnd.nextInt(64);
        final byte[] m = new byte[n];
        rnd.nextBytes(m);
        if (n >= 4)
        {
            ByteBuffer.wrap(m).putInt(serial);
        }
        return m;
    }

    private static Duration timeout(final Random rnd)
    {
        switch (rnd.nextInt(8))
        {
            case 0:
                return null;
            case 1:
                return Duration.ofNanos(-1 - rnd.nextInt(1000));
            case 2:
                return Duration.ZERO;
            case 3:
                return Duration.ofMillis(rnd.nextInt(20));
            default:
                return T;
        }
    }

    private static String name(final Random rnd)
    {
        switch (rnd.nextInt(8))
        {
            case 0:
                return null;
            case 1:
                return "";
            case 2:
                return "bad name/" + rnd.nextInt(10);
            case 3:
                return "nobody" + rnd.nextInt(10);
            case 4:
                return "x".repeat(129);
            default:
                return "rank1";
        }
    }

    @Test(groups = "host", timeOut = 120_000)
    public void randomCallsDeliverExactlyWhatWasAccepted()
    {
        final long seed = Long.getLong("te4j.fuzz.notifySeed", System.nanoTime());
        final long end = System.nanoTime() + Long.getLong("te4j.fuzz.notifySeconds", 4) * 1_000_000_000L;
        final Random rnd = new Random(seed);
        final Notifications inbox = a1.notifications();
        // What the ring holds from this sender, in order: accepted messages, and VOID for a submit
        // whose part did not complete (its slot is skipped by the receiver).
        final ArrayDeque<byte[]> model = new ArrayDeque<>();
        int serial = 0;
        int calls = 0;
        {
            while (System.nanoTime() < end && calls < 20_000)
            {
                calls++;
                final String at = "seed " + seed + ", call " + calls;
                final int k = rnd.nextInt(100);
                if (k < 35)
                {
                    final byte[] m = message(rnd, serial++);
                    final String n = name(rnd);
                    final Duration t = timeout(rnd);
                    final boolean valid = m.length <= Notification.MAX_BYTES && "rank1".equals(n) && t != null
                        && !t.isNegative();
                    try
                    {
                        a0.sendNotification(n, rnd.nextInt(20) == 0 ? null : m, t);
                        Assert.assertTrue(valid, at + ": accepted a bad send");
                        model.add(m);
                    }
                    catch (final IllegalArgumentException e)
                    {
                        Assert.assertTrue(!valid || e.getMessage().contains("notification is null"), at + ": " + e);
                    }
                    catch (final Te4jTimeoutException e)
                    {
                        Assert.assertTrue(valid && model.size() >= DEPTH, at + ": queue full with " + model.size()
                            + " pending: " + e);
                    }
                }
                else if (k < 60)
                {
                    final byte[] m = message(rnd, serial++);
                    final int len = 1 + rnd.nextInt(4096);
                    final int pick = rnd.nextInt(10);
                    final List<TransferRequest> part = pick == 0
                        ? List.of(TransferRequest.write(r0, 0, s1, 0, len), TransferRequest.write(r0, 0, self, 0, len))
                        : pick == 1 ? List.of(TransferRequest.write(r0, 0, s1, AREA - 1, len + 1))
                        : List.of(TransferRequest.write(r0, rnd.nextInt(AREA - len), s1, rnd.nextInt(AREA - len), len));
                    final Duration t = timeout(rnd);
                    final boolean valid = m.length <= Notification.MAX_BYTES && pick > 1 && t != null && !t.isNegative();
                    final TransferBatch b = a0.allocateBatch(2);
                    try
                    {
                        b.submit(part, m, t);
                        Assert.assertTrue(valid, at + ": accepted a bad submit");
                        // A short deadline may time the part out: then its slot is void.
                        Assert.assertTrue(b.awaitDone(T), at);
                        model.add(b.status(0).state() == TransferState.COMPLETED ? m : VOID);
                    }
                    catch (final IllegalArgumentException | IndexOutOfBoundsException e)
                    {
                        Assert.assertFalse(valid, at + ": refused a good submit: " + e);
                        Assert.assertEquals(b.size(), 0, at + ": a refused part was submitted");
                    }
                    catch (final Te4jTimeoutException e)
                    {
                        Assert.assertTrue(valid && model.size() >= DEPTH, at + ": " + e);
                        Assert.assertEquals(b.size(), 0, at + ": a part held back was submitted");
                    }
                    finally
                    {
                        b.close();
                    }
                }
                else if (k < 90)
                {
                    // A long take only where a message is due (else it would wait its whole timeout).
                    Duration t = rnd.nextInt(4) == 0 ? timeout(rnd) : Duration.ZERO;
                    if (T.equals(t) && model.stream().allMatch(m -> m == VOID))
                    {
                        t = Duration.ofMillis(5);
                    }
                    try
                    {
                        final Optional<Notification> got = rnd.nextBoolean() ? inbox.poll()
                            : Optional.of(inbox.take(t));
                        if (got.isPresent())
                        {
                            Assert.assertTrue(Arrays.equals(got.get().message(), nextMessage(model)), at
                                + ": out of order, or delivered with nothing sent");
                            Assert.assertEquals(got.get().sender(), "rank0", at);
                        }
                    }
                    catch (final IllegalArgumentException e)
                    {
                        Assert.assertTrue(t == null || t.isNegative(), at + ": " + e);
                    }
                    catch (final Te4jTimeoutException e)
                    {
                        Assert.assertTrue(model.isEmpty() || t.toMillis() < 100, at + ": " + e);
                    }
                }
                else
                {
                    // Everything sent is published once its part finished: a drain must find the model.
                    for (byte[] want = nextMessage(model); want != null; want = nextMessage(model))
                    {
                        Assert.assertTrue(Arrays.equals(inbox.take(T).message(), want), at + ": drain order");
                    }
                    Assert.assertEquals(inbox.poll(), Optional.empty(), at + ": more than accepted");
                }
            }
            for (byte[] want = nextMessage(model); want != null; want = nextMessage(model))
            {
                Assert.assertTrue(Arrays.equals(inbox.take(T).message(), want), "seed " + seed + ": final drain");
            }
            Assert.assertEquals(inbox.poll(), Optional.empty(), "seed " + seed + ": more than accepted");
        }
        System.out.println("notification fuzz: " + calls + " calls, seed " + seed);
    }

    /** Mutated descriptors (bit flips, truncation, growth, the notification section's fields): decoded or refused. */
    @Test(groups = "host", timeOut = 60_000)
    public void mutatedDescriptorsAreDecodedOrRefused()
    {
        final long seed = Long.getLong("te4j.fuzz.notifySeed", System.nanoTime());
        final Random rnd = new Random(seed);
        final byte[] good = a1.segmentDescriptor();
        Assert.assertNotNull(SegmentDescriptor.fromBytes(good).notificationArea(), "a host agent publishes its area");
        for (int i = 0; i < 20_000; i++)
        {
            byte[] m = good.clone();
            switch (rnd.nextInt(4))
            {
                case 0:
                    for (int f = 1 + rnd.nextInt(4); f > 0; f--)
                    {
                        m[rnd.nextInt(m.length)] ^= (byte) (1 << rnd.nextInt(8));
                    }
                    break;
                case 1:
                    m = Arrays.copyOf(m, rnd.nextInt(m.length));
                    break;
                case 2:
                    m = Arrays.copyOf(m, m.length + 1 + rnd.nextInt(16));
                    break;
                default:
                    // The tail: rings (u16) and depth (u32) of the notification section.
                    final int at = m.length - 1 - rnd.nextInt(6);
                    m[at] = (byte) rnd.nextInt(256);
                    break;
            }
            try
            {
                SegmentDescriptor.fromBytes(m);
            }
            catch (final BadHandleException e)
            {
                Assert.assertNotNull(e.getMessage());
            }
            catch (final RuntimeException e)
            {
                throw new AssertionError("seed " + seed + ", mutation " + i + ": " + e, e);
            }
        }
    }
}
