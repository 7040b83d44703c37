package io.github.te4j.bench;

import io.github.te4j.launcher.RankProcesses;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * NCCL's all-to-all through torch ({@code scripts/peers/nccl_alltoall.py}, shipped in the jar),
 * run after te4j's ranks have finished with the GPUs: one python process per rank, the same
 * GPUs, the same block sizes. Rank 0's lines become {@link Role#PEER} rows: NCCL's own figures,
 * which te4j-bench does not verify. Without python, torch or NCCL the run goes on without them.
 */
final class NcclAllToAll
{
    /** The script, next to this class in the jar. */
    static final String SCRIPT = "nccl_alltoall.py";
    static final String SERIES = "NCCL all-to-all (torch)";
    private static final String NOTE = "printed by nccl_alltoall.py (dist.all_to_all_single after a barrier, CUDA"
        + " events, slowest rank); not verified by te4j-bench";
    private static final Pattern LINE =
        Pattern.compile("nccl-a2a\\| N=(\\d+) size=(\\d+) us=([\\d.]+) gbps=([\\d.]+)");
    /** Whether python can import torch with CUDA and NCCL; the last line says why not. */
    private static final String PROBE = "import sys, torch, torch.distributed as d; ok = torch.cuda.is_available()"
        + " and d.is_nccl_available(); print('torch', torch.__version__, 'cuda', torch.cuda.is_available(),"
        + " 'nccl', d.is_nccl_available()); sys.exit(0 if ok else 2)";
    private static final Duration PROBE_TIMEOUT = Duration.ofMinutes(2);

    private NcclAllToAll()
    {
    }

    /**
     * Runs the script on {@code config.ranks} processes for {@code sizes}; returns rank 0's rows.
     * Every skip or failure is one line on {@code out} and in {@code infos}.
     */
    static List<Row> run(final BenchConfig config, final List<Long> sizes, final Duration timeout,
        final PrintStream out, final List<String> infos) throws IOException, InterruptedException
    {
        final String python = config.ncclPython();
        final String missing = probe(python);
        if (missing != null)
        {
            say(out, infos, "NCCL all-to-all (torch) skipped: " + missing);
            return List.of();
        }
        final Path dir = Files.createTempDirectory("te4j-nccl-a2a-");
        final Path script = dir.resolve(SCRIPT);
        try
        {
            try (InputStream in = NcclAllToAll.class.getResourceAsStream(SCRIPT))
            {
                if (in == null)
                {
                    say(out, infos, "NCCL all-to-all (torch) skipped: " + SCRIPT + " is not in this build's jar");
                    return List.of();
                }
                Files.copy(in, script, StandardCopyOption.REPLACE_EXISTING);
            }
            out.println("peers: NCCL all-to-all (torch) on " + config.ranks + " GPUs with " + python);
            out.flush();
            // Samples shaped like te4j's: as many, as many warm-ups, as many all-to-alls each.
            final List<String> cmd = new ArrayList<>(List.of(python, script.toString(),
                "--warmup=" + config.warmup, "--samples=" + (config.duration == null ? config.iterations : 20),
                "--loop=" + config.allToAllBatch()));
            for (final long size : sizes)
            {
                cmd.add(Long.toString(size));
            }
            final String port = Integer.toString(RankProcesses.freePort());
            final List<RankProcesses.Result> results;
            try (RankProcesses p = new RankProcesses())
            {
                for (int r = 0; r < config.ranks; r++)
                {
                    p.startCommand(r, cmd, environment(config, r, port));
                }
                results = p.await(timeout);
            }
            final List<Row> rows = parse(results.get(0).output);
            for (final RankProcesses.Result r : results)
            {
                if (r.exitCode != 0)
                {
                    say(out, infos, "NCCL all-to-all (torch): rank " + r.rank + " exited with " + r.exitCode
                        + "; keeping the " + rows.size() + " figures rank 0 printed");
                    out.println(r.output.strip());
                    break;
                }
            }
            return rows;
        }
        finally
        {
            Files.deleteIfExists(script);
            Files.deleteIfExists(dir);
        }
    }

    /** torchrun's variables for rank {@code r}; --gpus maps the local ranks onto the devices given. */
    private static Map<String, String> environment(final BenchConfig config, final int r, final String port)
    {
        final Map<String, String> env = new HashMap<>();
        env.put("RANK", Integer.toString(r));
        env.put("LOCAL_RANK", Integer.toString(r));
        env.put("WORLD_SIZE", Integer.toString(config.ranks));
        env.put("LOCAL_WORLD_SIZE", Integer.toString(config.ranks));
        env.put("MASTER_ADDR", "127.0.0.1");
        env.put("MASTER_PORT", port);
        if (config.gpus != null)
        {
            final StringBuilder visible = new StringBuilder();
            for (final int d : config.gpus)
            {
                visible.append(visible.length() == 0 ? "" : ",").append(d);
            }
            env.put("CUDA_VISIBLE_DEVICES", visible.toString());
        }
        return env;
    }

    /** Null when {@code python} imports torch with CUDA and NCCL, else why not. */
    static String probe(final String python) throws InterruptedException
    {
        final RankProcesses.Result r;
        try (RankProcesses p = new RankProcesses())
        {
            try
            {
                p.startCommand(0, List.of(python, "-c", PROBE));
            }
            catch (final IllegalStateException e)
            {
                return "cannot start '" + python + "' (" + (e.getCause() != null ? e.getCause().getMessage()
                    : e.getMessage()) + "); set --nccl-python";
            }
            r = p.await(PROBE_TIMEOUT).get(0);
        }
        if (r.exitCode == 0)
        {
            return null;
        }
        final String[] lines = r.output.strip().split("\n");
        return "'" + python + "' cannot run it (exit " + r.exitCode + "): " + lines[lines.length - 1].strip()
            + "; set --nccl-python to a python with torch";
    }

    /** The rows of the script's {@code nccl-a2a|} lines. */
    static List<Row> parse(final String output)
    {
        final List<Row> rows = new ArrayList<>();
        for (final String line : output.split("\n"))
        {
            final Matcher m = LINE.matcher(line);
            if (m.find())
            {
                final double ns = Double.parseDouble(m.group(3)) * 1000;
                rows.add(new Row(Mode.ALLTOALL, SERIES, Role.PEER, "cuda", Long.parseLong(m.group(2)), -1, 0, 0, 0,
                    ns, Double.NaN, null, NOTE, Integer.parseInt(m.group(1))));
            }
        }
        return rows;
    }

    private static void say(final PrintStream out, final List<String> infos, final String line)
    {
        out.println("peers: " + line);
        out.flush();
        infos.add(line);
    }
}
