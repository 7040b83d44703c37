package io.github.te4j.bench;

import io.github.te4j.Availability;
import io.github.te4j.CommContext;
import io.github.te4j.DeviceBuffer;
import io.github.te4j.OpStream;
import io.github.te4j.P2pTransport;
import io.github.te4j.Platform;
import io.github.te4j.RdmaTransport;
import io.github.te4j.TransferEngine;
import io.github.te4j.exchange.Exchanges;
import io.github.te4j.exchange.HandleExchange;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.StandardOpenOption;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.List;

/**
 * One rank of a run, started by {@link BenchLauncher} or by hand ({@code --rank}). Sets up the
 * engine, one symmetric window and one stream, then runs every case of the plan in step with the
 * other ranks. Rank 0 reports: into the launcher's result file, or (started by hand) to the
 * terminal and the output files itself.
 */
final class BenchRank
{
    private final BenchConfig config;

    BenchRank(final BenchConfig config)
    {
        this.config = config;
    }

    /** Runs this rank; returns the exit code. */
    int run() throws IOException
    {
        final Platform platform = config.resolvePlatform();
        final Throwable cause = Availability.unavailabilityCause(platform);
        if (cause != null)
        {
            System.err.println("te4j-bench rank " + config.rank + ": " + cause.getMessage());
            return BenchMain.EXIT_UNAVAILABLE;
        }
        final List<BenchCase> plan = BenchPlan.of(config, platform);
        final boolean reporter = config.rank == 0;
        final List<Row> rows = new ArrayList<>();
        final List<String> infos = new ArrayList<>();
        final BufferedWriter sink = reporter && config.resultFile != null
            ? Files.newBufferedWriter(config.resultFile, StandardCharsets.UTF_8, StandardOpenOption.APPEND,
                StandardOpenOption.CREATE)
            : null;
        final Progress progress = reporter && sink == null ? Progress.forTerminal(plan.size(), System.err) : null;
        try
        {
            emit(sink, RowCodec.total(plan.size()));
            final int device = config.deviceOf(config.rank);
            try (HandleExchange rv = Exchanges.open(config.rendezvous, config.rank, config.ranks, config.exchangeOptions());
                TransferEngine engine = TransferEngine.builder().platform(platform).device(device).build())
            {
                final long session = agreeOnSession(rv);
                final WindowLayout layout = new WindowLayout(BenchPlan.maxBytes(plan), config.ranks,
                    BenchPlan.maxBlockBytes(plan));
                final P2pTransport p2p = engine.getOrCreateP2pTransport(config.ranks);
                final DeviceBuffer window = p2p.allocateBuffer(layout.windowBytes());
                final boolean rdma = config.transport != TransportKind.P2P;
                // RDMA: P2P maps only the own rank, so every op to another rank goes over the NIC.
                final CommContext ctx = rdma ? p2p.connect(window, rv, config.timeout, 1L << config.rank)
                    : p2p.connect(window, rv, config.timeout);
                final RdmaTransport nic = rdma ? connectRdma(engine, window, ctx, rv) : null;
                final OpStream stream = engine.createStream();
                final int partner = config.rank <= 1 ? 1 - config.rank : -1;
                if (reporter)
                {
                    for (final String info : describe(platform, layout))
                    {
                        infos.add(info);
                        emit(sink, RowCodec.info(info));
                    }
                }
                // Over RDMA the natives get no partner: their loops need a P2P mapping of it.
                try (BenchNatives natives = new BenchNatives(platform, device, ctx, stream, rdma ? -1 : partner,
                    config.timeout.toNanos(), rdma))
                {
                    final CaseRunner runner = new CaseRunner(config, platform, rv, ctx, stream, natives, layout, session);
                    runner.writeSource();
                    rv.barrier(config.timeout);
                    int done = 0;
                    for (final BenchCase k : plan)
                    {
                        final Row row = runner.run(k);
                        done++;
                        if (row != null)
                        {
                            rows.add(row);
                            emit(sink, RowCodec.encode(row));
                            if (progress != null)
                            {
                                progress.update(done, row);
                            }
                        }
                    }
                }
                if (nic != null && reporter)
                {
                    // Where the time goes: the NIC's own counts over the whole run (per op: wqes /
                    // doorbells / cqes per put; bytes_written on the partner's side).
                    final String info = "software NIC counters, rank 0, whole run: " + nic.statistics()
                        + (nic.diagnostics().isEmpty() ? "" : "; diagnostics: " + nic.diagnostics());
                    infos.add(info);
                    emit(sink, RowCodec.info(info));
                }
                // Nobody unmaps or frees while a peer may still touch its window.
                rv.barrier(config.timeout);
            }
        }
        finally
        {
            if (progress != null)
            {
                progress.finish();
            }
            if (sink != null)
            {
                sink.close();
            }
        }
        if (!reporter)
        {
            return 0;
        }
        if (sink == null)
        {
            new Report(config, platform, infos, rows).print(System.out, System.err);
        }
        return rows.stream().allMatch(Row::ok) ? 0 : BenchMain.EXIT_FAILED;
    }

    private List<String> describe(final Platform platform, final WindowLayout layout)
    {
        final List<String> out = new ArrayList<>();
        final boolean allToAll = config.modes.contains(Mode.ALLTOALL);
        final boolean pairs = config.modes.size() > (allToAll ? 1 : 0);
        out.add("platform " + BenchMain.platformName(platform) + ", transport " + config.transport.label() + ", "
            + config.ranks + " ranks" + (config.ranks > 2 && pairs ? " (pair 0<->1 measured, the others join)" : "")
            + (allToAll ? "; all-to-all among all " + config.ranks : ""));
        if (platform == Platform.CUDA && allToAll)
        {
            final StringBuilder g = new StringBuilder("GPUs: device of rank 0..").append(config.ranks - 1).append(':');
            for (int r = 0; r < config.ranks; r++)
            {
                g.append(' ').append(config.deviceOf(r));
            }
            out.add(g.toString());
        }
        else if (platform == Platform.CUDA)
        {
            final int d0 = config.deviceOf(0);
            final int d1 = config.deviceOf(1);
            out.add("GPUs: rank 0 on device " + d0 + ", rank 1 on device " + d1
                + (d0 != d1 ? "; peer access " + Availability.cudaCanAccessPeer(d0, d1)
                    : config.pairTimeSlicesGpu(platform) ? " (one GPU, two processes: CUDA IPC within the device; the GPU"
                        + " time-slices their kernels, so round trips include its switches)"
                    : " (one GPU, both ranks in one process: one CUDA context, direct pointers)"));
        }
        else
        {
            out.add("host: " + Runtime.getRuntime().availableProcessors() + " CPUs; one executor thread per stream");
        }
        out.add("window " + Sizes.format(layout.windowBytes()) + " per rank; "
            + (config.duration != null ? "about " + config.duration.toMillis() + " ms per case"
                : config.iterations + " timed samples per case") + " after " + config.warmup + " warm-up samples");
        return out;
    }

    /** The software NIC, opened, registered on the window and connected; the context routes over it. */
    private RdmaTransport connectRdma(final TransferEngine engine, final DeviceBuffer window, final CommContext ctx,
        final HandleExchange rv)
    {
        final RdmaTransport nic = engine.getOrCreateRdmaTransport(config.rdmaDevice());
        nic.initialize(config.ranks, 1);
        nic.register(window);
        nic.connect(rv, config.timeout);
        ctx.withRdma(nic);
        for (int r = 0; r < config.ranks; r++)
        {
            if (r != config.rank && !ctx.routesOverRdma(r))
            {
                throw new IllegalStateException("rank " + r + " is not routed over RDMA (" + config.transport.label() + ")");
            }
        }
        return nic;
    }

    /** Rank 0 draws the session (the pattern seeds); everyone takes its value. */
    private static long agreeOnSession(final HandleExchange rv)
    {
        final long mine = new SecureRandom().nextLong();
        final List<byte[]> all = rv.allGather(ByteBuffer.allocate(8).putLong(mine).array(), rv.defaultTimeout());
        return ByteBuffer.wrap(all.get(0)).getLong();
    }

    private static void emit(final BufferedWriter sink, final String line)
    {
        if (sink == null)
        {
            return;
        }
        try
        {
            sink.write(line);
            sink.newLine();
            sink.flush();  // the launcher reads it as it grows (progress)
        }
        catch (final IOException e)
        {
            throw new UncheckedIOException("cannot write the result file", e);
        }
    }
}
