package io.github.te4j;

import io.github.te4j.FuzzVerdict.Expect;
import java.io.File;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

/**
 * The fuzz calls: each picks random and adversarial arguments, states what a correct library
 * must do with them ({@link FuzzVerdict}) and then makes exactly one public API call (plus, for
 * data calls, the reads that check the result). Arguments come from pools of edge values.
 */
final class FuzzCalls
{
    private static final Duration SYNC = Duration.ofSeconds(20);
    /** Percent of calls aimed at the RDMA objects ({@link FuzzRdmaCalls}); -Dte4j.fuzz.rdmaPercent. */
    private static final int RDMA_PERCENT = Integer.getInteger("te4j.fuzz.rdmaPercent", 15);

    private final FuzzFixture f;
    private final Random rnd;
    /** Other threads may close fixture objects at any moment: "must succeed" becomes "either". */
    private final boolean racing;

    FuzzCalls(final FuzzFixture fixture, final Random rnd, final boolean racing)
    {
        this.f = fixture;
        this.rnd = rnd;
        this.racing = racing;
    }

    /** One random call of the kinds a single thread makes. */
    void any(final FuzzVerdict v)
    {
        if (rnd.nextInt(100) < RDMA_PERCENT)
        {
            new FuzzRdmaCalls(this, f.rdma, rnd, racing).any(v);
            return;
        }
        final int k = rnd.nextInt(100);
        if (k < 7) decodeBytes(v);
        else if (k < 10) rdmaMetadataBytes(v);
        else if (k < 22) importForged(v);
        else if (k < 30) importArgs(v);
        else if (k < 44) bufferIo(v);
        else if (k < 62) streamOp(v);
        else if (k < 68) sync(v);
        else if (k < 71) shape(v);
        else if (k < 76) ctxQuery(v);
        else if (k < 80) allocate(v);
        else if (k < 84) export(v);
        else if (k < 86) engineBuild(v);
        else if (k < 88) transportFor(v);
        else if (k < 91) closeSome(v);
        else if (k < 94) closeWhileQueued(v);
        else if (k < 95) hostOnly(v);
        else if (k < 97) registration(v);
        else if (k < 98) new FuzzListCalls(this, f, rnd, racing).any(v);
        else if (k < 99) batchLifecycle(v);
        else validTransfer(v);
    }

    /** One random call of the kinds that run concurrently with others on the same objects. */
    void racy(final FuzzVerdict v)
    {
        if (rnd.nextInt(100) < RDMA_PERCENT)
        {
            new FuzzRdmaCalls(this, f.rdma, rnd, racing).racy(v);
            return;
        }
        final int k = rnd.nextInt(100);
        if (k < 25) bufferIo(v);
        else if (k < 60) streamOp(v);
        else if (k < 72) sync(v);
        else if (k < 82) ctxQuery(v);
        else if (k < 90) decodeBytes(v);
        else if (k < 97) allocate(v);
        else closeSome(v);
    }

    // ---- value pools ------------------------------------------------------------------------

    <T> T pick(final List<T> xs)
    {
        return xs.get(rnd.nextInt(xs.size()));
    }

    int anyRank()
    {
        final int[] rs = {0, 1, 0, 1, -1, 2, 3, 63, 64, Integer.MIN_VALUE, Integer.MAX_VALUE};
        return rnd.nextInt(8) == 0 ? rnd.nextInt() : rs[rnd.nextInt(rs.length)];
    }

    long anyMask()
    {
        final long[] ms = {3, 3, 1, 2, 0, 7, 4, -1L, 1L << 63, 0x8000_0000L};
        return rnd.nextInt(8) == 0 ? rnd.nextLong() : ms[rnd.nextInt(ms.length)];
    }

    /** Offsets and lengths around 0 and the capacity, including overflow bait. */
    long anyLong(final long cap)
    {
        switch (rnd.nextInt(14))
        {
            case 0: return 0;
            case 1: return -1;
            case 2: return 1;
            case 3: return 3;
            case 4: return 4;
            case 5: return cap;
            case 6: return cap + 1;
            case 7: return cap - 4;
            case 8: return Long.MAX_VALUE;
            case 9: return Long.MIN_VALUE;
            case 10: return Integer.MAX_VALUE + 1L;
            case 11: return rnd.nextLong();
            default: return cap <= 0 ? 0 : (long)(rnd.nextDouble() * (cap + 1));
        }
    }

    int anyInt(final int cap)
    {
        final long x = anyLong(cap);
        return rnd.nextInt(6) == 0 ? (int)x : (int)Math.max(Integer.MIN_VALUE, Math.min(Integer.MAX_VALUE, x));
    }

    /** Timeouts of every class: null, negative, zero, 1 ns, short, and past what nanoseconds can hold. */
    Duration anyTimeout()
    {
        switch (rnd.nextInt(11))
        {
            case 0: return null;
            case 1: return Duration.ZERO;
            case 2: return Duration.ofNanos(-1);
            case 3: return Duration.ofNanos(1);
            case 4: return Duration.ofSeconds(Long.MAX_VALUE);
            case 5: return Duration.ofSeconds(Long.MAX_VALUE, 999_999_999);
            case 6: return Duration.ofNanos(Long.MAX_VALUE);
            default: return Duration.ofMillis(1 + rnd.nextInt(40));
        }
    }

    static boolean validTimeout(final Duration t)
    {
        return t != null && !t.isNegative() && !t.isZero();
    }

    int r01()
    {
        return rnd.nextInt(2);
    }

    <T> T dead(final Class<T> type)
    {
        final List<T> found = new ArrayList<>();
        synchronized (f.graveyard)
        {
            for (final Object o : f.graveyard)
            {
                if (type.isInstance(o))
                {
                    found.add(type.cast(o));
                }
            }
        }
        return found.isEmpty() ? null : pick(found);
    }

    DeviceBuffer anyBuffer()
    {
        final int k = rnd.nextInt(10);
        if (k < 6) return f.windows[r01()];
        if (k < 7) return f.otherBuffer;
        if (k < 8) return null;
        return dead(DeviceBuffer.class);
    }

    /** A context for stream operations: P2P, RDMA-only (FuzzRdma), none, or a closed one. */
    CommContext anyOpCtx()
    {
        final int k = rnd.nextInt(10);
        if (k < 6) return f.contexts[r01()];
        if (k < 8) return f.rdma.contexts[r01()];
        if (k < 9) return null;
        return dead(CommContext.class);
    }

    private CommContext anyCtx()
    {
        final int k = rnd.nextInt(10);
        if (k < 8) return f.contexts[r01()];
        if (k < 9) return null;
        return dead(CommContext.class);
    }

    OpStream anyStream()
    {
        final OpStream s = rnd.nextInt(10) == 0 ? dead(OpStream.class) : null;
        return s != null ? s : f.streams[r01()];
    }

    static boolean open(final NativeResource... rs)
    {
        for (final NativeResource r : rs)
        {
            if (r == null || r.isClosed())
            {
                return false;
            }
        }
        return true;
    }

    static boolean inRange(final long off, final long len, final long cap)
    {
        return off >= 0 && len >= 0 && off <= cap && len <= cap - off;
    }

    Expect succeedIf(final boolean valid)
    {
        return valid ? (racing ? Expect.EITHER : Expect.SUCCEED) : Expect.FAIL;
    }

    // ---- handles ----------------------------------------------------------------------------

    /** Damaged wire bytes: must be refused by the decoder or, if decoded, by the import. */
    void decodeBytes(final FuzzVerdict v)
    {
        final byte[] good = f.handles[0].toBytes();
        final byte[] bad = ForgedHandles.mutateBytes(rnd, good);
        v.set(Expect.EITHER, "IpcHandle.fromBytes(" + (bad == null ? "null" : bad.length + " B") + ")");
        final IpcHandle h = IpcHandle.fromBytes(bad);
        final boolean same = Arrays.equals(bad, good);
        v.set(succeedIf(same), "importPeerHandles(decoded " + (same ? "intact" : "altered") + " handle)");
        f.transports[1].importPeerHandles(f.windows[1], 1, Arrays.asList(h, f.handles[1]), 3).close();
    }

    /** RDMA metadata decoding of junk, truncated and magic-prefixed bytes (RdmaMetadata.fromBytes). */
    void rdmaMetadataBytes(final FuzzVerdict v)
    {
        final byte[] junk = new byte[rnd.nextInt(4) == 0 ? rnd.nextInt(8) : rnd.nextInt(600)];
        rnd.nextBytes(junk);
        if (junk.length >= 6 && rnd.nextBoolean())
        {
            // Right magic and version, so the decoder gets past its first checks.
            java.nio.ByteBuffer.wrap(junk).putInt(RdmaMetadata.MAGIC).putShort((short)RdmaMetadata.VERSION);
        }
        final byte[] bytes = rnd.nextInt(20) == 0 ? null : rnd.nextBoolean() ? junk : ForgedHandles.withCrc(junk);
        v.set(Expect.EITHER, "RdmaMetadata.fromBytes(" + (bytes == null ? "null" : bytes.length + " B") + ")");
        RdmaMetadata.fromBytes(bytes);
    }

    /** A forged native blob with a valid CRC: the native decoder or importer must refuse it. */
    void importForged(final FuzzVerdict v)
    {
        final byte[] forged = ForgedHandles.forgeBlob(rnd, f.handles[0], ownFds());
        final boolean same = Arrays.equals(forged, f.handles[0].toBytes());
        v.set(succeedIf(same), "importPeerHandleBytes(forged blob of " + forged.length + " B)");
        f.transports[1].importPeerHandleBytes(f.windows[1], 1, Arrays.asList(forged, f.handles[1].toBytes()), 3)
            .close();
    }

    /** Random rank, mask, list length and nulls around real handles. */
    void importArgs(final FuzzVerdict v)
    {
        final int t = r01();
        final DeviceBuffer local = anyBuffer();
        final int rank = anyRank();
        final long mask = anyMask();
        List<IpcHandle> list = null;
        final int n = new int[] {0, 1, 2, 2, 2, 3, 65}[rnd.nextInt(7)];
        if (rnd.nextInt(10) != 0)
        {
            list = new ArrayList<>();
            for (int i = 0; i < n; i++)
            {
                final int k = rnd.nextInt(6);
                list.add(k == 0 ? null : k == 1 ? f.transports[0].exportHandle(f.windows[0]) : f.handles[i % 2]);
            }
        }
        final boolean obviouslyBad = local == null || local.isClosed() || list == null || list.size() != 2
            || rank < 0 || rank > 1 || (mask & ~3L) != 0 || (mask & (1L << rank)) == 0
            || (local != f.windows[t]);
        v.set(obviouslyBad ? Expect.FAIL : Expect.EITHER,
            "importPeerHandles(rank " + rank + ", mask 0x" + Long.toHexString(mask) + ", " + n + " handles)");
        f.transports[t].importPeerHandles(local, rank, list, mask).close();
    }

    private static int[] ownFds()
    {
        final String[] names = new File("/proc/self/fd").list();
        if (names == null)
        {
            return new int[0];
        }
        return Arrays.stream(names).mapToInt(Integer::parseInt).filter(x -> x < 4096).toArray();
    }

    // ---- buffers ----------------------------------------------------------------------------

    /** read / write / fill with random offsets, lengths and arrays. */
    void bufferIo(final FuzzVerdict v)
    {
        final DeviceBuffer picked = anyBuffer();
        final DeviceBuffer b = picked == null ? f.windows[r01()] : picked;
        final long cap = b == null ? 0 : b.size();
        final long off = anyLong(cap);
        final int arrLen = rnd.nextInt(8) == 0 ? 0 : rnd.nextInt(8192);
        final byte[] arr = rnd.nextInt(12) == 0 ? null : new byte[arrLen];
        final int arrOff = rnd.nextInt(3) == 0 ? anyInt(arrLen) : 0;
        final int len = rnd.nextInt(3) == 0 ? anyInt(arrLen) : Math.max(0, arrLen - Math.max(0, arrOff));
        final boolean bufOk = b != null && !b.isClosed();
        switch (rnd.nextInt(4))
        {
            case 0:
                v.set(succeedIf(bufOk && arr != null && inRange(arrOff, len, arrLen) && inRange(off, len, cap)),
                    "write(" + off + ", byte[" + arrLen + "], " + arrOff + ", " + len + ")");
                b.write(off, arr, arrOff, len);
                break;
            case 1:
                v.set(succeedIf(bufOk && arr != null && inRange(arrOff, len, arrLen) && inRange(off, len, cap)),
                    "read(" + off + ", byte[" + arrLen + "], " + arrOff + ", " + len + ")");
                b.read(off, arr, arrOff, len);
                break;
            case 2:
            {
                final long flen = rnd.nextBoolean() ? len : anyLong(cap);
                v.set(succeedIf(bufOk && inRange(off, flen, cap)), "fill(" + off + ", " + flen + ")");
                b.fill(off, flen, (byte)rnd.nextInt());
                break;
            }
            default:
                v.set(succeedIf(bufOk && len >= 0 && inRange(off, len, cap)), "read(" + off + ", " + len + ")");
                b.read(off, len);
                break;
        }
    }

    void allocate(final FuzzVerdict v)
    {
        final long[] sizes = {0, -1, 1, 3, 4096, 12345, 1 << 20, Long.MAX_VALUE, Long.MIN_VALUE, 1L << 40};
        final long bytes = sizes[rnd.nextInt(sizes.length)];
        final P2pTransport t = rnd.nextInt(8) == 0 && dead(P2pTransport.class) != null ? dead(P2pTransport.class)
            : f.transports[r01()];
        final Expect e = bytes <= 0 || t.isClosed() ? Expect.FAIL : bytes <= 1 << 20 ? succeedIf(true) : Expect.EITHER;
        v.set(e, "allocateBuffer(" + bytes + ")");
        t.allocateBuffer(bytes).close();
    }

    void export(final FuzzVerdict v)
    {
        final int t = r01();
        final DeviceBuffer b = anyBuffer();
        v.set(succeedIf(b == f.windows[t] && open(b, f.transports[t])), "exportHandle(" + b + ")");
        final IpcHandle h = f.transports[t].exportHandle(b);
        if (!Arrays.equals(h.blob(), f.handles[t].blob()))
        {
            throw new AssertionError("exportHandle changed between calls: " + h);
        }
    }

    // ---- engines, transports ----------------------------------------------------------------

    void engineBuild(final FuzzVerdict v)
    {
        final Platform p = rnd.nextBoolean() ? Platform.HOST : Platform.CUDA;
        final int device = new int[] {0, 1, -1, 7, Integer.MIN_VALUE}[rnd.nextInt(5)];
        v.set(device < 0 ? Expect.FAIL : p == Platform.HOST ? succeedIf(true) : Expect.EITHER,
            "TransferEngine.build(" + p + ", device " + device + ")");
        TransferEngine.builder().platform(p).device(device).build().close();
    }

    void transportFor(final FuzzVerdict v)
    {
        final int n = new int[] {-1, 0, 1, 2, 3, 64, 65, Integer.MAX_VALUE}[rnd.nextInt(8)];
        final TransferEngine e = rnd.nextInt(4) == 0 && dead(TransferEngine.class) != null
            ? dead(TransferEngine.class) : f.engines[r01()];
        v.set(n == 2 && !e.isClosed() ? succeedIf(true) : Expect.FAIL, "getOrCreateP2pTransport(" + n + ")");
        final P2pTransport t = e.getOrCreateP2pTransport(n);
        if (t != f.transports[0] && t != f.transports[1])
        {
            throw new AssertionError("getOrCreateP2pTransport made a second transport");
        }
    }

    // ---- streams ----------------------------------------------------------------------------

    /** put / putWithSignal / signal / redAdd / waitSignal with random everything. */
    void streamOp(final FuzzVerdict v)
    {
        final OpStream s = anyStream();
        final CommContext c = anyOpCtx();
        v.rdma |= c != null && c.rdma() != null;
        final int rank = anyRank();
        final long cap = c == null ? 0 : c.size();
        final boolean ctxOk = c != null && open(s, c) && rank >= 0 && rank < 2;
        final long sig = rnd.nextBoolean() ? anyLong(cap) : (anyLong(cap) & ~3L);
        final boolean sigOk = (sig & 3) == 0 && inRange(sig, 4, cap);
        switch (rnd.nextInt(5))
        {
            case 0:
            case 1:
            {
                final DeviceBuffer src = anyBuffer();
                final long dst = anyLong(cap);
                final long srcOff = anyLong(src == null ? 0 : src.size());
                final long bytes = rnd.nextBoolean() ? anyLong(cap) : 1 + rnd.nextInt(4096);
                // Over RDMA the source must be the window itself (it is what the NIC may read).
                final boolean putOk = ctxOk && open(src) && bytes > 0 && inRange(dst, bytes, cap)
                    && inRange(srcOff, bytes, src.size()) && (src == c.localBuffer() || !c.routesOverRdma(rank));
                if (rnd.nextBoolean())
                {
                    v.set(succeedIf(putOk), "put(rank " + rank + ", " + dst + ", " + srcOff + ", " + bytes + ")");
                    s.put(c, rank, dst, src, srcOff, bytes);
                }
                else
                {
                    v.set(succeedIf(putOk && sigOk), "putWithSignal(rank " + rank + ", " + dst + ", " + srcOff
                        + ", " + bytes + ", sig " + sig + ")");
                    s.putWithSignal(c, rank, dst, src, srcOff, bytes, sig, rnd.nextInt());
                }
                break;
            }
            case 2:
                v.set(succeedIf(ctxOk && sigOk), "signal(rank " + rank + ", " + sig + ")");
                s.signal(c, rank, sig, rnd.nextInt());
                break;
            case 3:
                v.set(succeedIf(ctxOk && sigOk), "redAdd(rank " + rank + ", " + sig + ")");
                s.redAdd(c, rank, sig, rnd.nextInt());
                break;
            default:
            {
                final Duration t = anyTimeout();
                // Long waits would only slow the batch down: valid timeouts are capped at 1 s.
                final Duration used = validTimeout(t) && t.compareTo(Duration.ofSeconds(1)) > 0 ? Duration.ofMillis(5) : t;
                v.set(succeedIf(c != null && open(s, c) && sigOk && validTimeout(used)),
                    "waitSignal(" + sig + ", " + used + ")");
                s.waitSignal(c, sig, rnd.nextInt(), used);
                break;
            }
        }
    }

    void sync(final FuzzVerdict v)
    {
        final OpStream s = anyStream();
        final Duration t = anyTimeout();
        v.set(validTimeout(t) && !s.isClosed() ? Expect.EITHER : Expect.FAIL, "synchronize(" + t + ")");
        s.synchronize(t);
    }

    void shape(final FuzzVerdict v)
    {
        final int b = new int[] {0, 1, -1, 65535, 65536, Integer.MAX_VALUE}[rnd.nextInt(6)];
        final int t = new int[] {0, 32, 33, 1024, 1056, -32}[rnd.nextInt(6)];
        v.set(succeedIf(b >= 0 && b <= 65535 && (t == 0 || (t % 32 == 0 && t > 0 && t <= 1024))),
            "launchShape(" + b + ", " + t + ")");
        anyStream().launchShape(b, t);
    }

    void ctxQuery(final FuzzVerdict v)
    {
        final CommContext picked = anyCtx();
        final CommContext c = picked == null ? f.contexts[r01()] : picked;
        final boolean ok = c != null && !c.isClosed();
        switch (rnd.nextInt(5))
        {
            case 0:
                v.set(succeedIf(ok), "verifyPeerAccess");
                c.verifyPeerAccess();
                break;
            case 1:
                v.set(succeedIf(ok), "allPeersAccessible");
                if (!c.allPeersAccessible())
                {
                    throw new AssertionError("fixture peers not accessible");
                }
                break;
            case 2:
                v.set(succeedIf(ok), "availableTablePtr");
                if (c.availableTablePtr() == 0)
                {
                    throw new AssertionError("null table");
                }
                break;
            case 3:
                v.set(succeedIf(ok), "peerPtrsTablePtr");
                if (c.peerPtrsTablePtr() == 0)
                {
                    throw new AssertionError("null table");
                }
                break;
            default:
            {
                final int r = anyRank();
                v.set(Expect.EITHER, "isActive(" + r + ")");
                if (c.isActive(r) != (r >= 0 && r < 2))
                {
                    throw new AssertionError("isActive(" + r + ") wrong");
                }
                break;
            }
        }
    }

    // ---- registration against te4j's lifetimes (issue 32) ------------------------------------

    /**
     * A transfer agent's raw registration of memory te4j knows: inside a live buffer (must
     * succeed), reaching past its end or into a buffer freed just before (must be refused), and
     * inside a buffer closed after the registration, followed by a batch READ into it (the submit
     * must be refused: the copy would land in freed memory). Random addresses must not crash.
     */
    void registration(final FuzzVerdict v)
    {
        final int r = r01();
        if (!open(f.engines[r], f.transports[r]))
        {
            v.set(Expect.FAIL, "createTransferAgent on a closed engine");
            f.engines[r].createTransferAgent(f.transports[r], "fuzz-closed");
            return;
        }
        final String name = "fuzz-reg-" + Long.toHexString(rnd.nextLong());
        final long[] lengths = {1, 8, 4096, 65536};
        final long len = lengths[rnd.nextInt(lengths.length)];
        try (TransferAgent agent = f.engines[r].createTransferAgent(f.transports[r], name))
        {
            switch (rnd.nextInt(5))
            {
                case 0:
                {
                    final DeviceBuffer b = anyBuffer();
                    if (b == null || b.isClosed())
                    {
                        final long a = b == null ? 0 : b.address();
                        v.set(a == 0 ? Expect.FAIL : Expect.EITHER, "registerLocalMemory(closed buffer's range)");
                        agent.registerLocalMemory(a, len);
                        return;
                    }
                    final long off = anyLong(b.size());
                    final long n = rnd.nextBoolean() ? len : anyLong(b.size());
                    final boolean inside = n > 0 && inRange(off, n, b.size());
                    // Sharing a byte with the buffer without lying inside it must fail; a range
                    // wholly beside it may lie in a neighbouring buffer, so either is correct.
                    final boolean touches = n > 0 && off < b.size() && (off >= 0 || n > -off);
                    v.set(inside ? succeedIf(true) : touches || n <= 0 ? Expect.FAIL : Expect.EITHER,
                        "registerLocalMemory(" + b + " + " + off + ", " + n + ")");
                    agent.registerLocalMemory(b.address() + off, n);
                    return;
                }
                case 1:
                {
                    final DeviceBuffer b = f.windows[r];
                    v.set(b.isClosed() ? Expect.EITHER : Expect.FAIL, "registerLocalMemory(straddling the end of " + b + ")");
                    agent.registerLocalMemory(b.address() + b.size() - 4096, 8192);
                    return;
                }
                case 2:
                {
                    final DeviceBuffer b = f.transports[r].allocateBuffer(65536);
                    b.close();
                    v.set(Expect.FAIL, "registerLocalMemory(a buffer closed before, +" + len + ")");
                    agent.registerLocalMemory(b.address() + (rnd.nextBoolean() ? 0 : 4096), len);
                    return;
                }
                case 3:
                    readIntoClosedBuffer(v, agent, r, name);
                    return;
                default:
                {
                    final long a = anyLong(1L << 47);
                    final long n = anyLong(1L << 20);
                    v.set(a <= 0 || n <= 0 ? Expect.FAIL : Expect.EITHER, "registerLocalMemory(0x" + Long.toHexString(a)
                        + ", " + n + ")");
                    agent.registerLocalMemory(a, n);
                }
            }
        }
    }

    /** The crash of issue 32: a raw range inside a buffer that is closed, then a batch READ into it. */
    private void readIntoClosedBuffer(final FuzzVerdict v, final TransferAgent agent, final int r, final String name)
    {
        final DeviceBuffer segment = f.transports[r].allocateBuffer(65536);
        final DeviceBuffer victim = f.transports[r].allocateBuffer(65536);
        try (io.github.te4j.exchange.InMemorySegmentDirectory dir =
                io.github.te4j.exchange.InMemorySegmentDirectory.open(name))
        {
            agent.registerLocalMemory(segment);
            agent.publishSegment(dir);
            final SegmentHandle own = agent.openSegment(name);
            final RegisteredMemory m = agent.registerLocalMemory(victim.address() + 4096, 32768);
            victim.close();
            try (TransferBatch b = agent.allocateBatch(1))
            {
                v.set(Expect.FAIL, "batch READ into a raw range of a buffer closed after its registration");
                b.submit(List.of(TransferRequest.read(m, 0, own, 0, 32768)), SYNC);
                b.await(SYNC);
            }
        }
        finally
        {
            segment.close();
            victim.close();
        }
    }

    // ---- close and use after close ----------------------------------------------------------

    /** Closes one object of the fixture, twice (the second close must do nothing). */
    void closeSome(final FuzzVerdict v)
    {
        final NativeResource r = pick(f.resources());
        v.set(Expect.SUCCEED, "close+close(" + r.name() + ")");
        r.close();
        r.close();
        if (!r.isClosed())
        {
            throw new AssertionError(r.name() + " not closed after close()");
        }
    }

    /** Enqueues work that touches a window, then frees what it touches before the stream ran it. */
    void closeWhileQueued(final FuzzVerdict v)
    {
        final int r = r01();
        final int peer = 1 - r;
        v.set(succeedIf(true), "enqueue then close");
        f.streams[r].waitSignal(f.contexts[r], 0, 1 + rnd.nextInt(1000), Duration.ofMillis(1 + rnd.nextInt(30)));
        f.streams[r].put(f.contexts[r], peer, 0, f.windows[r], 0, Math.min(f.size, 1 + rnd.nextInt(1 << 16)));
        f.streams[r].signal(f.contexts[r], peer, 0, 1);
        final NativeResource[] victims = {f.contexts[r], f.windows[r], f.windows[peer], f.transports[peer],
            f.contexts[peer], f.engines[peer], f.transports[r]};
        victims[rnd.nextInt(victims.length)].close();
    }

    /** CUDA-only entry points on a host engine. */
    void hostOnly(final FuzzVerdict v)
    {
        final TransferEngine e = f.engines[r01()];
        switch (rnd.nextInt(3))
        {
            case 0:
            {
                final long h = new long[] {0, 1, 2, 3, -1, rnd.nextLong()}[rnd.nextInt(6)];
                v.set(Expect.FAIL, "wrapStream(0x" + Long.toHexString(h) + ") on host");
                e.wrapStream(h);
                break;
            }
            case 1:
                v.set(Expect.FAIL, "beginCapture on host");
                anyStream().beginCapture();
                break;
            default:
                v.set(Expect.FAIL, "endCapture on host");
                anyStream().endCapture();
                break;
        }
    }

    // ---- transfer batches: extreme timeouts, closes in any order from any thread -------------

    private static final String[] BATCH_OBJECTS = {"batch", "segment", "agent", "transport", "engine"};

    /**
     * Rank 0's agent opens rank 1's segment and submits a batch with a timeout of any class; then
     * the batch (polled or not), its segment, agent, transport and engine close in a random order,
     * on this thread, on another, or inside the batch's completion callback. Every close must
     * return (bounded here: a hang is a violation, with the stacks of every thread).
     */
    void batchLifecycle(final FuzzVerdict v)
    {
        final String tag = "fz" + Long.toHexString(rnd.nextLong() & Long.MAX_VALUE);
        final TransferAgent a0 = f.engines[0].createTransferAgent(f.transports[0], tag + "a");
        final TransferAgent a1 = f.engines[1].createTransferAgent(f.transports[1], tag + "b");
        try (io.github.te4j.exchange.InMemorySegmentDirectory d0 = io.github.te4j.exchange.InMemorySegmentDirectory.open(tag);
             io.github.te4j.exchange.InMemorySegmentDirectory d1 = io.github.te4j.exchange.InMemorySegmentDirectory.open(tag))
        {
            final RegisteredMemory local = a0.registerLocalMemory(f.windows[0]);
            a1.registerLocalMemory(f.windows[1]);
            a0.publishSegment(d0);
            a1.publishSegment(d1);
            final SegmentHandle seg = a0.openSegment(tag + "b", d0, SYNC);
            final TransferBatch b = a0.allocateBatch(4);
            final Duration t = anyTimeout();
            final int n = 1 + rnd.nextInt(4);
            final List<TransferRequest> rs = new ArrayList<>();
            for (int i = 0; i < n; i++)
            {
                rs.add(TransferRequest.write(local, 0, seg, 4, Math.min(64, f.size - 4)));
            }
            v.set(succeedIf(t != null && !t.isNegative()), "batch submit(" + n + ", " + t + ")");
            try
            {
                b.submit(rs, t);
            }
            catch (final IllegalArgumentException e)
            {
                if (t != null && !t.isNegative())
                {
                    throw e;
                }
            }
            if (rnd.nextBoolean())
            {
                b.isDone();  // polled once, or never
            }
            final NativeResource[] objects = {b, seg, a0, f.transports[0], f.engines[0]};
            final List<Integer> order = new ArrayList<>(List.of(0, 1, 2, 3, 4));
            java.util.Collections.shuffle(order, rnd);
            final int closes = 1 + rnd.nextInt(order.size());
            final Runnable closeSome = () ->
            {
                for (int i = 0; i < closes; i++)
                {
                    objects[order.get(i)].close();
                }
            };
            final int how = rnd.nextInt(3);
            final StringBuilder what = new StringBuilder();
            for (int i = 0; i < closes; i++)
            {
                what.append(i == 0 ? "" : ",").append(BATCH_OBJECTS[order.get(i)]);
            }
            v.set(racing ? Expect.EITHER : Expect.SUCCEED, "batch submit(" + n + ", " + t + ") then close " + what
                + (how == 0 ? " here" : how == 1 ? " on another thread" : " in the completion callback"));
            if (how == 0)
            {
                closeSome.run();
            }
            else
            {
                final java.util.concurrent.CompletableFuture<Void> done = how == 1
                    ? java.util.concurrent.CompletableFuture.runAsync(closeSome) : b.future().handle((x, e) -> null)
                        .thenRun(closeSome);
                try
                {
                    done.get(30, java.util.concurrent.TimeUnit.SECONDS);
                }
                catch (final java.util.concurrent.TimeoutException e)
                {
                    throw new AssertionError("closing " + what + " did not return in 30 s");
                }
                catch (final InterruptedException | java.util.concurrent.ExecutionException e)
                {
                    throw new AssertionError("closing " + what + " failed: " + e, e);
                }
            }
        }
        finally
        {
            a1.close();
            a0.close();
        }
    }

    // ---- correct results --------------------------------------------------------------------

    /** A valid put and signal between the two ranks; checks the bytes and the word that arrive. */
    void validTransfer(final FuzzVerdict v)
    {
        final int r = r01();
        final int peer = 1 - r;
        drain(f.streams[0]);
        drain(f.streams[1]);
        final int len = 1 + rnd.nextInt((int)Math.min(f.size - 4, 1 << 16));
        final long dst = 4 + (long)(rnd.nextDouble() * (f.size - 4 - len));
        final long src = (long)(rnd.nextDouble() * (f.size - len));
        final byte[] data = new byte[len];
        rnd.nextBytes(data);
        v.set(Expect.SUCCEED, "valid put+signal of " + len + " B to rank " + peer);
        f.windows[r].write(src, data);
        final int before = word(f.windows[peer]);
        final int add = rnd.nextInt();
        f.streams[r].put(f.contexts[r], peer, dst, f.windows[r], src, len);
        f.streams[r].signal(f.contexts[r], peer, 0, add);
        f.streams[r].synchronize(SYNC);
        if (!Arrays.equals(f.windows[peer].read(dst, len), data))
        {
            throw new AssertionError("put delivered wrong bytes");
        }
        if (word(f.windows[peer]) != before + add)
        {
            throw new AssertionError("signal added the wrong amount");
        }
    }

    private static int word(final DeviceBuffer b)
    {
        final byte[] w = b.read(0, 4);
        return (w[0] & 0xff) | (w[1] & 0xff) << 8 | (w[2] & 0xff) << 16 | (w[3] & 0xff) << 24;
    }

    /** Waits for what earlier calls left queued; their errors are expected and dropped. */
    static void drain(final OpStream s)
    {
        for (int i = 0; i < 2; i++)
        {
            try
            {
                s.synchronize(SYNC);
                return;
            }
            catch (final Te4jException e)
            {
                // an earlier fuzz call's failed wait: reported once, then the stream is clean
            }
        }
    }
}
