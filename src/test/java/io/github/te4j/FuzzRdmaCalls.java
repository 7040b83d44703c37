package io.github.te4j;

import io.github.te4j.FuzzVerdict.Expect;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

/**
 * Fuzz calls on the RDMA part of the fixture ({@link FuzzRdma}): forged metadata connected to,
 * connectPeers with damaged lists, ranks and masks, registrations, queue pairs recreated at
 * random times, queries, use after close, closes with RDMA work queued, and valid put+signal
 * rounds whose bytes are checked. Stream operations on the RDMA contexts come through
 * {@link FuzzCalls#streamOp} (its context pool includes them). Like {@link FuzzCalls}, each call
 * states its verdict first.
 */
final class FuzzRdmaCalls
{
    private final FuzzCalls pools;
    private final FuzzRdma d;
    private final Random rnd;
    private final boolean racing;

    FuzzRdmaCalls(final FuzzCalls pools, final FuzzRdma rdma, final Random rnd, final boolean racing)
    {
        this.pools = pools;
        this.d = rdma;
        this.rnd = rnd;
        this.racing = racing;
    }

    void any(final FuzzVerdict v)
    {
        v.rdma = true;
        final int k = rnd.nextInt(100);
        if (k < 20) forgedMetadata(v);
        else if (k < 29) connectArgs(v);
        else if (k < 38) connectThroughExchange(v);
        else if (k < 55) pools.streamOp(v);
        else if (k < 68) query(v);
        else if (k < 76) registration(v);
        else if (k < 82) recreate(v);
        else if (k < 87) closeWhileQueued(v);
        else if (k < 90) closeSome(v);
        else if (k < 93) useAfterClose(v);
        else validTransfer(v);
    }

    /** What storm threads do: operations, queries, recreation, reconnection and closes, all at once. */
    void racy(final FuzzVerdict v)
    {
        v.rdma = true;
        final int k = rnd.nextInt(100);
        if (k < 40) pools.streamOp(v);
        else if (k < 65) query(v);
        else if (k < 78) recreate(v);
        else if (k < 92) connectArgs(v);
        else closeSome(v);
    }

    private Expect unlessRacing(final Expect e)
    {
        return racing && e == Expect.SUCCEED ? Expect.EITHER : e;
    }

    // ---- metadata and connections ----------------------------------------------------------

    /** Rank 0's real metadata, forged ({@link ForgedMetadata}), decoded and connected to by rank 1. */
    void forgedMetadata(final FuzzVerdict v)
    {
        if (rnd.nextInt(10) == 0)
        {
            truncations(v);
            return;
        }
        final RdmaMetadata own = d.transports[1].localMetadata();
        final ForgedMetadata.Forgery fg = ForgedMetadata.forge(rnd, d.transports[0].localMetadata().toBytes(),
            own.lid());
        v.set(unlessRacing(fg.expect()), "connectPeers(rank 1, rank 0's metadata " + fg.what() + ")");
        if (fg.expect() != Expect.SUCCEED)
        {
            d.disturb();
        }
        if (rnd.nextBoolean())
        {
            // The bytes as they arrive: connectPeers' own decoder refuses them.
            d.transports[1].connectPeers(1, Arrays.asList(fg.bytes(), own.toBytes()), 3);
            return;
        }
        final RdmaMetadata m = RdmaMetadata.fromBytes(fg.bytes());
        d.transports[1].connectPeers(1, MetadataBytes.of(Arrays.asList(m, own)), 3);
    }

    /**
     * {@link RdmaTransport#connect} through an exchange that lies ({@link ScriptedExchange}): wrong
     * world size or rank, too few or too many blobs, a null blob, a forged own or peer entry.
     */
    void connectThroughExchange(final FuzzVerdict v)
    {
        final int t = pools.r01();
        final List<RdmaMetadata> cur = d.metadata();
        final byte[][] blobs = {cur.get(0).toBytes(), cur.get(1).toBytes()};
        byte[][] gathered = blobs;
        int world = 2;
        int rank = t;
        Expect e = Expect.SUCCEED;
        String shape = "honest";
        switch (rnd.nextInt(7))
        {
            case 0:
                world = new int[] {0, 1, 3, 64, -1}[rnd.nextInt(5)];
                e = Expect.FAIL;
                shape = "world " + world;
                break;
            case 1:
                rank = pools.anyRank();
                // As the other rank, the own entry is not this transport's metadata.
                e = rank == t ? Expect.SUCCEED : Expect.FAIL;
                shape = "rank " + rank;
                break;
            case 2:
                gathered = Arrays.copyOf(blobs, rnd.nextBoolean() ? rnd.nextInt(2) : 3);
                e = Expect.FAIL;
                shape = gathered.length + " blobs";
                break;
            case 3:
                gathered[rnd.nextInt(2)] = null;
                e = Expect.FAIL;
                shape = "a null blob";
                break;
            case 4:
            case 5:
            {
                final int r = pools.r01();
                final ForgedMetadata.Forgery fg = ForgedMetadata.forge(rnd, blobs[r], cur.get(1 - r).lid());
                gathered[r] = fg.bytes();
                e = fg.expect();
                shape = (r == t ? "own" : "peer") + " entry " + fg.what();
                break;
            }
            default:
                break;
        }
        final Duration timeout = rnd.nextInt(8) == 0 ? pools.anyTimeout() : Duration.ofSeconds(5);
        if (!FuzzCalls.validTimeout(timeout))
        {
            e = Expect.FAIL;
        }
        else if (e == Expect.SUCCEED && timeout.compareTo(Duration.ofSeconds(1)) < 0)
        {
            // One deadline bounds the whole connect: a tiny one may run out (Te4jTimeoutException).
            e = Expect.EITHER;
        }
        v.set(unlessRacing(e), "connect on rank " + t + " through an exchange with " + shape + ", timeout " + timeout);
        if (e != Expect.SUCCEED)
        {
            d.disturb();
        }
        d.transports[t].connect(new ScriptedExchange(rank, world, gathered), timeout);
    }

    /** Every truncation of a real rank's metadata, 0 .. length - 1 bytes, is refused by the decoder. */
    void truncations(final FuzzVerdict v)
    {
        final byte[] good = d.transports[pools.r01()].localMetadata().toBytes();
        v.set(unlessRacing(Expect.SUCCEED), "every truncation of " + good.length + " B of metadata refused");
        for (int len = 0; len < good.length; len++)
        {
            try
            {
                RdmaMetadata.fromBytes(Arrays.copyOf(good, len));
                throw new AssertionError("metadata truncated to " + len + " B was accepted");
            }
            catch (final BadHandleException expected)
            {
                // refused, as it must be
            }
        }
    }

    /** connectPeers with a random rank, mask and a list that is null, short, long, swapped, stale or has nulls. */
    void connectArgs(final FuzzVerdict v)
    {
        final int t = pools.r01();
        final int rank = rnd.nextInt(3) == 0 ? pools.anyRank() : t;
        final long mask = rnd.nextBoolean() ? 3 : pools.anyMask();
        final List<RdmaMetadata> cur = d.metadata();
        List<RdmaMetadata> list = new ArrayList<>(cur);
        final String shape;
        switch (rnd.nextInt(8))
        {
            case 0: list = null; shape = "null"; break;
            case 1:
                list = new ArrayList<>(list.subList(0, rnd.nextInt(2)));
                shape = list.size() + " entries";
                break;
            case 2: list.add(cur.get(rnd.nextInt(2))); shape = "3 entries"; break;
            case 3: list = Arrays.asList(cur.get(1), cur.get(0)); shape = "swapped"; break;
            case 4: list.set(rnd.nextInt(2), null); shape = "a null entry"; break;
            case 5:
            {
                final int r = pools.r01();
                list.set(r, d.first[r]);
                shape = "rank " + r + "'s first metadata";
                break;
            }
            case 6: list.set(1 - t, cur.get(t)); shape = "own entry twice"; break;
            default: shape = "current"; break;
        }
        final Expect e = connectExpect(list, rank, t, mask, cur);
        v.set(unlessRacing(e), "connectPeers on rank " + t + " (rank " + rank + ", mask 0x" + Long.toHexString(mask)
            + ", " + shape + ")");
        if (e != Expect.FAIL && rank != t)
        {
            d.rerank();
        }
        else if (e == Expect.EITHER || (e == Expect.SUCCEED && mask != 3))
        {
            d.disturb();
        }
        d.transports[t].connectPeers(rank, MetadataBytes.of(list), mask);
    }

    /** What connectPeers on transport t must do with these arguments (current metadata: cur). */
    private static Expect connectExpect(final List<RdmaMetadata> list, final int rank, final int t, final long mask,
        final List<RdmaMetadata> cur)
    {
        if (list == null || list.size() != 2 || rank < 0 || rank > 1 || (mask & ~3L) != 0 || (mask & 1L << rank) == 0)
        {
            return Expect.FAIL;
        }
        for (int r = 0; r < 2; r++)
        {
            if ((mask & 1L << r) != 0 && list.get(r) == null)
            {
                return Expect.FAIL;
            }
        }
        // The entry at the given rank must be this transport's own current metadata.
        if (!same(list.get(rank), cur.get(t)) || (mask == 3 && list.get(0).endpoint().equals(list.get(1).endpoint())))
        {
            return Expect.FAIL;
        }
        // Another rank than the fixture's (the transport cannot know), or a stale peer entry naming
        // QPs that are gone: the NIC may connect or be refused by the peer, traffic fails later.
        return rank == t && (mask != 3 || same(list.get(1 - t), cur.get(1 - t))) ? Expect.SUCCEED : Expect.EITHER;
    }

    private static boolean same(final RdmaMetadata a, final RdmaMetadata b)
    {
        return Arrays.equals(a.toBytes(), b.toBytes());
    }

    // ---- state ------------------------------------------------------------------------------

    /** Queries, timeouts and call-order errors on a live transport. */
    void query(final FuzzVerdict v)
    {
        final RdmaTransport t = d.transports[pools.r01()];
        final boolean open = !t.isClosed();
        switch (rnd.nextInt(8))
        {
            case 0:
            {
                final int i = pools.anyInt(4);
                v.set(unlessRacing(open && i >= 0 && i < 2 ? Expect.SUCCEED : Expect.FAIL), "qpState(" + i + ")");
                t.qpState(i);
                break;
            }
            case 1:
                v.set(unlessRacing(open ? Expect.SUCCEED : Expect.FAIL), "statistics");
                t.statistics();
                break;
            case 2:
                v.set(unlessRacing(open ? Expect.SUCCEED : Expect.FAIL), "diagnostics");
                t.diagnostics();
                break;
            case 3:
            {
                final boolean clean = d.clean() && !racing;
                v.set(unlessRacing(open ? Expect.SUCCEED : Expect.FAIL), "lostPeers");
                final long lost = t.lostPeers();
                if (clean && lost != 0)
                {
                    throw new AssertionError("both ranks are alive and connected, lostPeers 0x" + Long.toHexString(lost));
                }
                break;
            }
            case 4:
                v.set(unlessRacing(open ? Expect.SUCCEED : Expect.FAIL), "localMetadata");
                RdmaMetadata.fromBytes(t.localMetadata().toBytes());
                break;
            case 5:
            {
                final Duration to = pools.anyTimeout();
                v.set(unlessRacing(open && FuzzCalls.validTimeout(to) ? Expect.SUCCEED : Expect.FAIL),
                    "deviceTimeout(" + to + ")");
                try
                {
                    t.deviceTimeout(to);
                }
                finally
                {
                    restore(() -> t.deviceTimeout(FuzzRdma.DEVICE_TIMEOUT));
                }
                break;
            }
            case 6:
            {
                final Duration to = new Duration[] {null, Duration.ZERO, Duration.ofMillis(999), Duration.ofSeconds(1),
                    Duration.ofSeconds(10), Duration.ofDays(1).plusMillis(1), Duration.ofSeconds(Long.MAX_VALUE)}
                    [rnd.nextInt(7)];
                final boolean ok = to != null && to.compareTo(Duration.ofSeconds(1)) >= 0
                    && to.compareTo(Duration.ofDays(1)) <= 0;
                v.set(unlessRacing(open && ok ? Expect.SUCCEED : Expect.FAIL), "peerTimeout(" + to + ")");
                t.peerTimeout(to);
                break;
            }
            default:
                v.set(Expect.FAIL, "initialize again");
                t.initialize(2, 1 + rnd.nextInt(2));
                break;
        }
    }

    /** Re-runs {@code r}, ignoring a refusal (the transport may have been closed meanwhile). */
    private static void restore(final Runnable r)
    {
        try
        {
            r.run();
        }
        catch (final RuntimeException e)
        {
            // closed by a racing thread: nothing to restore
        }
    }

    /** register / deregister with buffers of this and other engines, raw ranges, closed buffers. */
    void registration(final FuzzVerdict v)
    {
        final int t = pools.r01();
        final RdmaTransport tr = d.transports[t];
        final DeviceBuffer w = d.windows[t];
        d.disturb();  // a new registration has a new key: the peer's copy of it is stale
        switch (rnd.nextInt(6))
        {
            case 5:
            {
                // Raw memory of a te4j buffer freed just before (any part of it): the NIC would
                // write into freed memory, so the registration must be refused.
                final DeviceBuffer freed = w.owner().allocateBuffer(65536);
                freed.close();
                final long off = new long[] {0, 64, 4096, 65536 - 64}[rnd.nextInt(4)];
                v.set(Expect.FAIL, "register(freed buffer + " + off + ", 64) on rank " + t);
                tr.register(freed.address() + off, 64);
                break;
            }
            case 0:
            {
                final int k = rnd.nextInt(5);
                final DeviceBuffer b = k < 2 ? w : k == 2 ? d.windows[1 - t] : pools.anyBuffer();
                // Any open buffer of the process may be registered: whichever engine frees it
                // withdraws it from every transport (LiveMemory).
                v.set(b == null || b.isClosed() ? Expect.FAIL : unlessRacing(Expect.SUCCEED),
                    "register(" + b + ") on rank " + t);
                tr.register(b);
                break;
            }
            case 1:
            {
                final long base = w.address();
                final long[][] ranges = {{0, 64}, {base, 0}, {base, -1}, {Long.MAX_VALUE - 8, 64},
                    {base, w.size() + 1}, {base + w.size() - 8, 64}, {base, w.size()}, {base + 64, w.size() - 128}};
                final int i = rnd.nextInt(ranges.length);
                // The last range is empty or negative in a window of at most 128 B.
                v.set(i < 6 || ranges[i][1] <= 0 ? Expect.FAIL : unlessRacing(Expect.SUCCEED), "register(0x"
                    + Long.toHexString(ranges[i][0])
                    + ", " + ranges[i][1] + ") on rank " + t + " (window 0x" + Long.toHexString(base) + ", " + w.size()
                    + " B)");
                tr.register(ranges[i][0], ranges[i][1]);
                break;
            }
            case 2:
            {
                final boolean registered = tr.registeredAddress() == w.address();
                v.set(registered ? unlessRacing(Expect.SUCCEED) : Expect.EITHER, "deregister(window) on rank " + t);
                tr.deregister(w);
                break;
            }
            case 3:
            {
                final long a = new long[] {0, 1, w.address() + 64, -4096}[rnd.nextInt(4)];
                v.set(Expect.FAIL, "deregister(0x" + Long.toHexString(a) + ") on rank " + t);
                tr.deregister(a);
                break;
            }
            default:
            {
                final DeviceBuffer dead = pools.dead(DeviceBuffer.class);
                v.set(Expect.FAIL, "register(closed buffer " + dead + ") on rank " + t);
                tr.register(dead);
                break;
            }
        }
    }

    /** recreateQueuePairs on one rank at a random moment, or the recovery of both. */
    void recreate(final FuzzVerdict v)
    {
        final int t = pools.r01();
        if (!racing && rnd.nextBoolean())
        {
            v.set(Expect.SUCCEED, "recover both ranks (re-register, recreateQueuePairs, connectPeers)");
            d.repair();
            return;
        }
        v.set(unlessRacing(Expect.SUCCEED), "recreateQueuePairs on rank " + t);
        d.disturb();
        d.transports[t].recreateQueuePairs();
    }

    // ---- closes -----------------------------------------------------------------------------

    /** Enqueues RDMA work, then closes what it runs on before the stream ran it. */
    void closeWhileQueued(final FuzzVerdict v)
    {
        final int r = pools.r01();
        final CommContext c = d.contexts[r];
        final OpStream s = d.streams[r];
        v.set(unlessRacing(Expect.SUCCEED), "RDMA work queued, then a close");
        d.disturb();
        s.waitSignal(c, 0, 1 + rnd.nextInt(1000), Duration.ofMillis(1 + rnd.nextInt(30)));
        s.put(c, 1 - r, 0, d.windows[r], 0, Math.min(d.size, 1 + rnd.nextInt(1 << 16)));
        s.signal(c, 1 - r, 0, 1);
        s.redAdd(c, 1 - r, 4 * (rnd.nextInt((int)Math.min(d.size / 4, 16))), 3);
        final NativeResource[] victims = {d.transports[r], d.transports[1 - r], c, d.windows[r],
            d.windows[1 - r], d.engines[1 - r], d.engines[r]};
        victims[rnd.nextInt(victims.length)].close();
    }

    /** Closes one of the RDMA objects (transport, context, window, stream, engine), twice. */
    void closeSome(final FuzzVerdict v)
    {
        final List<NativeResource> all = d.resources();
        final NativeResource x = all.get(rnd.nextInt(all.size()));
        v.set(Expect.SUCCEED, "close+close(" + x.name() + ")");
        x.close();
        x.close();
        if (!x.isClosed())
        {
            throw new AssertionError(x.name() + " not closed after close()");
        }
    }

    /** Any call on a closed RdmaTransport is refused. */
    void useAfterClose(final FuzzVerdict v)
    {
        final RdmaTransport t = d.dead(RdmaTransport.class, rnd);
        v.set(t == null ? Expect.EITHER : Expect.FAIL, "use after close of " + t);
        if (t == null)
        {
            return;
        }
        switch (rnd.nextInt(7))
        {
            case 0: t.localMetadata(); break;
            case 1: t.recreateQueuePairs(); break;
            case 2: t.connectPeers(0, MetadataBytes.of(d.metadata()), 3); break;
            case 3: t.register(d.windows[0]); break;
            case 4: t.qpState(0); break;
            case 5: t.statistics(); break;
            default: d.contexts[0].withRdma(t); break;
        }
    }

    // ---- correct results --------------------------------------------------------------------

    /** Recovers if disturbed, then a put+signal over RDMA whose bytes and signal word are checked. */
    void validTransfer(final FuzzVerdict v)
    {
        final int r = pools.r01();
        final int peer = 1 - r;
        v.set(Expect.SUCCEED, "valid RDMA put+signal to rank " + peer + (d.clean() ? "" : " after recovery"));
        if (!d.clean())
        {
            d.repair();
        }
        FuzzCalls.drain(d.streams[0]);
        FuzzCalls.drain(d.streams[1]);
        final int len = 1 + rnd.nextInt((int)Math.min(d.size - 4, 1 << 16));
        final long dst = 4 + (long)(rnd.nextDouble() * (d.size - 4 - len));
        final long src = (long)(rnd.nextDouble() * (d.size - len));
        final byte[] data = new byte[len];
        rnd.nextBytes(data);
        d.windows[r].write(src, data);
        final int before = word(d.windows[peer]);
        final int add = rnd.nextInt();
        d.streams[r].putWithSignal(d.contexts[r], peer, dst, d.windows[r], src, len, 0, add);
        d.streams[r].synchronize(Duration.ofSeconds(20));
        if (!Arrays.equals(d.windows[peer].read(dst, len), data))
        {
            throw new AssertionError("RDMA put delivered wrong bytes");
        }
        if (word(d.windows[peer]) != before + add)
        {
            throw new AssertionError("RDMA signal added the wrong amount");
        }
    }

    private static int word(final DeviceBuffer b)
    {
        final byte[] w = b.read(0, 4);
        return (w[0] & 0xff) | (w[1] & 0xff) << 8 | (w[2] & 0xff) << 16 | (w[3] & 0xff) << 24;
    }
}
