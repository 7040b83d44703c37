package io.github.te4j;

import io.github.te4j.exchange.InMemorySegmentDirectory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.testng.Assert;
import org.testng.annotations.AfterClass;
import org.testng.annotations.BeforeClass;
import org.testng.annotations.Test;

/**
 * Seeded random transfer batches on the host platform, good and hostile requests mixed in one
 * stream of parts: in range (READ and WRITE, verified byte for byte against a model of both
 * memories), out of range (local and remote, negative, straddling the end), lengths 0, negative
 * and over 2^40, a closed segment, an unregistered or foreign local memory, a null request,
 * parts over the capacity, a deadline already passed. A part with a bad request must throw the
 * documented class naming the first bad request's index and change no byte; everything else
 * must complete (or time out untouched, past its deadline).
 *
 * <p>Bounded in time ({@code -Dte4j.fuzz.batchSeconds}, 4 s) and rounds (2,000); each round
 * derives its own seed from {@code -Dte4j.fuzz.batchSeed}, which every failure message prints
 * with the round, so a failure replays with the same seed.
 */
public class TransferBatchFuzzTest
{
    private static final Duration T = Duration.ofSeconds(30);
    private static final int AREA = 1 << 20;
    /** WRITE destinations lie in the segment's lower half, READ sources in its upper half. */
    private static final int HALF = AREA / 2;
    private static final int SLOTS = 64;
    private static final int SLOT = HALF / SLOTS;

    private TransferEngine e0;
    private TransferEngine e1;
    private TransferAgent a0;
    private TransferAgent a1;
    private DeviceBuffer src0;
    private DeviceBuffer dst0;
    private DeviceBuffer seg1;
    private RegisteredMemory r0;
    private RegisteredMemory d0;
    private RegisteredMemory foreign;
    private RegisteredMemory unregistered;
    private SegmentHandle s1;
    private SegmentHandle closed;
    private InMemorySegmentDirectory dir0;
    private InMemorySegmentDirectory dir1;

    @BeforeClass(alwaysRun = true)
    public void setUp()
    {
        final String space = "batchfuzz" + System.nanoTime();
        e0 = TransferEngine.builder().platform(Platform.HOST).build();
        e1 = TransferEngine.builder().platform(Platform.HOST).build();
        final P2pTransport p0 = e0.getOrCreateP2pTransport(2);
        final P2pTransport p1 = e1.getOrCreateP2pTransport(2);
        a0 = e0.createTransferAgent(p0, "rank0");
        a1 = e1.createTransferAgent(p1, "rank1");
        src0 = p0.allocateBuffer(AREA);
        dst0 = p0.allocateBuffer(AREA);
        seg1 = p1.allocateBuffer(AREA);
        r0 = a0.registerLocalMemory(src0);
        d0 = a0.registerLocalMemory(dst0);
        unregistered = a0.registerLocalMemory(p0.allocateBuffer(4096));
        a0.unregisterLocalMemory(unregistered);
        a1.registerLocalMemory(seg1);
        foreign = a1.registerLocalMemory(p1.allocateBuffer(4096));
        dir0 = InMemorySegmentDirectory.open(space);
        dir1 = InMemorySegmentDirectory.open(space);
        a0.publishSegment(dir0);
        a1.publishSegment(dir1);
        s1 = a0.openSegment("rank1", dir0, T);
        closed = a0.openSegment("rank1");
        closed.close();
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

    /** What a generated request should do: the exception class of a bad one, or null. */
    private static final class Planned
    {
        TransferRequest request;
        Class<? extends RuntimeException> refusal;
        int slot = -1;
    }

    @Test(groups = "host", timeOut = 120_000)
    public void randomBatchesGoodAndHostile()
    {
        final long seed = Long.getLong("te4j.fuzz.batchSeed", 0x5eed_ba7c4L);
        final long budget = Long.getLong("te4j.fuzz.batchSeconds", 4) * 1_000_000_000L;
        final long start = System.nanoTime();
        final byte[] srcModel = new byte[AREA];
        final byte[] segModel = new byte[AREA];
        final byte[] dstModel = new byte[AREA];
        new Random(seed).nextBytes(srcModel);
        src0.write(0, srcModel);
        int rounds = 0;
        long requests = 0;
        long refusedParts = 0;
        long timedOut = 0;
        for (int round = 0; round < 2_000 && System.nanoTime() - start < budget; round++, rounds++)
        {
            final String where = "seed=" + seed + " round=" + round + " (replay: -Dte4j.fuzz.batchSeed=" + seed + ")";
            final Random rnd = new Random(seed * 1_000_003L + round);
            // Fresh destinations: poison everywhere, random READ sources.
            Arrays.fill(segModel, 0, HALF, (byte) 0x5a);
            final byte[] readSrc = new byte[HALF];
            rnd.nextBytes(readSrc);
            System.arraycopy(readSrc, 0, segModel, HALF, HALF);
            Arrays.fill(dstModel, (byte) 0xa5);
            seg1.write(0, segModel);
            dst0.write(0, dstModel);
            final boolean[] slotUsed = new boolean[2 * SLOTS];  // WRITE slots, then READ slots
            final int capacity = 1 + rnd.nextInt(48);
            final List<Planned> accepted = new ArrayList<>();
            try (TransferBatch b = a0.allocateBatch(capacity))
            {
                final int parts = 1 + rnd.nextInt(5);
                // Now and then every part gets deadline 0 (a batch's deadline is the latest of its submits).
                final Duration timeout = rnd.nextInt(12) == 0 ? Duration.ZERO : T;
                for (int p = 0; p < parts; p++)
                {
                    final int first = b.size();
                    final int want = 1 + rnd.nextInt(Math.max(1, capacity / 2 + 2));
                    // About a third of the parts carry hostile requests (one or two, anywhere in the part).
                    final boolean hostilePart = rnd.nextInt(3) == 0;
                    final int hostileAt = rnd.nextInt(want);
                    final int secondAt = rnd.nextBoolean() ? rnd.nextInt(want) : -1;
                    final List<Planned> part = new ArrayList<>();
                    for (int i = 0; i < want; i++)
                    {
                        part.add(plan(rnd, slotUsed, hostilePart && (i == hostileAt || i == secondAt)));
                    }
                    final List<TransferRequest> rs = new ArrayList<>();
                    part.forEach(x -> rs.add(x.request));
                    int bad = -1;
                    for (int i = 0; i < part.size() && bad < 0; i++)
                    {
                        bad = part.get(i).refusal != null ? i : -1;
                    }
                    final boolean overCapacity = want > capacity - first;
                    if (overCapacity || bad >= 0)
                    {
                        final Class<? extends RuntimeException> type = overCapacity ? IllegalArgumentException.class
                            : part.get(bad).refusal;
                        final String needle = overCapacity ? "capacity" : "request " + (first + bad) + ":";
                        RuntimeException e = null;
                        try
                        {
                            b.submit(rs, timeout);
                        }
                        catch (final RuntimeException thrown)
                        {
                            e = thrown;
                        }
                        Assert.assertNotNull(e, where + ": accepted " + (overCapacity ? "a part over the capacity"
                            : part.get(bad).request));
                        Assert.assertTrue(type.isInstance(e) && e.getMessage().contains(needle), where + ": expected "
                            + type.getSimpleName() + " naming '" + needle + "' for " + part.get(Math.max(0, bad)).request
                            + ", got " + e);
                        Assert.assertEquals(b.size(), first, where + ": a refused part submitted something");
                        refusedParts++;
                        for (final Planned x : part)
                        {
                            if (x.slot >= 0)
                            {
                                slotUsed[x.slot] = false;  // nothing of it ran: the slot is free again
                            }
                        }
                        continue;
                    }
                    Assert.assertEquals(b.submit(rs, timeout), first, where);
                    accepted.addAll(part);
                }
                final List<TransferStatus> st = b.await(T);
                Assert.assertEquals(st.size(), accepted.size(), where);
                for (int i = 0; i < st.size(); i++)
                {
                    final TransferState s = st.get(i).state();
                    Assert.assertTrue(s == TransferState.COMPLETED || s == TransferState.TIMEOUT,
                        where + ": request " + i + " " + st.get(i));
                    if (s == TransferState.TIMEOUT)
                    {
                        timedOut++;
                        continue;  // never started: its destination keeps the model's bytes
                    }
                    final TransferRequest r = accepted.get(i).request;
                    if (r.opcode() == TransferOpcode.WRITE)
                    {
                        System.arraycopy(srcModel, (int) r.localOffset(), segModel, (int) r.remoteOffset(), (int) r.length());
                    }
                    else
                    {
                        System.arraycopy(segModel, (int) r.remoteOffset(), dstModel, (int) r.localOffset(), (int) r.length());
                    }
                }
                requests += accepted.size();
            }
            compare(seg1.read(0, AREA), segModel, where + ": segment");
            compare(dst0.read(0, AREA), dstModel, where + ": local READ destination");
        }
        System.out.println("TransferBatchFuzzTest: seed=" + seed + " rounds=" + rounds + " requests run=" + requests
            + " refused parts=" + refusedParts + " timed out=" + timedOut);
        Assert.assertTrue(rounds > 0 && requests > 0, "seed=" + seed + ": nothing ran");
    }

    private static void compare(final byte[] got, final byte[] want, final String what)
    {
        final int at = Arrays.mismatch(got, want);
        Assert.assertEquals(at, -1, what + " differs from the model at byte " + at);
    }

    /** One request: a good one in a free slot, or one of eight kinds of hostile input. */
    private Planned plan(final Random rnd, final boolean[] slotUsed, final boolean hostile)
    {
        final Planned x = new Planned();
        final int kind = hostile ? rnd.nextInt(8) : 8;
        final long len = 1 + rnd.nextInt(SLOT);
        switch (kind)
        {
            case 0:
                x.request = TransferRequest.write(r0, 0, s1, AREA - len + 1 + rnd.nextInt(8), len);  // past the end
                x.refusal = IndexOutOfBoundsException.class;
                return x;
            case 1:
                x.request = TransferRequest.read(d0, 0, s1, -1 - rnd.nextInt(1 << 20), len);
                x.refusal = IndexOutOfBoundsException.class;
                return x;
            case 2:
                x.request = TransferRequest.write(r0, AREA - len + 1 + rnd.nextInt(8), s1, 0, len);
                x.refusal = IndexOutOfBoundsException.class;
                return x;
            case 3:
                x.request = TransferRequest.read(d0, -1 - rnd.nextInt(64), s1, HALF, len);
                x.refusal = IndexOutOfBoundsException.class;
                return x;
            case 4:
                final long[] lengths = {0, -1, -rnd.nextInt(Integer.MAX_VALUE) - 1L, (1L << 40) + 1 + rnd.nextInt(1 << 20),
                    Long.MAX_VALUE, Long.MIN_VALUE};
                x.request = TransferRequest.write(r0, 0, s1, 0, lengths[rnd.nextInt(lengths.length)]);
                x.refusal = IllegalArgumentException.class;
                return x;
            case 5:
                x.request = TransferRequest.write(r0, 0, closed, 0, len);
                x.refusal = ClosedException.class;
                return x;
            case 6:
                x.request = rnd.nextBoolean() ? TransferRequest.write(unregistered, 0, s1, 0, 1)
                    : TransferRequest.write(foreign, 0, s1, 0, 1);
                x.refusal = IllegalArgumentException.class;
                return x;
            case 7:
                x.request = rnd.nextBoolean() ? null : TransferRequest.of(null, r0, 0, s1, 0, 1);
                x.refusal = IllegalArgumentException.class;
                return x;
            default:
                break;
        }
        // A good request in a slot of its own (destinations never overlap, so the model is exact).
        final boolean write = rnd.nextBoolean();
        int slot = rnd.nextInt(SLOTS);
        for (int tries = 0; tries < SLOTS && slotUsed[(write ? 0 : SLOTS) + slot]; tries++)
        {
            slot = (slot + 1) % SLOTS;
        }
        if (slotUsed[(write ? 0 : SLOTS) + slot])
        {
            // Every slot taken: a request over 2^40 instead, refused before anything runs.
            x.request = TransferRequest.read(d0, 0, s1, 0, (1L << 40) + 1);
            x.refusal = IllegalArgumentException.class;
            return x;
        }
        x.slot = (write ? 0 : SLOTS) + slot;
        slotUsed[x.slot] = true;
        final long in = rnd.nextInt((int) (SLOT - len + 1));
        if (write)
        {
            final long from = rnd.nextInt((int) (AREA - len + 1));
            x.request = TransferRequest.write(r0, from, s1, (long) slot * SLOT + in, len);
        }
        else
        {
            final long from = HALF + rnd.nextInt((int) (HALF - len + 1));
            x.request = TransferRequest.read(d0, (long) slot * SLOT + in, s1, from, len);
        }
        return x;
    }
}
