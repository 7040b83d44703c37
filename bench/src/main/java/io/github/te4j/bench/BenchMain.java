package io.github.te4j.bench;

import io.github.te4j.Platform;
import io.github.te4j.TransferBatch;
import io.github.te4j.exchange.ExchangeAddress;
import io.github.te4j.exchange.LaunchEnvironment;
import io.github.te4j.workload.KvCacheLayout;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Properties;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * te4j-bench: how fast te4j moves data here, and against what. With no arguments it picks the
 * platform (CUDA P2P where there is a GPU, the ranks placed round-robin on the GPUs present, else
 * the host platform), starts the
 * ranks (threads of this JVM where they share one GPU, else child JVMs: --launch), and prints
 * bandwidth, latency and message-rate tables with the baselines measured in the same run.
 *
 * <pre>
 * java -jar te4j-bench-&lt;version&gt;.jar
 * java -jar te4j-bench-&lt;version&gt;.jar --mode bandwidth --sweep 8:1G --blocks 16,132 --chart bw.svg
 * java -jar te4j-bench-&lt;version&gt;.jar --format json &gt; rows.json   (progress goes to stderr)
 * java -jar te4j-bench-&lt;version&gt;.jar --rank 1 --world-size 2 --rendezvous 10.0.0.1:29600   (by hand)
 * </pre>
 * Exit codes: 0 every check held; 1 a check failed or a rank failed; 2 bad usage; 3 unavailable.
 */
@Command(name = "te4j-bench", mixinStandardHelpOptions = true, versionProvider = BenchMain.Version.class,
    sortOptions = false, usageHelpAutoWidth = true,
    description = {"Bandwidth, latency and message rate of te4j, with baselines measured side by side.",
        "Every size is verified after its timed runs; a mismatch is a FAILED row and exit code 1."})
public final class BenchMain implements Callable<Integer>
{
    /** Exit code: a check failed or a rank failed. */
    public static final int EXIT_FAILED = 1;
    /** Exit code: bad usage. */
    public static final int EXIT_USAGE = 2;
    /** Exit code: the platform or transport asked for is not available here. */
    public static final int EXIT_UNAVAILABLE = 3;

    @Spec
    CommandSpec spec;

    @Option(names = "--transport", paramLabel = "p2p|rdma-soft|rdma-hw", description = "Transport (default: p2p).")
    String transport = "p2p";

    @Option(names = "--platform", paramLabel = "auto|cuda|host",
        description = "Platform; auto = CUDA when there is a GPU and the ranks' GPUs reach each other, else host"
            + " (default: auto).")
    String platform = "auto";

    @Option(names = "--mode", paramLabel = "MODE[,MODE]",
        description = "bandwidth, latency, rate, alltoall, batch, kvcache or all (default: all = the first three).")
    String mode = "all";

    @Option(names = "--batch-region", paramLabel = "SIZE",
        description = "--mode batch: the region the blocks are scattered in (default 1G).")
    String batchRegionText = "1G";
    long batchRegion;

    @Option(names = "--kv-layers", paramLabel = "L", description = "--mode kvcache: layers handed over (default: 32).")
    int kvLayers = 32;

    @Option(names = "--kv-blocks", paramLabel = "B", description = "--mode kvcache: blocks per layer (default: 256).")
    int kvBlocks = 256;

    @Option(names = "--kv-block-size", paramLabel = "SIZE",
        description = "--mode kvcache: bytes of one block, a multiple of 8 (default: 16K).")
    String kvBlockSize = "16K";

    @Option(names = "--kv-pool", paramLabel = "SIZE",
        description = "--mode kvcache: each side's pool the blocks are scattered in, up to 64G"
            + " (default: 4 x the blocks' bytes).")
    String kvPool;
    KvCacheLayout kvLayout;

    @Option(names = "--sizes", paramLabel = "LIST",
        description = "Sizes, e.g. 8,4K,1M,1G (bandwidth; and latency/rate when that is the only mode).")
    String sizes;

    @Option(names = "--sweep", paramLabel = "MIN:MAX",
        description = "Powers of two from MIN to MAX, e.g. 8:1G (default: 8:1G on CUDA, 8:64M on host).")
    String sweep;

    @Option(names = "--latency-sizes", paramLabel = "LIST", description = "Ping-pong message sizes (default: 8).")
    String latencySizes;

    @Option(names = "--rate-sizes", paramLabel = "LIST", description = "Message-rate sizes (default: 64K).")
    String rateSizes;

    @Option(names = "--a2a-sizes", paramLabel = "LIST",
        description = "All-to-all block sizes, bytes to each other rank (default: 4K,64K,1M,16M).")
    String allToAllSizes;

    @Option(names = "--warmup", paramLabel = "N", description = "Untimed samples before timing (default: 2).")
    int warmup = 2;

    @Option(names = "--iterations", paramLabel = "N", description = "Timed samples per case (default: 20).")
    Integer iterations;

    @Option(names = "--duration", paramLabel = "TIME",
        description = "Time each case for about this long instead of --iterations, e.g. 500ms, 2s.")
    String duration;

    @Option(names = "--batch", paramLabel = "N",
        description = "Operations per timed sample; 0 = auto, up to 1000; alltoall: all-to-alls per sample, auto = 1"
            + " (default: 0).")
    int batch;

    @Option(names = {"--ranks", "--world-size"}, paramLabel = "N",
        description = "Ranks; ranks 0 and 1 are measured, others only join; alltoall uses all (default: 2).")
    int ranks = 2;

    @Option(names = "--gpus", paramLabel = "LIST", description = "CUDA device of each rank, e.g. 0,1 or 0,0 (several ranks may"
        + " share one); default: rank r uses GPU r modulo the GPUs present.")
    String gpus;

    @Option(names = "--launch", paramLabel = "auto|in-process|processes",
        description = {"How the ranks start: in-process = threads of this JVM, an engine each; processes = a child JVM"
            + " per rank (CUDA ranks that share a GPU then time-slice it: their rows say so); auto = in-process when"
            + " every rank is on one GPU, else processes (default: auto)."})
    String launch = "auto";

    @Option(names = "--blocks", paramLabel = "LIST",
        description = "Blocks (SMs) per put and SM-copy launch, e.g. 16,32,132; 0 = te4j's choice (default: 16).")
    String blocks = "16";

    @Option(names = "--threads", paramLabel = "N", description = "Threads per block of a put (default: 512).")
    int threads = 512;

    @Option(names = "--format", paramLabel = "table|csv|json", description = "Output format (default: table).")
    String format = "table";

    @Option(names = "--output", paramLabel = "FILE", description = "Write the results there (the table still goes to the terminal).")
    Path output;

    @Option(names = "--chart", paramLabel = "FILE.svg",
        description = "Bandwidth and latency against size, baselines included: SVG, or PNG where java.desktop exists.")
    Path chart;

    @Option(names = "--targets", description = "Also print te4j's performance targets with this run's ratios.")
    boolean targets;

    @Option(names = "--variant", paramLabel = "KNOBS",
        description = {"Run every te4j series under this variant too (repeatable): default, or knob=value[,...]"
            + " with put=auto|base|ce|cesm, samedevce=auto|0|64k|256k|1m|2m|4m|8m|16m|32m (put=auto within one GPU: the"
            + " copy engine from this size), signal=atom|red, pdl=0|1,"
            + " hostcopy=memmove|memcpy|nt, hostthreads=4|1|2|8, hostspin=auto|0|2|5|20|50|200 (us),"
            + " batchthreads=auto|1|2|4|8 (te4j's knobs), and the bench's own wait=sleep|spin, rawdata=0|1,"
            + " signal=set, threads=N and the put kernel's experiment variants"
            + " put=u8|u16|u8c|tma|tma8|tma3|tmah|tmaq|cluster. Default: default only."})
    List<String> variants;

    @Option(names = "--save-rows", paramLabel = "FILE", description = "Also write every row to FILE, for --report.")
    Path saveRows;

    @Option(names = "--report", paramLabel = "FILE[,FILE]",
        description = "Run nothing: print the table and the performance targets of rows saved by earlier --save-rows runs.")
    String report;

    @Option(names = "--peers", description = "Also run the NVSHMEM/NCCL peer programs (run-peers.sh) when present;"
        + " with alltoall, NCCL's all-to-all through torch.")
    boolean peers;

    @Option(names = "--peers-dir", paramLabel = "DIR",
        description = "Where run-peers.sh is (default: shared/peers, in the repository when run by scripts/bench.sh).")
    Path peersDir;

    @Option(names = "--nccl-python", paramLabel = "PYTHON",
        description = "Python with torch for the NCCL all-to-all of --peers (default: /opt/torch/.venv/bin/python3"
            + " where it exists, else python3).")
    String ncclPython;

    @Option(names = "--rank", paramLabel = "R", description = "Run as rank R only (ranks started by hand).")
    Integer rank;

    @Option(names = "--from-environment",
        description = "Run as the rank a launcher started: rank, world size, GPU (the local rank) and, unless "
            + "--rendezvous is given, the rendezvous from TE4J_RANK/TE4J_WORLD_SIZE/TE4J_RENDEZVOUS, torchrun "
            + "(RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT), Slurm or Open MPI.")
    boolean fromEnvironment;

    @Option(names = "--rendezvous", paramLabel = "ADDRESS",
        description = "Where ranks started by hand or by a launcher meet: tcp://HOST:PORT (rank 0 listens there), "
            + "etcd://HOST:2379[,HOST:2379]/JOB, file:///SHARED/DIR; a bare HOST:PORT is tcp:// "
            + "(default: tcp://127.0.0.1:29600).")
    String rendezvous;

    @Option(names = "--bind", paramLabel = "ADDR",
        description = "Address rank 0 listens on (default: loopback; 0.0.0.0 for other hosts).")
    String bind;

    @Option(names = "--soft-nic", paramLabel = "soft@IPV4[:PORT]",
        description = "rdma-soft: the address this rank's software NIC listens on, where the raw-TCP baseline's"
            + " responder (rank 1) listens too (default: soft, loopback). Ranks in network namespaces give"
            + " their veth addresses.")
    String softNic;

    @Option(names = "--timeout", paramLabel = "TIME",
        description = "Bound of every wait: rendezvous, device loops, synchronize (default: 120s).")
    String timeout = "120s";

    @Option(names = "--result-file", hidden = true, description = "Launched rank 0: where its rows go.")
    Path resultFile;

    @Option(names = "--corrupt-for-test", hidden = true,
        description = "Tests only: flip one received byte before the first check, to prove checks fail loudly.")
    boolean corruptForTest;

    /** Entry point of the bench jar. */
    public static void main(final String[] args)
    {
        System.exit(run(args));
    }

    /** Runs the command line and returns the exit code (for tests and embedding). */
    public static int run(final String... args)
    {
        final CommandLine cl = new CommandLine(new BenchMain());
        cl.setCaseInsensitiveEnumValuesAllowed(true);
        return cl.execute(args);
    }

    @Override
    public Integer call() throws Exception
    {
        final BenchConfig config;
        try
        {
            config = toConfig();
        }
        catch (final IllegalArgumentException e)
        {
            throw new CommandLine.ParameterException(spec.commandLine(), e.getMessage(), e);
        }
        if (report != null)
        {
            return SavedRows.report(config, report, System.out, System.err);
        }
        final String unavailable = config.transport().unavailableReason();
        if (unavailable != null)
        {
            System.err.println("te4j-bench: " + unavailable);
            return EXIT_UNAVAILABLE;
        }
        if (config.modes.equals(java.util.EnumSet.of(Mode.BATCH)))
        {
            return BatchBench.run(config, batchRegion, System.out, System.err);
        }
        if (config.modes.equals(java.util.EnumSet.of(Mode.KVCACHE)))
        {
            return KvCacheBench.run(config, kvLayout, System.out, System.err);
        }
        check(!config.modes.contains(Mode.BATCH), "--mode batch runs alone (not with other modes)");
        return config.isRank() ? new BenchRank(config).run() : new BenchLauncher(config).run();
    }

    /** The settings of a command line (a rank the launcher runs in this JVM); IllegalArgumentException names a bad option. */
    static BenchConfig configOf(final List<String> args)
    {
        final CommandLine cl = new CommandLine(new BenchMain());
        try
        {
            cl.parseArgs(args.toArray(new String[0]));
        }
        catch (final CommandLine.ParameterException e)
        {
            throw new IllegalArgumentException(e.getMessage(), e);
        }
        final BenchMain m = cl.getCommand();
        return m.toConfig();
    }

    /** Checks every option and builds the run's settings; IllegalArgumentException names the bad one. */
    BenchConfig toConfig()
    {
        final BenchConfig c = new BenchConfig();
        c.transport = TransportKind.parse(transport);
        c.platformChoice = platform.toLowerCase(Locale.ROOT);
        if (!List.of("auto", "cuda", "host").contains(c.platformChoice))
        {
            throw new IllegalArgumentException("--platform: '" + platform + "' (expected auto, cuda or host)");
        }
        c.modes = parseModes(mode);
        batchRegion = Sizes.parseList(batchRegionText).get(0);
        check(batchRegion >= 64L << 20, "--batch-region must be at least 64M, got " + batchRegionText);
        kvLayout = kvCacheLayout();
        check(!c.modes.contains(Mode.KVCACHE) || c.modes.size() == 1, "--mode kvcache runs alone (not with other modes)");
        check(!c.modes.contains(Mode.KVCACHE) || c.transport == TransportKind.P2P, "--mode kvcache runs on the p2p"
            + " transport (the KvCacheHandoff example covers the software NIC)");
        if (sizes != null && sweep != null)
        {
            throw new IllegalArgumentException("--sizes and --sweep exclude each other");
        }
        final List<Long> main = sizes != null ? Sizes.parseList(sizes) : sweep != null ? Sizes.parseSweep(sweep) : null;
        c.bandwidthSizes = main;
        c.latencySizes = latencySizes != null ? Sizes.parseList(latencySizes) : null;
        c.rateSizes = rateSizes != null ? Sizes.parseList(rateSizes) : null;
        c.allToAllSizes = allToAllSizes != null ? Sizes.parseList(allToAllSizes) : null;
        // With one mode, --sizes/--sweep are that mode's sizes.
        if (main != null && c.modes.size() == 1)
        {
            if (c.modes.contains(Mode.LATENCY) && c.latencySizes == null)
            {
                c.latencySizes = main;
            }
            if (c.modes.contains(Mode.RATE) && c.rateSizes == null)
            {
                c.rateSizes = main;
            }
            if (c.modes.contains(Mode.ALLTOALL) && c.allToAllSizes == null)
            {
                c.allToAllSizes = main;
            }
        }
        check(warmup >= 0 && warmup <= 1000, "--warmup must be 0..1000, got " + warmup);
        c.warmup = warmup;
        if (iterations != null && duration != null)
        {
            throw new IllegalArgumentException("--iterations and --duration exclude each other");
        }
        if (iterations != null)
        {
            check(iterations >= 1 && iterations <= 100000, "--iterations must be 1..100000, got " + iterations);
            c.iterations = iterations;
        }
        if (duration != null)
        {
            c.duration = BenchConfig.parseDuration(duration);
        }
        check(batch >= 0 && batch <= 1000000, "--batch must be 0 (auto) .. 1000000, got " + batch);
        c.batch = batch;
        check(!(fromEnvironment && rank != null), "--rank and --from-environment: give one");
        if (fromEnvironment)
        {
            final LaunchEnvironment env;
            try
            {
                env = LaunchEnvironment.fromEnvironment();
            }
            catch (final IllegalStateException e)
            {
                throw new IllegalArgumentException("--from-environment: " + e.getMessage(), e);
            }
            check(ranks == 2 || ranks == env.worldSize(), "--ranks " + ranks + " but the launcher ("
                + env.launcher() + ") says WORLD_SIZE " + env.worldSize());
            ranks = env.worldSize();
            c.rank = env.rank();
            c.environmentDevice = gpus == null ? env.device() : -1;
            if (rendezvous == null)
            {
                rendezvous = env.rendezvous().orElseThrow(() -> new IllegalArgumentException(
                    "--from-environment: the launcher (" + env.launcher() + ") names no rendezvous: give --rendezvous "
                        + "or set " + LaunchEnvironment.TE4J_RENDEZVOUS));
            }
        }
        check(ranks >= 2 || !c.modes.contains(Mode.ALLTOALL),
            "--mode alltoall needs --ranks 2 or more (every rank sends to every other), got " + ranks);
        check(ranks >= 2 && ranks <= 64, "--ranks must be 2..64, got " + ranks);
        c.ranks = ranks;
        if (gpus != null)
        {
            final List<Integer> g = new ArrayList<>();
            for (final String part : gpus.split(","))
            {
                try
                {
                    g.add(Integer.parseInt(part.trim()));
                }
                catch (final NumberFormatException e)
                {
                    throw new IllegalArgumentException("--gpus: '" + part + "' is not a device number");
                }
            }
            check(g.size() == ranks, "--gpus lists " + g.size() + " devices for " + ranks + " ranks");
            check(g.stream().allMatch(d -> d >= 0), "--gpus: device numbers must be >= 0");
            c.gpus = g.stream().mapToInt(Integer::intValue).toArray();
        }
        c.launch = BenchConfig.Launch.parse(launch);
        c.blocks = BenchConfig.parseInts("--blocks", blocks);
        check(c.blocks.stream().allMatch(b -> b <= 65535), "--blocks: at most 65535 blocks");
        check(threads >= 32 && threads <= 1024 && threads % 32 == 0,
            "--threads must be a multiple of 32 from 32 to 1024, got " + threads);
        c.threads = threads;
        try
        {
            c.format = OutputFormat.valueOf(format.toUpperCase(Locale.ROOT));
        }
        catch (final IllegalArgumentException e)
        {
            throw new IllegalArgumentException("--format: '" + format + "' (expected table, csv or json)");
        }
        c.output = output;
        if (chart != null)
        {
            final String name = chart.getFileName().toString().toLowerCase(Locale.ROOT);
            check(name.endsWith(".svg") || name.endsWith(".png"), "--chart: the file must end in .svg or .png");
            check(name.endsWith(".svg") || Charts.pngSupported(),
                "--chart: PNG needs the java.desktop module, which this Java runtime lacks; use .svg");
        }
        c.chart = chart;
        c.targets = targets;
        if (variants != null && !variants.isEmpty())
        {
            final List<String> v = new ArrayList<>();
            for (final String text : variants)
            {
                final String n = BenchConfig.parseVariant(text);
                if (!v.contains(n))
                {
                    v.add(n);
                }
            }
            c.variants = v;
        }
        c.saveRows = saveRows;
        c.peers = peers;
        if (peersDir != null)
        {
            c.peersDir = peersDir;
        }
        check(ncclPython == null || !ncclPython.isBlank(), "--nccl-python: empty");
        c.ncclPython = ncclPython;
        if (rank != null)
        {
            check(rank >= 0 && rank < ranks, "--rank " + rank + " outside 0.." + (ranks - 1));
            c.rank = rank;
        }
        if (rendezvous != null)
        {
            c.rendezvous = rendezvousAddress(rendezvous);
        }
        check(bind == null || c.rendezvous.startsWith("tcp://"), "--bind is for a tcp:// rendezvous (rank 0 "
            + "listens); " + c.rendezvous + " has no listener");
        c.bindAddress = bind;
        check(softNic == null || softNic.equals("soft") || softNic.startsWith("soft@"),
            "--soft-nic: soft or soft@IPV4[:PORT], got " + softNic);
        c.softNic = softNic;
        c.timeout = BenchConfig.parseDuration(timeout);
        c.resultFile = resultFile;
        c.corruptForTest = corruptForTest;
        check(resultFile == null || rank != null, "--result-file is for launched ranks only");
        return c;
    }

    /** The --kv-* shape, checked; the pool defaults to four times the blocks' bytes. */
    private KvCacheLayout kvCacheLayout()
    {
        final long block = Sizes.parse(kvBlockSize);
        check(kvLayers >= 1 && kvLayers <= 4096, "--kv-layers must be 1..4096, got " + kvLayers);
        check(kvBlocks >= 1 && kvBlocks <= TransferBatch.MAX_CAPACITY, "--kv-blocks must be 1.."
            + TransferBatch.MAX_CAPACITY + ", got " + kvBlocks);
        final long blocks = (long) kvLayers * kvBlocks;
        final long pool = kvPool == null ? 4 * blocks * block : Sizes.parseLarge(kvPool, 64L << 30);
        check(pool / block >= blocks, "--kv-pool " + Sizes.format(pool) + " holds " + pool / block + " blocks of "
            + Sizes.format(block) + ", fewer than the " + kvLayers + " x " + kvBlocks + " to place");
        check(pool <= 64L << 30, "--kv-pool: the pools (default 4 x the blocks' bytes) are at most 64G each, got "
            + Sizes.format(pool));
        check(pool / block <= KvCacheLayout.MAX_POOL_BLOCKS, "--kv-pool " + Sizes.format(pool) + " holds "
            + pool / block + " blocks of " + Sizes.format(block) + ", more than " + KvCacheLayout.MAX_POOL_BLOCKS);
        return new KvCacheLayout(kvLayers, kvBlocks, block, (int) (pool / block), 42);
    }

    /** A --rendezvous value as an exchange address; HOST:PORT is tcp://HOST:PORT. */
    static String rendezvousAddress(final String text)
    {
        check(!text.isBlank(), "--rendezvous: empty");
        String uri = text;
        if (!text.contains("://"))
        {
            final int colon = text.lastIndexOf(':');
            check(colon > 0, "--rendezvous: expected tcp://HOST:PORT, etcd://HOST:2379/JOB, file:///DIR or HOST:PORT, got '"
                + text + "'");
            try
            {
                final int port = Integer.parseInt(text.substring(colon + 1));
                check(port > 0 && port < 65536, "--rendezvous: port " + port + " outside 1..65535");
            }
            catch (final NumberFormatException e)
            {
                throw new IllegalArgumentException("--rendezvous: bad port in '" + text + "'");
            }
            uri = "tcp://" + text;
        }
        try
        {
            ExchangeAddress.parse(uri);
        }
        catch (final IllegalArgumentException e)
        {
            throw new IllegalArgumentException("--rendezvous: " + e.getMessage(), e);
        }
        return uri;
    }

    private static EnumSet<Mode> parseModes(final String text)
    {
        final EnumSet<Mode> out = EnumSet.noneOf(Mode.class);
        for (final String part : text.split(","))
        {
            final Mode m;
            try
            {
                m = Mode.valueOf(part.trim().toUpperCase(Locale.ROOT));
            }
            catch (final IllegalArgumentException e)
            {
                throw new IllegalArgumentException("--mode: '" + part.trim()
                    + "' (expected bandwidth, latency, rate, alltoall, batch, kvcache or all)");
            }
            if (m == Mode.ALL)
            {
                out.addAll(EnumSet.of(Mode.BANDWIDTH, Mode.LATENCY, Mode.RATE));
            }
            else
            {
                out.add(m);
            }
        }
        return out;
    }

    private static void check(final boolean ok, final String message)
    {
        if (!ok)
        {
            throw new IllegalArgumentException(message);
        }
    }

    /** Version from the jar manifest, else from the version resource the build fills in. */
    static final class Version implements CommandLine.IVersionProvider
    {
        @Override
        public String[] getVersion()
        {
            return new String[] {"te4j-bench " + version()};
        }
    }

    /** This build's version: Implementation-Version of the jar, else version.properties, else "unknown". */
    static String version()
    {
        final String v = BenchMain.class.getPackage().getImplementationVersion();
        if (v != null && !v.isBlank())
        {
            return v;
        }
        try (InputStream in = BenchMain.class.getResourceAsStream("version.properties"))
        {
            if (in != null)
            {
                final Properties p = new Properties();
                p.load(in);
                final String fromResource = p.getProperty("version");
                if (fromResource != null && !fromResource.isBlank() && !fromResource.startsWith("${"))
                {
                    return fromResource;
                }
            }
        }
        catch (final IOException e)
        {
            // an unreadable resource: the version is unknown, which -V says
        }
        return "unknown";
    }

    /** The platform's name in output. */
    static String platformName(final Platform p)
    {
        return p.name().toLowerCase(Locale.ROOT);
    }
}
