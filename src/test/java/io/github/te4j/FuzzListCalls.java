package io.github.te4j;

import io.github.te4j.FuzzVerdict.Expect;
import io.github.te4j.exchange.InMemorySegmentDirectory;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The fuzz calls at transfer lists and cancel ({@link FuzzCalls#any}): each sets up a fresh
 * agent on a rank's transport with its window as its own segment (setup may meet objects an
 * earlier call closed: any documented exception then), states what the library must do, and
 * makes the one call under test: a prepare of hostile requests, a post of a random (maybe
 * invalid) range or timeout, a cancel, a post after close or unregister, a batch cancel. Valid
 * transfers are checked byte for byte when no other thread can touch the window.
 */
final class FuzzListCalls
{
    private static final Duration T = Duration.ofSeconds(20);
    private static final AtomicLong NAMES = new AtomicLong();

    private final FuzzFixture f;
    private final Random rnd;
    private final boolean racing;
    private final FuzzCalls calls;

    FuzzListCalls(final FuzzCalls calls, final FuzzFixture f, final Random rnd, final boolean racing)
    {
        this.calls = calls;
        this.f = f;
        this.rnd = rnd;
        this.racing = racing;
    }

    void any(final FuzzVerdict v)
    {
        final int r = rnd.nextInt(FuzzFixture.RANKS);
        final String name = "fuzzlist" + NAMES.incrementAndGet();
        v.set(Expect.EITHER, "list setup on rank " + r);
        if (!racing)
        {
            FuzzCalls.drain(f.streams[0]);
            FuzzCalls.drain(f.streams[1]);
        }
        try (InMemorySegmentDirectory dir = InMemorySegmentDirectory.open(name))
        {
            final TransferAgent agent = f.engines[r].createTransferAgent(f.transports[r], name);
            try
            {
                final DeviceBuffer w = f.windows[r];
                final RegisteredMemory m = agent.registerLocalMemory(w);
                agent.publishSegment(dir);
                final SegmentHandle self = agent.openSegment(name);
                call(v, agent, w, m, self);
            }
            finally
            {
                agent.close();
            }
        }
    }

    private void call(final FuzzVerdict v, final TransferAgent agent, final DeviceBuffer w, final RegisteredMemory m,
        final SegmentHandle self)
    {
        final long size = w.size();
        final long half = size / 2;
        final int n = 1 + rnd.nextInt(16);
        final long len = 1 + rnd.nextInt((int) Math.max(1, Math.min(half / n, 1 << 14)));
        // Sources in the lower half, destinations in the upper half: never overlapping.
        final TransferDescriptors d = new TransferDescriptors(n);
        for (int i = 0; i < n; i++)
        {
            d.write(m, i * len, self, half + i * len, len);
        }
        switch (rnd.nextInt(6))
        {
            case 0:
            {
                final int bad = rnd.nextInt(n);
                final TransferDescriptors h = new TransferDescriptors(n);
                for (int i = 0; i < n; i++)
                {
                    final long[] offsets = {-1, size, size - len + 1, Long.MIN_VALUE, Long.MAX_VALUE};
                    if (i != bad)
                    {
                        h.write(m, i * len, self, half + i * len, len);
                    }
                    else if (rnd.nextBoolean())
                    {
                        h.write(m, 0, self, offsets[rnd.nextInt(offsets.length)], len);
                    }
                    else
                    {
                        h.add(rnd.nextBoolean() ? null : TransferOpcode.READ, m, 0, rnd.nextBoolean() ? null : self, 0,
                            new long[] {0, -1, (1L << 40) + 1, Long.MIN_VALUE}[rnd.nextInt(4)]);
                    }
                }
                v.set(Expect.FAIL, "prepareList with request " + bad + " hostile");
                agent.prepareList(h);
                break;
            }
            case 1:
            {
                final TransferList list = agent.prepareList(d);
                final int from = rnd.nextInt(n + 2) - 1;
                final int to = rnd.nextInt(n + 2);
                final Duration timeout = rnd.nextInt(8) == 0 ? Duration.ofMillis(-1) : T;
                final boolean valid = from >= 0 && from < to && to <= n && !timeout.isNegative();
                final byte[] data = new byte[(int) (n * len)];
                rnd.nextBytes(data);
                w.write(0, data);
                v.set(calls.succeedIf(valid), "post([" + from + ", " + to + "), " + timeout + ") of " + n + " x " + len);
                final List<TransferStatus> st = list.post(from, to, timeout).await(T);
                for (final TransferStatus s : st)
                {
                    if (s.state() != TransferState.COMPLETED)
                    {
                        throw new AssertionError("a valid post ended " + s);
                    }
                }
                if (!racing && !Arrays.equals(w.read(half + from * len, (int) ((to - from) * len)),
                    Arrays.copyOfRange(data, (int) (from * len), (int) (to * len))))
                {
                    throw new AssertionError("the post moved wrong bytes");
                }
                break;
            }
            case 2:
            {
                final TransferList list = agent.prepareList(d);
                final TransferPost p = list.post(T);
                v.set(calls.succeedIf(true), "post, cancel and await of " + n + " x " + len);
                p.cancel();
                for (final TransferStatus s : p.await(T))
                {
                    if (s.state() != TransferState.COMPLETED && s.state() != TransferState.CANCELLED)
                    {
                        throw new AssertionError("a cancelled post ended " + s);
                    }
                }
                break;
            }
            case 3:
            {
                final TransferList list = agent.prepareList(d);
                list.close();
                v.set(Expect.FAIL, "post after close");
                list.post(T);
                break;
            }
            case 4:
            {
                final TransferList list = agent.prepareList(d);
                agent.unregisterLocalMemory(m);
                v.set(Expect.FAIL, "post after unregister");
                list.post(T);
                break;
            }
            default:
            {
                final TransferBatch b = agent.allocateBatch(n);
                b.submit(d, T);
                v.set(calls.succeedIf(true), "batch cancel and await of " + n + " x " + len);
                b.cancel();
                for (final TransferStatus s : b.await(T))
                {
                    if (s.state() != TransferState.COMPLETED && s.state() != TransferState.CANCELLED)
                    {
                        throw new AssertionError("a cancelled batch ended " + s);
                    }
                }
                break;
            }
        }
    }
}
