package io.github.te4j.bench;

import io.github.te4j.Availability;
import io.github.te4j.Platform;
import io.github.te4j.launcher.DeviceMap;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Locale;
import java.util.Set;

/**
 * The validated settings of one benchmark run (made by {@link BenchMain} from the command line).
 * Everything here has been checked; sizes left null take the platform's defaults.
 */
public final class BenchConfig
{
    /** Default bandwidth sweep on CUDA between GPUs: every power of two from 8 B to 1 GiB. */
    static final List<Long> CUDA_SWEEP = Sizes.parseSweep("8:1G");
    /**
     * Default bandwidth sweep on CUDA when ranks 0 and 1 share one GPU: a copy within one device
     * reaches its full rate by 256 MiB, and the two largest sizes of the GPU-to-GPU sweep would
     * spend most of the run in verifying their bytes from Java (the one-GPU run has 3 minutes).
     */
    static final List<Long> CUDA_ONE_GPU_SWEEP = Sizes.parseSweep("8:256M");
    /** Default bandwidth sweep on the host platform: small enough for a laptop or a CI box. */
    static final List<Long> HOST_SWEEP = Sizes.parseSweep("8:64M");
    static final List<Long> DEFAULT_LATENCY_SIZES = List.of(8L);
    static final List<Long> DEFAULT_RATE_SIZES = List.of(64L << 10);
    /** Default all-to-all block sizes (bytes each rank sends to each other rank). */
    static final List<Long> DEFAULT_ALLTOALL_SIZES = Sizes.parseList("4K,64K,1M,16M");
    /** Where the torch of a GPU host usually lives; else python3 from PATH. */
    static final Path TORCH_PYTHON = Path.of("/opt/torch/.venv/bin/python3");

    TransportKind transport = TransportKind.P2P;
    /** "auto", "cuda" or "host". */
    String platformChoice = "auto";
    Set<Mode> modes = EnumSet.of(Mode.BANDWIDTH, Mode.LATENCY, Mode.RATE);
    List<Long> bandwidthSizes;
    List<Long> latencySizes;
    List<Long> rateSizes;
    List<Long> allToAllSizes;
    int warmup = 2;
    int iterations = 20;
    Duration duration;
    int batch;
    int ranks = 2;
    int[] gpus;
    List<Integer> blocks = List.of(16);
    int threads = 512;
    OutputFormat format = OutputFormat.TABLE;
    Path output;
    Path chart;
    boolean peers;
    /** Inside the repository (the working directory of scripts/bench.sh): where a GPU host's shared/ is carried. */
    Path peersDir = Path.of("shared", "peers");
    /** How the launcher starts the ranks. */
    Launch launch = Launch.AUTO;
    /** The python that runs the NCCL all-to-all (torch) beside te4j's; null = {@link #ncclPython()}'s default. */
    String ncclPython;
    boolean targets;
    /** te4j variants (tuning knobs) each te4j series runs under; "" = the defaults. */
    List<String> variants = List.of("");
    /** Where the launcher also writes every row (RowCodec lines), for a later --report. */
    Path saveRows;
    int rank = -1;
    /** Where the ranks meet: an {@link io.github.te4j.exchange.Exchanges} address. */
    String rendezvous = "tcp://127.0.0.1:29600";
    /** The GPU of this rank when the launcher's local rank chose it ({@code --from-environment}); -1 = none. */
    int environmentDevice = -1;
    String bindAddress;
    /** rdma-soft: this rank's software NIC device name (soft@IPV4[:PORT]); null = "soft" (loopback). */
    String softNic;
    Duration timeout = Duration.ofSeconds(120);
    Path resultFile;
    /** Tests only: the receiver flips one byte before its first data check. */
    boolean corruptForTest;

    BenchConfig()
    {
    }

    public TransportKind transport()
    {
        return transport;
    }

    public Set<Mode> modes()
    {
        return Collections.unmodifiableSet(modes);
    }

    /** Whether this process is one rank (started by hand or by the launcher). */
    public boolean isRank()
    {
        return rank >= 0;
    }

    /**
     * The platform: the one asked for, or with "auto" CUDA where there is a GPU and the devices of
     * the ranks that must reach each other do (the same device or peer access) or --gpus names
     * them, else host.
     */
    public Platform resolvePlatform()
    {
        switch (platformChoice)
        {
            case "cuda":
                return Platform.CUDA;
            case "host":
                return Platform.HOST;
            default:
                // Explicit --gpus means CUDA: a bad list is then reported, not silently replaced.
                return Availability.isAvailable(Platform.CUDA) && (gpus != null || unreachableDevices() == null)
                    ? Platform.CUDA : Platform.HOST;
        }
    }

    /** Sizes of a mode on a platform (the defaults when none were given). */
    public List<Long> sizes(final Mode mode, final Platform platform)
    {
        switch (mode)
        {
            case LATENCY:
                return latencySizes != null ? latencySizes : DEFAULT_LATENCY_SIZES;
            case RATE:
                return rateSizes != null ? rateSizes : DEFAULT_RATE_SIZES;
            case ALLTOALL:
                return allToAllSizes != null ? allToAllSizes : DEFAULT_ALLTOALL_SIZES;
            default:
                if (bandwidthSizes != null)
                {
                    return bandwidthSizes;
                }
                if (platform != Platform.CUDA)
                {
                    return HOST_SWEEP;
                }
                // Ranks that compute their own plan (started by hand, by a launcher) all see one
                // --gpus list, or none: then they keep the one sweep every host agrees on.
                final boolean sameView = rank < 0 || gpus != null;
                return sameView && deviceOf(0) == deviceOf(1) ? CUDA_ONE_GPU_SWEEP : CUDA_SWEEP;
        }
    }

    /**
     * How the launcher starts the ranks: {@code auto} runs them as threads of this JVM (one
     * engine each) when they are CUDA ranks that all share one GPU, else one child JVM per rank.
     */
    enum Launch
    {
        AUTO, IN_PROCESS, PROCESSES;

        static Launch parse(final String text)
        {
            switch (text.trim().toLowerCase(Locale.ROOT))
            {
                case "auto":
                    return AUTO;
                case "in-process":
                    return IN_PROCESS;
                case "processes":
                    return PROCESSES;
                default:
                    throw new IllegalArgumentException("--launch: '" + text + "' (expected auto, in-process or processes)");
            }
        }

        String label()
        {
            return name().toLowerCase(Locale.ROOT).replace('_', '-');
        }
    }

    /**
     * Whether the launcher runs every rank in this JVM. Ranks that share a GPU from separate
     * processes take turns on it (the GPU time-slices between their contexts, ~4.5 ms a put+signal
     * round trip on one H200), so their latency and rate rows would time the GPU's scheduler; in
     * one process they share one context and the rows time te4j. Ranks on several GPUs, and the
     * host platform, keep a process each: that is how they are deployed (CUDA IPC between
     * processes, shared-memory segments on the host), and no time slicing skews those figures.
     */
    boolean ranksInProcess(final Platform platform)
    {
        switch (launch)
        {
            case IN_PROCESS:
                return true;
            case PROCESSES:
                return false;
            default:
                return platform == Platform.CUDA && allOnOneDevice();
        }
    }

    /** Whether every rank is on the same CUDA device. */
    boolean allOnOneDevice()
    {
        final int[] d = devices();
        return Arrays.stream(d).allMatch(x -> x == d[0]);
    }

    /**
     * Whether ranks 0 and 1 are separate processes on one GPU (this rank's view: ranks started
     * by hand or as child JVMs are processes of their own): their rows then include the GPU's
     * time slicing between the processes, and say so.
     */
    boolean pairTimeSlicesGpu(final Platform platform)
    {
        return platform == Platform.CUDA && launch != Launch.IN_PROCESS && deviceOf(0) == deviceOf(1);
    }

    /** The python for the NCCL all-to-all: --nccl-python, else torch's venv where it exists, else python3. */
    public String ncclPython()
    {
        if (ncclPython != null)
        {
            return ncclPython;
        }
        return Files.isExecutable(TORCH_PYTHON) ? TORCH_PYTHON.toString() : "python3";
    }

    /** The platform column of this run's rows: RDMA rows carry the transport, they are not the P2P figures. */
    /** The RDMA transport's device name: --soft-nic for rdma-soft, else the transport's filter. */
    String rdmaDevice()
    {
        return transport == TransportKind.RDMA_SOFT && softNic != null ? softNic : transport.rdmaDeviceFilter();
    }

    /** The IPv4 address the software NIC of this rank listens on ("soft" names loopback). */
    String softNicAddress()
    {
        if (softNic == null || !softNic.startsWith("soft@"))
        {
            return "127.0.0.1";
        }
        final String rest = softNic.substring("soft@".length());
        final int colon = rest.indexOf(':');
        return colon < 0 ? rest : rest.substring(0, colon);
    }

    String rowPlatform(final Platform platform)
    {
        final String name = platform.name().toLowerCase(Locale.ROOT);
        return transport == TransportKind.P2P ? name : name + "+" + transport.label();
    }

    /** CUDA device of a rank: --gpus entry, else round-robin over the GPUs present ({@link DeviceMap}). */
    public int deviceOf(final int r)
    {
        if (environmentDevice >= 0 && r == rank)
        {
            return environmentDevice;
        }
        if (gpus != null)
        {
            return gpus[r];
        }
        final int n = Availability.cudaDeviceCount();
        return n > 0 ? DeviceMap.deviceOf(r, n) : r;
    }

    /** The options every rank opens the exchange with: this run's deadlines and, over tcp, rank 0's bind address. */
    Map<String, String> exchangeOptions()
    {
        final Map<String, String> o = new LinkedHashMap<>();
        final String scheme = rendezvous.substring(0, rendezvous.indexOf("://"));
        o.put("timeout", timeout.toMillis() + "ms");
        if (!scheme.equals("file"))
        {
            o.put("connectTimeout", timeout.toMillis() + "ms");
        }
        if (bindAddress != null)
        {
            o.put("bind", bindAddress);  // tcp only: BenchMain refuses --bind with another scheme
        }
        return o;
    }

    /** The device of every rank ({@link #deviceOf}). */
    public int[] devices()
    {
        final int[] d = new int[ranks];
        for (int r = 0; r < ranks; r++)
        {
            d[r] = deviceOf(r);
        }
        return d;
    }

    /**
     * Why the ranks' devices cannot serve this run, or null: a device that is not there, or two
     * ranks that must reach each other (0 and 1 for the pair modes, all for an all-to-all) on
     * devices without peer access. Ranks sharing a device always reach each other.
     */
    public String unreachableDevices()
    {
        final int n = Availability.cudaDeviceCount();
        if (n < 1)
        {
            return "no CUDA device is visible";
        }
        final int[] d = devices();
        for (int r = 0; r < ranks; r++)
        {
            if (d[r] >= n)
            {
                return "rank " + r + " needs CUDA device " + d[r] + " but " + n + (n == 1 ? " is" : " are")
                    + " visible (set --gpus, e.g. --gpus " + "0,".repeat(ranks - 1) + "0, or --ranks)";
            }
        }
        final int reach = modes.contains(Mode.ALLTOALL) ? ranks : 2;
        final String why = DeviceMap.unreachable(Arrays.copyOf(d, reach));
        return why == null ? null : why + ": use --platform host, or --gpus with devices that reach each other";
    }

    /** Operations per timed sample for a case (--batch, or sized so a sample is neither tiny nor huge). */
    public int batchFor(final Mode mode, final long bytes)
    {
        if (batch > 0)
        {
            return batch;
        }
        final long target = mode == Mode.LATENCY ? 1L << 24 : 1L << 28;
        return (int)Math.max(1, Math.min(1000, target / bytes));
    }

    /**
     * All-to-alls per timed sample: --batch, else one (each sample then starts with every rank
     * released together, as a collective call would be).
     */
    public int allToAllBatch()
    {
        return batch > 0 ? batch : 1;
    }

    /**
     * The command line of one launched rank: everything that shapes the measurements, explicit,
     * so that every rank computes the same plan.
     */
    List<String> childArgs(final Platform platform, final int r, final String endpoint, final Path rows)
    {
        return childArgs(platform, r, endpoint, rows, false);
    }

    /** {@link #childArgs(Platform, int, String, Path)} of a rank run as a child JVM or ({@code inProcess}) a thread. */
    List<String> childArgs(final Platform platform, final int r, final String endpoint, final Path rows,
        final boolean inProcess)
    {
        final List<String> a = new ArrayList<>();
        a.add("--transport=" + transport.label());
        if (softNic != null)
        {
            a.add("--soft-nic=" + softNic);
        }
        a.add("--platform=" + platform.name().toLowerCase(Locale.ROOT));
        a.add("--mode=" + String.join(",", modes.stream().map(Mode::label).toArray(String[]::new)));
        a.add("--sizes=" + join(sizes(Mode.BANDWIDTH, platform)));
        a.add("--latency-sizes=" + join(sizes(Mode.LATENCY, platform)));
        a.add("--rate-sizes=" + join(sizes(Mode.RATE, platform)));
        a.add("--a2a-sizes=" + join(sizes(Mode.ALLTOALL, platform)));
        a.add("--warmup=" + warmup);
        if (duration != null)
        {
            a.add("--duration=" + duration.toMillis() + "ms");
        }
        else
        {
            a.add("--iterations=" + iterations);
        }
        a.add("--batch=" + batch);
        a.add("--ranks=" + ranks);
        if (platform == Platform.CUDA)
        {
            // The launcher's map, spelled out: every rank places itself by the same list.
            final StringBuilder g = new StringBuilder();
            for (final int d : devices())
            {
                g.append(g.length() == 0 ? "" : ",").append(d);
            }
            a.add("--gpus=" + g);
        }
        a.add("--blocks=" + String.join(",", blocks.stream().map(String::valueOf).toArray(String[]::new)));
        a.add("--threads=" + threads);
        for (final String v : variants)
        {
            a.add("--variant=" + (v.isEmpty() ? "default" : v));
        }
        a.add("--timeout=" + timeout.toMillis() + "ms");
        a.add("--launch=" + (inProcess ? Launch.IN_PROCESS : Launch.PROCESSES).label());
        a.add("--rank=" + r);
        a.add("--rendezvous=tcp://" + endpoint);
        if (rows != null)
        {
            a.add("--result-file=" + rows);
        }
        if (corruptForTest)
        {
            a.add("--corrupt-for-test");
        }
        return a;
    }

    private static String join(final List<Long> sizes)
    {
        return String.join(",", sizes.stream().map(Sizes::compact).toArray(String[]::new));
    }

    /** Parses {@code 10s}, {@code 500ms}, {@code 2m}, {@code 1h}; plain digits are seconds. */
    static Duration parseDuration(final String text)
    {
        final String t = text.trim().toLowerCase(Locale.ROOT);
        try
        {
            final Duration d;
            if (t.endsWith("ms"))
            {
                d = Duration.ofMillis(Long.parseLong(t.substring(0, t.length() - 2)));
            }
            else if (t.endsWith("s"))
            {
                d = Duration.ofSeconds(Long.parseLong(t.substring(0, t.length() - 1)));
            }
            else if (t.endsWith("m"))
            {
                d = Duration.ofMinutes(Long.parseLong(t.substring(0, t.length() - 1)));
            }
            else if (t.endsWith("h"))
            {
                d = Duration.ofHours(Long.parseLong(t.substring(0, t.length() - 1)));
            }
            else
            {
                d = Duration.ofSeconds(Long.parseLong(t));
            }
            if (d.isNegative() || d.isZero())
            {
                throw new IllegalArgumentException("duration '" + text + "' must be positive");
            }
            return d;
        }
        catch (final NumberFormatException e)
        {
            throw new IllegalArgumentException("bad duration '" + text + "' (examples: 500ms, 10s, 2m)");
        }
    }

    /**
     * Checks a variant ("default", or "knob=value[,knob=value]" with the knobs of te4j/tuning.h
     * and the bench's own, te4j/bench_knobs.h) and returns it normalised ("" for the defaults). The native side checks the
     * knob names and values when the case starts.
     */
    static String parseVariant(final String text)
    {
        final String t = text.trim().toLowerCase(Locale.ROOT);
        if (t.isEmpty() || t.equals("default"))
        {
            return "";
        }
        if (!t.matches("[a-z]+=[a-z0-9]+(,[a-z]+=[a-z0-9]+)*"))
        {
            throw new IllegalArgumentException("--variant: '" + text + "' (expected default or knob=value[,knob=value],"
                + " e.g. put=tma,pdl=1 or put=u8,threads=1024)");
        }
        for (final String item : t.split(","))
        {
            if (item.startsWith("threads="))
            {
                final int n = Integer.parseInt(item.substring(8));
                if (n < 32 || n > 1024 || n % 32 != 0)
                {
                    throw new IllegalArgumentException("--variant: threads=" + n + " must be a multiple of 32 up to 1024");
                }
            }
        }
        return t;
    }

    /** Threads per block of a te4j case under {@code variant} (its threads=N, else --threads). */
    int threadsOf(final String variant)
    {
        for (final String item : variant.split(","))
        {
            if (item.startsWith("threads="))
            {
                return Integer.parseInt(item.substring(8));
            }
        }
        return threads;
    }

    /** Parses a comma-separated list of non-negative ints. */
    static List<Integer> parseInts(final String option, final String text)
    {
        final List<Integer> out = new ArrayList<>();
        for (final String part : text.split(","))
        {
            try
            {
                final int v = Integer.parseInt(part.trim());
                if (v < 0)
                {
                    throw new NumberFormatException();
                }
                if (!out.contains(v))
                {
                    out.add(v);
                }
            }
            catch (final NumberFormatException e)
            {
                throw new IllegalArgumentException(option + ": '" + part.trim() + "' is not a non-negative integer");
            }
        }
        return out;
    }
}
