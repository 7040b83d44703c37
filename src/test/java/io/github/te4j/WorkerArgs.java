package io.github.te4j;

import io.github.te4j.exchange.HandleExchange;
import io.github.te4j.launcher.DeviceMap;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

/**
 * The key=value arguments of a multi-process test worker (a child JVM per rank), parsed once:
 * rank, world and port are required; platform (host|cuda, default host), device (default: the
 * rank's GPU on CUDA, 0 on the host), sizes (comma list) and timeoutSeconds have the same
 * meaning in every worker. The engine a worker runs on is made from them too.
 */
final class WorkerArgs
{
    private final Map<String, String> values = new HashMap<>();
    final int rank;
    final int world;
    final int port;

    private WorkerArgs(final String[] argv)
    {
        for (final String s : argv)
        {
            final int eq = s.indexOf('=');
            if (eq <= 0)
            {
                throw new IllegalArgumentException("worker argument '" + s + "' is not key=value");
            }
            values.put(s.substring(0, eq), s.substring(eq + 1));
        }
        rank = Integer.parseInt(required("rank"));
        world = Integer.parseInt(required("world"));
        port = Integer.parseInt(required("port"));
    }

    static WorkerArgs parse(final String[] argv)
    {
        return new WorkerArgs(argv);
    }

    String required(final String key)
    {
        final String v = values.get(key);
        if (v == null)
        {
            throw new IllegalArgumentException("worker argument " + key + "= is missing");
        }
        return v;
    }

    /** The value of {@code key}, or null when it was not given. */
    String get(final String key)
    {
        return values.get(key);
    }

    String get(final String key, final String otherwise)
    {
        return values.getOrDefault(key, otherwise);
    }

    int getInt(final String key, final int otherwise)
    {
        final String v = values.get(key);
        return v == null ? otherwise : Integer.parseInt(v);
    }

    long getLong(final String key, final long otherwise)
    {
        final String v = values.get(key);
        return v == null ? otherwise : Long.parseLong(v);
    }

    boolean getBoolean(final String key, final boolean otherwise)
    {
        final String v = values.get(key);
        return v == null ? otherwise : Boolean.parseBoolean(v);
    }

    Platform platform()
    {
        return Platform.valueOf(get("platform", "host").toUpperCase());
    }

    /** The CUDA device of this rank (DeviceMap's choice unless device= is given); 0 on the host. */
    int device()
    {
        return getInt("device", platform() == Platform.CUDA ? DeviceMap.deviceOf(rank) : 0);
    }

    /** The comma list sizes=, or {@code otherwise}; an empty value is no sizes. */
    long[] sizes(final String otherwise)
    {
        final String v = get("sizes", otherwise);
        return v.isEmpty() ? new long[0] : Arrays.stream(v.split(",")).mapToLong(Long::parseLong).toArray();
    }

    Duration timeout(final long otherwiseSeconds)
    {
        return Duration.ofSeconds(getLong("timeoutSeconds", otherwiseSeconds));
    }

    /** The test's TCP handle exchange among the world's ranks, rank 0 listening on port. */
    HandleExchange tcpExchange(final Duration timeout)
    {
        return TestExchanges.tcp(rank, world, port, timeout);
    }

    /** An engine on this worker's platform and device. */
    TransferEngine engine()
    {
        return TransferEngine.builder().platform(platform()).device(device()).build();
    }
}
