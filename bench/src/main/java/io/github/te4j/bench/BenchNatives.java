package io.github.te4j.bench;

import io.github.te4j.CommContext;
import io.github.te4j.OpStream;
import io.github.te4j.Platform;
import io.github.te4j.Te4jException;
import io.github.te4j.internal.NativeApi;
import io.github.te4j.bench.internal.NativeBench;
import java.time.Duration;
import java.util.function.Supplier;
import org.bytedeco.javacpp.LongPointer;
import org.bytedeco.javacpp.Pointer;

/**
 * The native objects of one rank's run ({@code te4j/bench_api.h}), made for one window and one
 * stream, with every status turned into a {@link Te4jException} that carries the native message.
 * Closed before the stream and the window they use.
 */
final class BenchNatives implements AutoCloseable
{
    private final Platform platform;
    private final int device;
    private final long peerTable;
    private final long timeoutNs;
    private final NativeBench.StreamTimer timer;
    private final NativeBench.CopyBaseline copy;
    private final NativeBench.PingPong pingPong;
    private final NativeBench.LaunchLoop launchLoop;
    private final long peerBase;
    private final long[] out = new long[1];
    /** The stop mark comes after synchronize: host streams, and ops that only post on the device (RDMA). */
    private final boolean syncBeforeStop;
    /** The raw-TCP baseline, made at its first use (RDMA runs only). */
    private NativeBench.TcpBaseline tcp;

    /**
     * @param ctx      the window (its peer tables are read here)
     * @param stream   the stream te4j's Java-launched ops use: the timer and the copy baselines run on it
     * @param partner  the rank measured against, or -1 for a rank that only joins
     * @param overRdma whether the timed ops go over RDMA: a CUDA kernel then only posts them, and
     *                 they are delivered by the quiet at synchronize, which the timing must include
     */
    BenchNatives(final Platform platform, final int device, final CommContext ctx, final OpStream stream,
        final int partner, final long timeoutNs, final boolean overRdma)
    {
        this.platform = platform;
        this.syncBeforeStop = platform == Platform.HOST || overRdma;
        this.device = device;
        this.peerTable = ctx.peerPtrsTablePtr();
        this.timeoutNs = timeoutNs;
        final int p = platform.nativeId();
        final long base = ctx.localBuffer().address();
        NativeBench.StreamTimer t = null;
        NativeBench.CopyBaseline c = null;
        NativeBench.PingPong pp = null;
        NativeBench.LaunchLoop ll = null;
        long pb = 0;
        try
        {
            t = checked(NativeBench.StreamTimer.create(p, device, stream.nativeHandle()), "StreamTimer.create");
            c = checked(NativeBench.CopyBaseline.create(p, device, stream.nativeHandle()), "CopyBaseline.create");
            if (partner >= 0)
            {
                pb = readPeerBase(platform, device, ctx.peerPtrsTablePtr(), partner);
                pp = checked(NativeBench.PingPong.create(p, device, base, ctx.availableTablePtr(), ctx.peerPtrsTablePtr(),
                    ctx.rank(), partner, base + WindowLayout.PING_PONG_SIGNAL, base + WindowLayout.RAW_FLAG,
                    pb + WindowLayout.RAW_FLAG, base + WindowLayout.READY), "PingPong.create");
                ll = checked(NativeBench.LaunchLoop.create(p, device, base, ctx.availableTablePtr(),
                    ctx.peerPtrsTablePtr(), ctx.rank()), "LaunchLoop.create");
            }
        }
        catch (final RuntimeException e)
        {
            destroy(t);
            destroy(c);
            destroy(pp);
            destroy(ll);
            throw e;
        }
        this.timer = t;
        this.copy = c;
        this.pingPong = pp;
        this.launchLoop = ll;
        this.peerBase = pb;
    }

    /** The partner's window base as mapped in this process (entry of the peer table). */
    private static long readPeerBase(final Platform platform, final int device, final long table, final int partner)
    {
        try (LongPointer host = new LongPointer(1))
        {
            final int rc = NativeApi.copyMemory(platform.nativeId(), device, host.address(), table + 8L * partner, 8);
            if (rc != 0)
            {
                throw new Te4jException(Te4jException.Code.of(rc), "reading the peer table failed: "
                    + NativeApi.lastThreadError());
            }
            final long v = host.get(0);
            if (v == 0)
            {
                throw new Te4jException(Te4jException.Code.ILLEGAL_STATE, "rank " + partner
                    + " is not mapped in this window (peer table entry is null)");
            }
            return v;
        }
    }

    /** The partner's window base as mapped here. */
    long peerBase()
    {
        return peerBase;
    }

    /** Rank {@code r}'s window base as mapped here (P2P only: null entries fail). */
    long peerBaseOf(final int r)
    {
        return readPeerBase(platform, device, peerTable, r);
    }

    /**
     * Times the ops {@code enqueue} puts on {@code stream}. CUDA: events on the stream around
     * them; host: the clock, stopped once the executor thread has finished (synchronize first).
     * Returns nanoseconds; the stream is idle afterwards.
     */
    long timeStreamOps(final OpStream stream, final Duration timeout, final Runnable enqueue)
    {
        timerStart();
        enqueue.run();
        if (syncBeforeStop)
        {
            stream.synchronize(timeout);
        }
        timerStop();
        stream.synchronize(timeout);
        return timerElapsedNs();
    }

    void timerStart()
    {
        check(timer.start(), "StreamTimer.start", timer::lastError);
    }

    void timerStop()
    {
        check(timer.stop(), "StreamTimer.stop", timer::lastError);
    }

    /** Time between the marks; call after the stream has been synchronized. */
    long timerElapsedNs()
    {
        check(timer.elapsedNs(timeoutNs, out), "StreamTimer.elapsedNs", timer::lastError);
        return out[0];
    }

    /** Sets the process's tuning knobs for the next case ("" = te4j's defaults). */
    void applyTuning(final String spec)
    {
        if (NativeBench.applyTuning(spec) != 0)
        {
            throw new Te4jException(Te4jException.Code.INVALID_ARGUMENT, "variant '" + spec + "': "
                + NativeBench.tuningText());
        }
    }

    long copyEngine(final long dst, final long src, final long bytes, final int count)
    {
        check(copy.copyEngine(dst, src, bytes, count, timeoutNs, out),
            platform == Platform.CUDA ? "cudaMemcpyPeerAsync baseline" : "memcpy baseline", copy::lastError);
        return out[0];
    }

    long smCopy(final long dst, final long src, final long bytes, final int blocks, final int threads, final int count)
    {
        check(copy.smCopy(dst, src, bytes, blocks, threads, count, timeoutNs, out), "SM copy baseline", copy::lastError);
        return out[0];
    }

    long te4jPingPong(final boolean initiator, final long dst, final long src, final long bytes, final int iters)
    {
        check(pingPong.te4j(initiator, dst, src, bytes, iters, timeoutNs, out), "te4j ping-pong", pingPong::lastError);
        return out[0];
    }

    long llPingPong(final boolean initiator, final long slot, final long dst, final long src, final long bytes,
        final int iters)
    {
        check(pingPong.te4jLl(initiator, slot, dst, src, bytes, iters, timeoutNs, out), "LL ping-pong",
            pingPong::lastError);
        return out[0];
    }

    long rawFlagPingPong(final boolean initiator, final int iters)
    {
        check(pingPong.rawFlag(initiator, iters, timeoutNs, out), "raw flag ping-pong", pingPong::lastError);
        return out[0];
    }

    long cppPutWithSignalLoop(final int dstRank, final long recv, final long send, final long bytes, final long sig,
        final int blocks, final int threads, final int count)
    {
        check(launchLoop.putWithSignal(dstRank, recv, send, bytes, sig, blocks, threads, count, timeoutNs, out),
            "C++ putWithSignal loop", launchLoop::lastError);
        return out[0];
    }

    /** Rank 1 of the TCP baseline: listens on ipv4, returns the port. */
    int tcpListen(final String ipv4)
    {
        final int port = tcp().listen(ipv4);
        check(port < 0 ? port : 0, "TCP baseline listen", tcp::lastError);
        return port;
    }

    void tcpConnect(final String ipv4, final int port)
    {
        check(tcp().connect(ipv4, port, timeoutNs), "TCP baseline connect", tcp::lastError);
    }

    void tcpAccept()
    {
        check(tcp().accept(timeoutNs), "TCP baseline accept", tcp::lastError);
    }

    long tcpPingPong(final boolean initiator, final long bytes, final int iters)
    {
        check(tcp().pingPong(initiator, bytes, iters, timeoutNs, out), "TCP ping-pong", tcp::lastError);
        return out[0];
    }

    long tcpOneWay(final boolean sender, final long bytes, final int count)
    {
        check(tcp().oneWay(sender, bytes, count, timeoutNs, out), "TCP one-way", tcp::lastError);
        return out[0];
    }

    private NativeBench.TcpBaseline tcp()
    {
        if (tcp == null)
        {
            final NativeBench.TcpBaseline made = NativeBench.TcpBaseline.create();
            if (made == null || made.isNull())
            {
                throw new Te4jException(Te4jException.Code.OUT_OF_MEMORY, "TcpBaseline.create returned null");
            }
            tcp = made;
        }
        return tcp;
    }

    @Override
    public void close()
    {
        destroy(tcp);
        destroy(launchLoop);
        destroy(pingPong);
        destroy(copy);
        destroy(timer);
    }

    private static void check(final int status, final String what, final Supplier<String> message)
    {
        if (status != 0)
        {
            throw new Te4jException(Te4jException.Code.of(status), what + " failed: " + message.get());
        }
    }

    /** Throws (after deleting it) when a made object reports a bad status. */
    private static <T extends Pointer> T checked(final T made, final String what)
    {
        if (made == null || made.isNull())
        {
            throw new Te4jException(Te4jException.Code.OUT_OF_MEMORY, what + " returned null");
        }
        final int status;
        final String message;
        if (made instanceof NativeBench.StreamTimer)
        {
            status = ((NativeBench.StreamTimer)made).status();
            message = ((NativeBench.StreamTimer)made).lastError();
        }
        else if (made instanceof NativeBench.CopyBaseline)
        {
            status = ((NativeBench.CopyBaseline)made).status();
            message = ((NativeBench.CopyBaseline)made).lastError();
        }
        else if (made instanceof NativeBench.PingPong)
        {
            status = ((NativeBench.PingPong)made).status();
            message = ((NativeBench.PingPong)made).lastError();
        }
        else
        {
            status = ((NativeBench.LaunchLoop)made).status();
            message = ((NativeBench.LaunchLoop)made).lastError();
        }
        if (status != 0)
        {
            NativeApi.destroyObject(made);
            throw new Te4jException(Te4jException.Code.of(status), what + " failed: " + message);
        }
        return made;
    }

    private static void destroy(final Pointer p)
    {
        if (p != null && !p.isNull())
        {
            NativeApi.destroyObject(p);
        }
    }
}
