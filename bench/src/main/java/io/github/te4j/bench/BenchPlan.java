package io.github.te4j.bench;

import io.github.te4j.Platform;
import java.util.ArrayList;
import java.util.List;

/**
 * The ordered cases of a run. Within a size, te4j and its baselines run one after another, so
 * every figure has its comparison from the same minute of the same run.
 */
public final class BenchPlan
{
    /** The raw flag moves no data: its row carries the 4-byte flag word as its size. */
    static final long FLAG_BYTES = 4;
    /** The series an RDMA transport runs (OpStream ops from Java). */
    static final java.util.Set<Series> RDMA_SERIES = java.util.EnumSet.of(Series.TE4J_PUT, Series.TE4J_PING_PONG,
        Series.TE4J_RATE_JAVA, Series.TE4J_ALLTOALL, Series.TCP_PING_PONG, Series.TCP_STREAM, Series.TCP_RATE);

    private BenchPlan()
    {
    }

    /** The cases of {@code config} on {@code platform}. */
    public static List<BenchCase> of(final BenchConfig config, final Platform platform)
    {
        final boolean cuda = platform == Platform.CUDA;
        final int threads = cuda ? config.threads : 1;
        // On the host one executor thread does a put: the launch shape does not apply.
        final List<Integer> blocks = cuda ? config.blocks : List.of(1);
        final List<BenchCase> out = new ArrayList<>();
        if (config.modes.contains(Mode.BANDWIDTH))
        {
            for (final long size : config.sizes(Mode.BANDWIDTH, platform))
            {
                for (final String v : config.variants)
                {
                    for (final int b : blocks)
                    {
                        out.add(new BenchCase(Series.TE4J_PUT, size, b, cuda ? config.threadsOf(v) : 1, v));
                    }
                }
                if (cuda)
                {
                    out.add(new BenchCase(Series.COPY_ENGINE, size, -1, 0));
                    for (final int b : blocks)
                    {
                        if (b > 0)  // a plain kernel has no "te4j's choice"
                        {
                            out.add(new BenchCase(Series.SM_COPY, size, b, threads));
                        }
                    }
                }
                else
                {
                    out.add(new BenchCase(Series.MEMCPY, size, 1, 1));
                }
                if (config.transport != TransportKind.P2P)
                {
                    out.add(new BenchCase(Series.TCP_STREAM, size, 1, 1));
                }
            }
        }
        if (config.modes.contains(Mode.LATENCY))
        {
            for (final long size : config.sizes(Mode.LATENCY, platform))
            {
                for (final String v : config.variants)
                {
                    out.add(new BenchCase(Series.TE4J_PING_PONG, size, 1, cuda ? 32 : 1, v));
                    if (!cuda && config.transport == TransportKind.P2P)
                    {
                        // Over RDMA the ping-pong above already runs as stream ops.
                        out.add(new BenchCase(Series.TE4J_STREAM_PING_PONG, size, 1, 1, v));
                    }
                }
                if (config.transport != TransportKind.P2P)
                {
                    out.add(new BenchCase(Series.TCP_PING_PONG, size, 1, 1));
                }
                if (size <= WindowLayout.LL_MAX_BYTES)
                {
                    // No knob changes the LL loop: once per size.
                    out.add(new BenchCase(Series.TE4J_LL_PING_PONG, size, 1, cuda ? 32 : 1));
                }
            }
            out.add(new BenchCase(Series.RAW_FLAG, FLAG_BYTES, 1, 1));
            if (config.variants.size() > 1 || !config.variants.get(0).isEmpty())
            {
                // With variants: the floor of a correctly ordered put+signal beside the raw flag.
                out.add(new BenchCase(Series.RAW_FLAG_DATA, FLAG_BYTES, 1, 1));
            }
        }
        if (config.modes.contains(Mode.RATE))
        {
            for (final long size : config.sizes(Mode.RATE, platform))
            {
                for (final String v : config.variants)
                {
                    final int t = cuda ? config.threadsOf(v) : 1;
                    for (final int b : blocks)
                    {
                        out.add(new BenchCase(Series.TE4J_RATE_JAVA, size, b, t, v));
                        if (cuda)
                        {
                            out.add(new BenchCase(Series.TE4J_RATE_GRAPH, size, b, t, v));
                        }
                        out.add(new BenchCase(Series.TE4J_RATE_CPP, size, b, t, v));
                    }
                }
                out.add(cuda ? new BenchCase(Series.COPY_ENGINE_RATE, size, -1, 0)
                    : new BenchCase(Series.MEMCPY_RATE, size, 1, 1));
                if (config.transport != TransportKind.P2P)
                {
                    out.add(new BenchCase(Series.TCP_RATE, size, 1, 1));
                }
            }
        }
        if (config.modes.contains(Mode.ALLTOALL))
        {
            for (final long size : config.sizes(Mode.ALLTOALL, platform))
            {
                for (final String v : config.variants)
                {
                    for (final int b : blocks)
                    {
                        out.add(new BenchCase(Series.TE4J_ALLTOALL, size, b, cuda ? config.threadsOf(v) : 1, v));
                    }
                }
                if (!cuda)
                {
                    // On CUDA the comparison is NCCL's all-to-all (--peers), run after the ranks.
                    out.add(new BenchCase(Series.MEMCPY_ALLTOALL, size, 1, 1));
                }
            }
        }
        if (config.transport != TransportKind.P2P)
        {
            // Over RDMA only the te4j series that go through OpStream: the baselines and the native
            // loops address the partner's window through a P2P mapping, which RDMA runs do not make.
            out.removeIf(k -> !RDMA_SERIES.contains(k.series()));
        }
        return out;
    }

    /** The largest pair message of a plan (sizes the window's pair regions). */
    public static long maxBytes(final List<BenchCase> plan)
    {
        long max = Sizes.MIN_BYTES;
        for (final BenchCase c : plan)
        {
            if (c.series().mode() != Mode.ALLTOALL)
            {
                max = Math.max(max, c.bytes());
            }
        }
        return max;
    }

    /** The largest all-to-all block of a plan, 0 without all-to-all cases (sizes the window's a2a regions). */
    public static long maxBlockBytes(final List<BenchCase> plan)
    {
        long max = 0;
        for (final BenchCase c : plan)
        {
            if (c.series().mode() == Mode.ALLTOALL)
            {
                max = Math.max(max, c.bytes());
            }
        }
        return max;
    }
}
