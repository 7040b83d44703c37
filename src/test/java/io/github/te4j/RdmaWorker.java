package io.github.te4j;

import io.github.te4j.check.Patterns;
import io.github.te4j.exchange.HandleExchange;
import io.github.te4j.rendezvous.Rendezvous;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * One rank of the RDMA tests, run as a child JVM by {@link RdmaMultiProcessTest} (and by
 * scripts/gpu-tests.sh on the GPU host). P2P is disabled for every pair (only the own rank is
 * mapped), so every operation to another rank goes over the RDMA transport named by {@code nic}.
 * Arguments are key=value: rank, world, port, host (rendezvous address), bind (rank 0's listen
 * address), nic (device filter), platform (host|cuda), device, sizes (comma list), rounds, ring,
 * writers (threads), writes, errors (true|false), session, backend (soft|mlx5: the backend the
 * transport must report once initialized; unchecked when absent).
 * Prints "OK ..." lines and exits 0 when every check held; "SKIP reason" + exit 3 when the
 * backend is unavailable here; anything else exits non-zero.
 *
 * <p>Window layout: world receive slots, one send slot, one signal word per source rank, the
 * many-writer counter, the ordering area (ORDER_SLICES x 4 KiB + its signal word), spare signals,
 * the pipelined phase's signal word, source and destination.
 */
public final class RdmaWorker
{
    static final int ORDER_SLICES = 64;
    static final int SLICE = 4096;
    /** The pipelined phase: puts of 1 .. PIPE_MAX_PUT bytes, enqueued without synchronizing. */
    private static final int PIPE_PUTS = 2000;
    private static final int PIPE_MAX_PUT = 4096;
    private static final int PIPE_SIGNAL_EVERY = 100;
    private static final long PIPE_AREA = (long)PIPE_PUTS * PIPE_MAX_PUT + 4096;
    static final int EXIT_SKIP = 3;
    /** The transport whose state a failed check prints (set once connected). */
    private static volatile RdmaTransport diagnosticsOf;

    private RdmaWorker()
    {
    }

    public static void main(final String[] argv) throws Exception
    {
        final WorkerArgs a = WorkerArgs.parse(argv);
        final int rank = a.rank;
        final int world = a.world;
        final int port = a.port;
        final String host = a.get("host", "127.0.0.1");
        final String bind = a.get("bind", host);
        final String nic = a.get("nic", "soft");
        final Platform platform = a.platform();
        final int device = a.device();
        final long[] sizes = a.sizes("1,4096,1048576");
        final int rounds = a.getInt("rounds", 1);
        final int ring = a.getInt("ring", 16);
        final int writers = a.getInt("writers", 4);
        final int writes = a.getInt("writes", 300);
        final boolean errors = a.getBoolean("errors", true) && world == 2;
        // connect() again over QPs that carried traffic (no recreate): the NIC restarts them at
        // WQE 0 / PSN 0, and a put+signal round after it must neither replay old work requests
        // nor take old completions for new ones.
        final boolean reconnectTwice = a.getBoolean("reconnectTwice", false);
        final long session = a.getLong("session", 4242);
        final Duration timeout = a.timeout(60);

        long slot = (long)ORDER_SLICES * SLICE;
        for (final long s : sizes)
        {
            slot = Math.max(slot, (s + 64 + 63) & ~63L);
        }
        final long sendOff = slot * world;
        final long sigBase = sendOff + slot;
        final long counter = sigBase + 4L * world;
        final long orderBase = (counter + 64 + 4095) & ~4095L;
        final long orderSig = orderBase + (long)ORDER_SLICES * SLICE;
        final long spareSig = orderSig + 64;
        final long pipeSig = spareSig + 64;
        final long pipeSrc = (pipeSig + 64 + 4095) & ~4095L;
        final long pipeDst = pipeSrc + PIPE_AREA;
        final long windowBytes = pipeDst + PIPE_AREA;

        try (HandleExchange ex = Rendezvous.builder().rank(rank).worldSize(world).endpoint(host, port)
                .bindAddress(bind).connectTimeout(timeout).defaultTimeout(timeout).build();
            TransferEngine engine = a.engine())
        {
            final P2pTransport p2p = engine.getOrCreateP2pTransport(world);
            final DeviceBuffer window = p2p.allocateBuffer(windowBytes);
            // Only the own rank over P2P: every other rank is RDMA-only, even on one host.
            final CommContext ctx = p2p.connect(window, ex, timeout, 1L << rank);
            final RdmaTransport rdma;
            try
            {
                rdma = engine.getOrCreateRdmaTransport(nic);
                rdma.initialize(world, 2, ring);
            }
            catch (final UnavailableException e)
            {
                System.out.println("SKIP " + e.getMessage());
                ex.barrier(timeout);
                System.exit(EXIT_SKIP);
                return;
            }
            final String backend = a.get("backend");
            check(backend == null || backend.equals(rdma.backend()),
                "transport '" + nic + "' runs backend " + rdma.backend() + ", expected " + backend);
            rdma.register(window);
            rdma.connect(ex, timeout);
            diagnosticsOf = rdma;
            ctx.withRdma(rdma);
            for (int r = 0; r < world; r++)
            {
                check(r == rank || ctx.routesOverRdma(r), "rank " + r + " is not routed over RDMA");
            }
            final OpStream stream = engine.createStream();
            System.out.println("OK connected rank " + rank + "/" + world + " over " + rdma.backend() + " '" + nic
                + "' on " + platform + ":" + device + " window " + windowBytes + " B, ring " + ring);

            try
            {
                dataPhase(rank, world, sizes, rounds, session, slot, sendOff, sigBase, window, ctx, stream, ex, timeout);
                manyWriters(engine, rank, world, writers, writes, counter, window, ctx, ex, timeout);
                if (world >= 2)
                {
                    ordering(rank, session, sendOff, orderBase, orderSig, window, ctx, stream, ex, timeout);
                    pipelined(rank, session, pipeSrc, pipeDst, pipeSig, window, ctx, stream, ex, timeout);
                }
            }
            catch (final RuntimeException | InterruptedException e)
            {
                printDiagnostics(rdma, e);
                throw e;
            }
            final RdmaQpState qp0 = rdma.qpState(((rank + 1) % world) * rdma.qpsPerRank());
            check(world == 1 || qp0.posted() > 4L * ring, "ring of " + ring + " WQEBBs did not wrap: " + qp0);
            check(!qp0.inError(), "QP in error after the good phases: " + qp0);
            System.out.println("OK ring wraparound: " + qp0.posted() + " WQEBBs through a ring of " + ring);
            if (reconnectTwice)
            {
                connectAgain(rank, world, sizes, session, slot, sendOff, sigBase, window, ctx, rdma, stream, ex,
                    timeout);
            }
            if (errors)
            {
                errorPhase(rank, session, sendOff, spareSig, window, ctx, rdma, stream, ex, timeout);
            }
            final String diag = rdma.diagnostics();
            check(!diag.contains("mismatch"), "the NIC saw doorbell contract violations: " + diag);
            System.out.println("OK statistics " + rdma.statistics());
            // Nobody frees its window while a peer may still write into it.
            ex.barrier(timeout);
        }
        System.out.println("OK rank " + rank + " done");
    }

    // Put+signal of random data to every other rank, sizes 1 B .. 64 MiB, poisoned destinations.
    private static void dataPhase(final int rank, final int world, final long[] sizes, final int rounds,
        final long session, final long slot, final long sendOff, final long sigBase, final DeviceBuffer window,
        final CommContext ctx, final OpStream stream, final HandleExchange ex, final Duration timeout)
    {
        int round = 0;
        for (final long size : sizes)
        {
            for (int r = 0; r < rounds; r++, round++)
            {
                window.fill(0, sendOff, Patterns.POISON);
                ex.barrier(timeout);
                for (int dst = 0; dst < world; dst++)
                {
                    if (dst == rank)
                    {
                        continue;
                    }
                    Patterns.write(window, sendOff, size, Patterns.seed(session, rank, dst, round));
                    stream.putWithSignal(ctx, dst, slot * rank, window, sendOff, size, sigBase + 4L * rank, 1);
                    // The send slot is rewritten for the next peer only after this put completed.
                    stream.synchronize(timeout);
                }
                for (int src = 0; src < world; src++)
                {
                    if (src != rank)
                    {
                        stream.waitSignal(ctx, sigBase + 4L * src, round + 1, timeout);
                    }
                }
                stream.synchronize(timeout);
                for (int src = 0; src < world; src++)
                {
                    if (src == rank)
                    {
                        continue;
                    }
                    final String bad = Patterns.verify(window, slot * src, size, Patterns.seed(session, src, rank, round));
                    check(bad == null, "data from rank " + src + " size " + size + " round " + round + ": " + bad);
                    final String over = Patterns.verifyPoison(window, slot * src + size, 64);
                    check(over == null, "size " + size + " from rank " + src + ": " + over);
                }
                ex.barrier(timeout);
            }
            System.out.println("OK put+signal size " + size + " x" + rounds + " from " + (world - 1) + " peers");
        }
    }

    // The second connect over used QPs, then one put+signal round per size on the restarted
    // QPs; the signal words start from 0 again so that each wait needs the new round's add.
    private static void connectAgain(final int rank, final int world, final long[] sizes, final long session,
        final long slot, final long sendOff, final long sigBase, final DeviceBuffer window, final CommContext ctx,
        final RdmaTransport rdma, final OpStream stream, final HandleExchange ex, final Duration timeout)
    {
        ex.barrier(timeout);
        window.fill(sigBase, 4L * world, (byte)0);
        rdma.connect(ex, timeout);
        final RdmaQpState qp0 = rdma.qpState(((rank + 1) % world) * rdma.qpsPerRank());
        check(world == 1 || qp0.posted() <= 1, "QP counters did not restart with the QP: " + qp0);
        System.out.println("OK connected again over QPs that carried traffic: " + qp0);
        dataPhase(rank, world, sizes, 1, session + 1, slot, sendOff, sigBase, window, ctx, stream, ex, timeout);
        check(!rdma.qpState(((rank + 1) % world) * rdma.qpsPerRank()).inError(), "QP in error after the reconnect");
    }

    // Every rank adds from `writers` threads (one stream each) to every rank's counter.
    private static void manyWriters(final TransferEngine engine, final int rank, final int world, final int writers,
        final int writes, final long counter, final DeviceBuffer window, final CommContext ctx,
        final HandleExchange ex, final Duration timeout) throws InterruptedException
    {
        ex.barrier(timeout);
        final int value = rank + 1;
        final List<Thread> threads = new ArrayList<>();
        final List<Throwable> failures = java.util.Collections.synchronizedList(new ArrayList<>());
        for (int t = 0; t < writers; t++)
        {
            final Thread th = new Thread(() ->
            {
                try (OpStream s = engine.createStream())
                {
                    for (int i = 0; i < writes; i++)
                    {
                        for (int dst = 0; dst < world; dst++)
                        {
                            s.redAdd(ctx, dst, counter, value);
                        }
                    }
                    s.synchronize(timeout);
                }
                catch (final Throwable e)
                {
                    failures.add(e);
                }
            }, "writer-" + t);
            threads.add(th);
            th.start();
        }
        for (final Thread th : threads)
        {
            th.join(timeout.toMillis());
        }
        check(failures.isEmpty(), "writer failed: " + failures);
        final int expected = writers * writes * world * (world + 1) / 2;
        try (OpStream s = engine.createStream())
        {
            s.waitSignal(ctx, counter, expected, timeout);
            s.synchronize(timeout);
        }
        ex.barrier(timeout);
        final int total = readInt(window, counter);
        check(total == expected, "many-writer total " + total + " != " + expected);
        System.out.println("OK many-writer total " + total + " (" + world + " ranks x " + writers + " threads x "
            + writes + " adds)");
    }

    // Rank 0 puts ORDER_SLICES slices to rank 1, each followed by a signal on the same QP; rank 1
    // checks, every time it sees the signal move, that every slice before it is complete.
    private static void ordering(final int rank, final long session, final long sendOff, final long orderBase,
        final long orderSig, final DeviceBuffer window, final CommContext ctx, final OpStream stream,
        final HandleExchange ex, final Duration timeout) throws InterruptedException
    {
        if (rank == 0)
        {
            for (int i = 0; i < ORDER_SLICES; i++)
            {
                Patterns.write(window, sendOff + (long)i * SLICE, SLICE, Patterns.seed(session, 99, i, 7));
            }
        }
        ex.barrier(timeout);
        if (rank == 0)
        {
            for (int i = 0; i < ORDER_SLICES; i++)
            {
                if (i % 2 == 0)
                {
                    stream.put(ctx, 1, orderBase + (long)i * SLICE, window, sendOff + (long)i * SLICE, SLICE);
                    stream.signal(ctx, 1, orderSig, 1);
                }
                else
                {
                    stream.putWithSignal(ctx, 1, orderBase + (long)i * SLICE, window, sendOff + (long)i * SLICE, SLICE,
                        orderSig, 1);
                }
            }
            stream.synchronize(timeout);
        }
        else if (rank == 1)
        {
            final long end = System.nanoTime() + timeout.toNanos();
            int checked = 0;
            while (checked < ORDER_SLICES)
            {
                final int seen = readInt(window, orderSig);
                check(seen >= 0 && seen <= ORDER_SLICES, "ordering signal out of range: " + seen);
                for (; checked < seen; checked++)
                {
                    final String bad = Patterns.verify(window, orderBase + (long)checked * SLICE, SLICE,
                        Patterns.seed(session, 99, checked, 7));
                    check(bad == null, "slice " + checked + " not complete when the signal read " + seen + ": " + bad);
                }
                check(System.nanoTime() < end, "ordering: signal stuck at " + seen);
                Thread.onSpinWait();
            }
            System.out.println("OK ordering: " + ORDER_SLICES + " signals, each after its data");
        }
        ex.barrier(timeout);
    }

    // Rank 0 enqueues PIPE_PUTS puts of random sizes to rank 1 without synchronizing, a signal
    // after every PIPE_SIGNAL_EVERY of them, then synchronizes once: the stream keeps posting
    // while earlier requests are in flight (and the ring fills). Rank 1 waits for the last
    // signal and checks every byte, and that no byte past the last put was written.
    private static void pipelined(final int rank, final long session, final long src, final long dst, final long sig,
        final DeviceBuffer window, final CommContext ctx, final OpStream stream, final HandleExchange ex,
        final Duration timeout)
    {
        final java.util.Random random = new java.util.Random(session);
        final long[] at = new long[PIPE_PUTS];
        final long[] len = new long[PIPE_PUTS];
        long end = 0;
        for (int i = 0; i < PIPE_PUTS; i++)
        {
            len[i] = 1 + random.nextInt(PIPE_MAX_PUT);
            at[i] = end;
            end += len[i];
        }
        final long seed = Patterns.seed(session, 77, 1, 0);
        if (rank == 0)
        {
            Patterns.write(window, src, end, seed);
        }
        else if (rank == 1)
        {
            window.fill(dst, end + 64, Patterns.POISON);
        }
        ex.barrier(timeout);
        if (rank == 0)
        {
            final long t0 = System.nanoTime();
            for (int i = 0; i < PIPE_PUTS; i++)
            {
                if ((i + 1) % PIPE_SIGNAL_EVERY == 0)
                {
                    stream.putWithSignal(ctx, 1, dst + at[i], window, src + at[i], len[i], sig, 1);
                }
                else
                {
                    stream.put(ctx, 1, dst + at[i], window, src + at[i], len[i]);
                }
            }
            stream.synchronize(timeout);
            System.out.println("OK pipelined: " + PIPE_PUTS + " puts (" + end + " B, random sizes) in "
                + (System.nanoTime() - t0) / 1000000 + " ms, one synchronize");
        }
        else if (rank == 1)
        {
            stream.waitSignal(ctx, sig, PIPE_PUTS / PIPE_SIGNAL_EVERY, timeout);
            stream.synchronize(timeout);
            check(readInt(window, sig) == PIPE_PUTS / PIPE_SIGNAL_EVERY, "pipelined signal count " + readInt(window, sig));
            final String bad = Patterns.verify(window, dst, end, seed);
            check(bad == null, "pipelined puts: " + bad);
            final String over = Patterns.verifyPoison(window, dst + end, 64);
            check(over == null, "pipelined puts wrote past the last one: " + over);
            System.out.println("OK pipelined: " + PIPE_PUTS + " random-size puts verified byte for byte");
        }
        ex.barrier(timeout);
    }

    // Error CQEs: a bad key (the peer deregistered), an address outside the peer's registration,
    // the error state (flush) after them, and recovery through reconnect.
    private static void errorPhase(final int rank, final long session, final long sendOff, final long spareSig,
        final DeviceBuffer window, final CommContext ctx, final RdmaTransport rdma, final OpStream stream,
        final HandleExchange ex, final Duration timeout)
    {
        final int qp = (1 - rank) * rdma.qpsPerRank();
        ex.barrier(timeout);
        if (rank == 1)
        {
            rdma.deregister(window);
        }
        ex.barrier(timeout);
        if (rank == 0)
        {
            stream.put(ctx, 1, 0, window, sendOff, 4096);
            expectRemoteError(stream, timeout, "0x13", "bad key");
            stream.signal(ctx, 1, spareSig, 1);
            expectRemoteError(stream, timeout, "error state", "after an error");
            final RdmaQpState st = rdma.qpState(qp);
            check(st.inError() && st.syndrome() == 0x13 && st.cqeOpcode() == 0xd, "QP state after a bad key: " + st);
            System.out.println("OK QP state " + st);
        }
        ex.barrier(timeout);
        if (rank == 1)
        {
            rdma.register(window.address(), 4096);
        }
        rdma.reconnect(ex, timeout);
        if (rank == 0)
        {
            stream.put(ctx, 1, 8192, window, sendOff, 64);
            expectRemoteError(stream, timeout, "0x13", "out-of-range address");
        }
        ex.barrier(timeout);
        if (rank == 1)
        {
            rdma.deregister(window);
            rdma.register(window);
        }
        rdma.reconnect(ex, timeout);
        check(!rdma.qpState(qp).inError(), "QP still in error after reconnect: " + rdma.qpState(qp));
        if (rank == 0)
        {
            Patterns.write(window, sendOff, 4096, Patterns.seed(session, 0, 1, 1000));
            stream.putWithSignal(ctx, 1, 0, window, sendOff, 4096, spareSig, 1);
            stream.synchronize(timeout);
        }
        else
        {
            stream.waitSignal(ctx, spareSig, 1, timeout);
            stream.synchronize(timeout);
            final String bad = Patterns.verify(window, 0, 4096, Patterns.seed(session, 0, 1, 1000));
            check(bad == null, "put after recovery: " + bad);
            System.out.println("OK recovered: put+signal after recreateQueuePairs + reconnect");
        }
        ex.barrier(timeout);
    }

    // What one failed run needs to tell where the RDMA path stopped: every QP's ring counters and
    // error record (device side), and the NIC's counters and contract diagnostics (host side).
    static void printDiagnostics(final RdmaTransport rdma, final Throwable cause)
    {
        System.out.println("DIAG failure: " + cause);
        try
        {
            System.out.println("DIAG NIC statistics " + rdma.statistics());
            for (int q = 0; q < rdma.numRanks() * rdma.qpsPerRank(); q++)
            {
                System.out.println("DIAG QP " + q + " (to rank " + q / rdma.qpsPerRank() + ", channel "
                    + q % rdma.qpsPerRank() + "): " + rdma.qpState(q));
            }
            final String d = rdma.diagnostics();
            System.out.println("DIAG NIC diagnostics: " + (d.isEmpty() ? "(none)" : d));
        }
        catch (final RuntimeException e)
        {
            System.out.println("DIAG unavailable: " + e);
        }
        System.out.flush();
    }

    private static void expectRemoteError(final OpStream stream, final Duration timeout, final String needle,
        final String what)
    {
        try
        {
            stream.synchronize(timeout);
            check(false, what + ": no error reported");
        }
        catch (final Te4jException e)
        {
            check(e.code() == Te4jException.Code.REMOTE_ERROR && e.getMessage().contains(needle),
                what + ": unexpected " + e.code() + ": " + e.getMessage());
            System.out.println("OK error CQE (" + what + ") raised: " + e.getMessage());
        }
    }

    static int readInt(final DeviceBuffer b, final long offset)
    {
        final byte[] x = b.read(offset, 4);
        return (x[0] & 0xff) | (x[1] & 0xff) << 8 | (x[2] & 0xff) << 16 | (x[3] & 0xff) << 24;
    }

    static void check(final boolean ok, final String what)
    {
        if (!ok)
        {
            System.out.println("FAIL " + what);
            System.out.flush();
            if (diagnosticsOf != null)
            {
                printDiagnostics(diagnosticsOf, new AssertionError(what));
            }
            System.exit(2);
        }
    }
}
