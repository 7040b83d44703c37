package io.github.te4j.bench;

import io.github.te4j.launcher.RankProcesses;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The peer programs of {@code ../shared/peers} (p2p_baseline, NVSHMEM, NCCL through torch), run
 * through their {@code run-peers.sh} after te4j's ranks have finished, with NVLink multicast kept
 * off. Their printed figures become {@link Role#PEER} rows: the peers' own numbers, which
 * te4j-bench cannot verify.
 */
final class PeerPrograms
{
    static final String SCRIPT = "run-peers.sh";
    private static final String NOTE = "printed by run-peers.sh; not verified by te4j-bench";
    private static final long GIB = 1L << 30;

    private PeerPrograms()
    {
    }

    /** Runs the script in {@code dir} (when present) and returns the rows parsed from its output. */
    static List<Row> run(final Path dir, final Duration timeout, final PrintStream out)
        throws IOException, InterruptedException
    {
        final Path script = dir.resolve(SCRIPT);
        if (!Files.isRegularFile(script))
        {
            out.println("peers: no " + SCRIPT + " in " + dir.toAbsolutePath() + ": skipped (set --peers-dir)");
            return List.of();
        }
        final Path work = Files.createTempDirectory("te4j-peers-");
        out.println("peers: running " + script + " (NVSHMEM/NCCL when installed; this takes a few minutes)");
        final List<RankProcesses.Result> results;
        try (RankProcesses p = new RankProcesses())
        {
            p.startCommand(0, List.of("bash", script.toString(), work.toString()));
            results = p.await(timeout);
        }
        final RankProcesses.Result r = results.get(0);
        for (final String line : r.output.split("\n"))
        {
            out.println("peers| " + line);
        }
        if (r.exitCode != 0)
        {
            out.println("peers: " + SCRIPT + " exited with " + r.exitCode + "; keeping the figures it printed");
        }
        return parse(r.output);
    }

    /** The rows of the figures in a run-peers.sh output. */
    static List<Row> parse(final String output)
    {
        final List<Row> rows = new ArrayList<>();
        for (final String line : output.split("\n"))
        {
            Matcher m;
            if ((m = match("CE memcpyPeer 1GiB: ([\\d.]+) GB/s", line)) != null)
            {
                rows.add(bandwidth("p2p_baseline copy engine", GIB, -1, 0, m.group(1)));
            }
            else if ((m = match("SM put blocks=(\\d+) 1GiB: ([\\d.]+) GB/s", line)) != null)
            {
                rows.add(bandwidth("p2p_baseline SM stores", GIB, Integer.parseInt(m.group(1)), 512, m.group(2)));
            }
            else if ((m = match("CE memcpyPeer (\\d+) B: ([\\d.]+) us/op", line)) != null)
            {
                rows.add(perOp(Mode.RATE, "p2p_baseline cudaMemcpyPeerAsync", Long.parseLong(m.group(1)), m.group(2)));
            }
            else if ((m = match("flag ping-pong round trip: ([\\d.]+) us", line)) != null)
            {
                rows.add(perOp(Mode.LATENCY, "p2p_baseline flag ping-pong", BenchPlan.FLAG_BYTES, m.group(1)));
            }
            else if ((m = match("NVSHMEM putmem_nbi_block blocks=(\\d+) 1GiB: ([\\d.]+) GB/s", line)) != null)
            {
                rows.add(bandwidth("NVSHMEM putmem_nbi_block", GIB, Integer.parseInt(m.group(1)), 512, m.group(2)));
            }
            else if ((m = match("NVSHMEM putmem_on_stream (\\d+) B: ([\\d.]+) us/op", line)) != null)
            {
                rows.add(perOp(Mode.RATE, "NVSHMEM putmem_on_stream", Long.parseLong(m.group(1)), m.group(2)));
            }
            else if ((m = match("NVSHMEM putmem_signal ping-pong (\\d+) B: round trip ([\\d.]+) us", line)) != null)
            {
                rows.add(perOp(Mode.LATENCY, "NVSHMEM putmem_signal ping-pong", Long.parseLong(m.group(1)), m.group(2)));
            }
            else if ((m = match("NCCL send/recv (\\d+) B: ([\\d.]+) us/op", line)) != null)
            {
                rows.add(perOp(Mode.BANDWIDTH, "NCCL send/recv", Long.parseLong(m.group(1)), m.group(2)));
            }
        }
        return rows;
    }

    private static Matcher match(final String regex, final String line)
    {
        final Matcher m = Pattern.compile(regex).matcher(line);
        return m.find() ? m : null;
    }

    private static Row bandwidth(final String series, final long bytes, final int blocks, final int threads,
        final String gbps)
    {
        final double ns = bytes / Double.parseDouble(gbps);
        return new Row(Mode.BANDWIDTH, series, Role.PEER, "cuda", bytes, blocks, threads, 0, 0, ns, Double.NaN, null,
            NOTE);
    }

    private static Row perOp(final Mode mode, final String series, final long bytes, final String us)
    {
        final double ns = Double.parseDouble(us) * 1000;
        return new Row(mode, series, Role.PEER, "cuda", bytes, -1, 0, 0, 0, ns, Double.NaN, null, NOTE);
    }
}
