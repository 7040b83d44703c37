package io.github.te4j.examples;

import io.github.te4j.Availability;
import io.github.te4j.DeviceBuffer;
import io.github.te4j.P2pTransport;
import io.github.te4j.Platform;
import io.github.te4j.RdmaTransport;
import io.github.te4j.RegisteredMemory;
import io.github.te4j.SegmentHandle;
import io.github.te4j.TransferAgent;
import io.github.te4j.TransferEngine;
import io.github.te4j.check.Patterns;
import io.github.te4j.exchange.Exchanges;
import io.github.te4j.exchange.HandleExchange;
import io.github.te4j.launcher.DeviceMap;
import io.github.te4j.launcher.RankProcesses;
import io.github.te4j.workload.KvCacheLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Disaggregated serving's KV-cache handoff: a prefill rank (rank 0) holds L layers x B blocks of
 * a paged KV cache scattered over a large pool, and hands them to a decode rank (rank 1) one layer
 * at a time, each into the decode rank's own scattered slots and with a notification that te4j
 * delivers once the layer has landed ({@link LayerHandoff}: each layer a prepared transfer list,
 * or over the software NIC a batch that carries the notification). The decode rank, its pool poisoned first, waits for each
 * layer in turn and checks every byte of it, and at the end that no other slot was touched.
 *
 * <pre>
 * java -cp ... io.github.te4j.examples.KvCacheHandoff                          # both ranks, CUDA if a GPU, else host
 * java -cp ... KvCacheHandoff --platform cuda --device 0 --layers 32 --blocks 256 --block-size 16K
 * java -cp ... KvCacheHandoff --platform host --nic soft                       # over the software NIC
 * ip netns exec A java ... KvCacheHandoff --rank 0 --nic soft@10.0.0.1 --rendezvous tcp://10.0.0.1:29650
 * ip netns exec B java ... KvCacheHandoff --rank 1 --nic soft@10.0.0.2 --rendezvous tcp://10.0.0.1:29650
 * </pre>
 * Without --rank it starts both ranks as child JVMs. On CUDA rank r uses GPU r modulo the GPUs
 * present (both ranks share GPU 0 on a one-GPU machine) unless --device names one for both. The
 * software NIC (--nic) carries the blocks as RDMA WRITEs from the host platform, so the ranks may
 * sit in different network namespaces or hosts. Exit codes: 0 every byte verified; 1 a check or
 * a rank failed; 3 the platform is unavailable here; 64 bad usage.
 */
public final class KvCacheHandoff
{
    /** Exit code of a bad command line. */
    static final int EXIT_USAGE = 64;
    /** Exit code when the platform asked for is not available here. */
    static final int EXIT_UNAVAILABLE = 3;
    /** Bound of every wait; generous because two ranks on one GPU only time-slice it. */
    static final Duration TIMEOUT = Duration.ofSeconds(120);
    /** The software NIC's send ring (64-byte slots): a layer's WRITEs in flight at once. */
    private static final int RING_SLOTS = 1024;

    private KvCacheHandoff()
    {
    }

    /** The command line, checked. */
    static final class Options
    {
        int rank = -1;
        String rendezvous;
        String platformName = "auto";
        int device = -1;
        String nic;
        int layers = 8;
        int blocks = 64;
        long blockBytes = 16 << 10;
        int poolBlocks = -1;
        long seed = 42;
        /** Tests only: the prefill rank sends other bytes in block 0 of this layer, which the decode rank must catch. */
        int corruptLayer = -1;

        static Options parse(final String[] args)
        {
            final Options o = new Options();
            for (int i = 0; i < args.length; i++)
            {
                final String a = args[i];
                if (i + 1 >= args.length)
                {
                    throw new IllegalArgumentException(a + " needs a value");
                }
                final String v = args[++i];
                switch (a)
                {
                    case "--rank": o.rank = number(a, v); break;
                    case "--rendezvous": o.rendezvous = v.contains("://") ? v : "tcp://" + v; break;
                    case "--platform": o.platformName = v.toLowerCase(Locale.ROOT); break;
                    case "--device": o.device = number(a, v); break;
                    case "--nic": o.nic = v; break;
                    case "--layers": o.layers = number(a, v); break;
                    case "--blocks": o.blocks = number(a, v); break;
                    case "--block-size": o.blockBytes = parseSize(v); break;
                    case "--pool-blocks": o.poolBlocks = number(a, v); break;
                    case "--seed": o.seed = number(a, v); break;
                    case "--corrupt-for-test": o.corruptLayer = number(a, v); break;
                    default: throw new IllegalArgumentException("unknown argument " + a);
                }
            }
            if (o.rank != -1 && o.rank != 0 && o.rank != 1)
            {
                throw new IllegalArgumentException("--rank must be 0 (prefill) or 1 (decode), got " + o.rank);
            }
            if (!List.of("auto", "host", "cuda").contains(o.platformName))
            {
                throw new IllegalArgumentException("--platform must be auto, host or cuda, got " + o.platformName);
            }
            if (o.nic != null && !(o.nic.equals("soft") || o.nic.startsWith("soft@")))
            {
                throw new IllegalArgumentException("--nic must be soft or soft@IPV4[:PORT], got " + o.nic);
            }
            if (o.nic != null && o.platformName.equals("cuda"))
            {
                throw new IllegalArgumentException("--nic: batches over the software NIC are posted from the host"
                    + " platform; use --platform host");
            }
            if (o.poolBlocks < 0)
            {
                o.poolBlocks = (int) Math.min(Integer.MAX_VALUE, 4L * o.layers * o.blocks);
            }
            if (o.corruptLayer >= o.layers)
            {
                throw new IllegalArgumentException("--corrupt-for-test " + o.corruptLayer + ": there are " + o.layers
                    + " layers");
            }
            o.layout();  // checks the shape
            return o;
        }

        private static int number(final String option, final String text)
        {
            try
            {
                return Integer.parseInt(text.trim());
            }
            catch (final NumberFormatException e)
            {
                throw new IllegalArgumentException(option + ": '" + text + "' is not a number", e);
            }
        }

        KvCacheLayout layout()
        {
            return new KvCacheLayout(layers, blocks, blockBytes, poolBlocks, seed);
        }

        /** The shape's arguments, for the ranks a launcher starts. */
        List<String> shapeArgs()
        {
            return List.of("--layers", "" + layers, "--blocks", "" + blocks, "--block-size", "" + blockBytes,
                "--pool-blocks", "" + poolBlocks, "--seed", "" + seed);
        }
    }

    /** 4096, 16K, 1M, 1G (powers of 1024). */
    static long parseSize(final String text)
    {
        final String t = text.trim().toUpperCase(Locale.ROOT);
        final char last = t.isEmpty() ? ' ' : t.charAt(t.length() - 1);
        final int shift = last == 'K' ? 10 : last == 'M' ? 20 : last == 'G' ? 30 : 0;
        try
        {
            return Long.parseLong(shift == 0 ? t : t.substring(0, t.length() - 1)) << shift;
        }
        catch (final NumberFormatException e)
        {
            throw new IllegalArgumentException("not a size: '" + text + "' (e.g. 4096, 16K, 1M)", e);
        }
    }

    public static void main(final String[] args) throws Exception
    {
        final Options o;
        try
        {
            o = Options.parse(args);
        }
        catch (final IllegalArgumentException e)
        {
            System.err.println("te4j KV-cache handoff: " + e.getMessage() + "\nusage: [--platform auto|host|cuda]"
                + " [--device D] [--nic soft|soft@IPV4] [--layers L] [--blocks B] [--block-size 16K]"
                + " [--pool-blocks P] [--seed S] [--rank 0|1 --rendezvous tcp://host:port|etcd://...|file:///dir]");
            System.exit(EXIT_USAGE);
            return;
        }
        final Platform platform = o.platformName.equals("auto")
            ? TwoRankExample.choosePlatform(o.nic != null ? "host" : "auto") : Platform.valueOf(o.platformName.toUpperCase());
        final Throwable unavailable = Availability.unavailabilityCause(platform);
        if (unavailable != null)
        {
            System.err.println("te4j KV-cache handoff: " + unavailable.getMessage());
            System.exit(EXIT_UNAVAILABLE);
        }
        if (o.rank < 0)
        {
            System.exit(launchBoth(platform, o));
        }
        final int device = platform != Platform.CUDA ? 0 : o.device >= 0 ? o.device : DeviceMap.deviceOf(o.rank);
        final String where = o.rendezvous != null ? o.rendezvous : "tcp://127.0.0.1:29650";
        final Map<String, String> options = where.startsWith("file:") ? Map.of("timeout", TIMEOUT.toSeconds() + "s")
            : Map.of("timeout", TIMEOUT.toSeconds() + "s", "connectTimeout", TIMEOUT.toSeconds() + "s");
        final int code;
        try (HandleExchange exchange = Exchanges.open(where, o.rank, 2, options))
        {
            code = runRank(platform, o.rank, device, o.nic, o.layout(), o.corruptLayer, exchange);
        }
        System.exit(code);
    }

    /** Starts the prefill and the decode rank as child JVMs; returns the exit code. */
    static int launchBoth(final Platform platform, final Options o) throws InterruptedException
    {
        final int port = RankProcesses.freePort();
        final int[] devices = new int[2];
        for (int r = 0; r < 2; r++)
        {
            devices[r] = platform != Platform.CUDA ? 0 : o.device >= 0 ? o.device : DeviceMap.deviceOf(r);
        }
        System.out.println("te4j KV-cache handoff on " + platform
            + (platform == Platform.CUDA ? " (" + DeviceMap.describe(devices, Availability.cudaDeviceCount()) + ")" : "")
            + (o.nic != null ? " over the software NIC" : "") + ": " + o.layout());
        try (RankProcesses ranks = new RankProcesses())
        {
            ranks.start(2, KvCacheHandoff.class.getName(), List.of(), r ->
            {
                final List<String> a = new ArrayList<>(List.of("--rank", "" + r, "--platform",
                    platform.name().toLowerCase(Locale.ROOT), "--device", "" + devices[r], "--rendezvous",
                    "tcp://127.0.0.1:" + port));
                if (o.nic != null)
                {
                    a.addAll(List.of("--nic", o.nic));
                }
                a.addAll(o.shapeArgs());
                return a;
            });
            int worst = 0;
            for (final RankProcesses.Result r : ranks.await(Duration.ofMinutes(5)))
            {
                System.out.print(r.output);
                worst = Math.max(worst, r.exitCode == 0 ? 0 : 1);
            }
            System.out.println(worst == 0 ? "example passed" : "example FAILED");
            return worst;
        }
    }

    /** One rank: 0 the prefill, 1 the decode; returns the exit code. */
    static int runRank(final Platform platform, final int rank, final int device, final String nic,
        final KvCacheLayout layout, final int corruptLayer, final HandleExchange exchange)
    {
        try (TransferEngine engine = TransferEngine.builder().platform(platform).device(device).build())
        {
            final P2pTransport p2p = engine.getOrCreateP2pTransport(2);
            final DeviceBuffer buffer = p2p.allocateBuffer(layout.poolBytes());
            final TransferAgent agent = engine.createTransferAgent(p2p, rank == 0 ? "prefill" : "decode");
            final RegisteredMemory mine = agent.registerLocalMemory(buffer);
            // The decode rank receives; asked before publishing, so that its descriptor says where senders write.
            final LayerHandoff.Receiver receiver = rank == 1 ? new LayerHandoff.Receiver(agent.notifications(), "prefill")
                : null;
            if (nic != null)
            {
                // The other rank's segment is then reached over RDMA, one WRITE per block.
                final RdmaTransport rdma = engine.getOrCreateRdmaTransport(nic);
                rdma.initialize(2, 1, RING_SLOTS);
                rdma.register(buffer);
                rdma.connect(exchange, TIMEOUT);
                agent.useRdma(rdma);
            }
            if (rank == 0)
            {
                for (int l = 0; l < layout.layers(); l++)
                {
                    for (int b = 0; b < layout.blocksPerLayer(); b++)
                    {
                        Patterns.write(buffer, layout.prefillOffset(l, b), layout.blockBytes(), layout.blockSeed(l, b));
                    }
                }
                if (corruptLayer >= 0)
                {
                    Patterns.write(buffer, layout.prefillOffset(corruptLayer, 0), layout.blockBytes(),
                        ~layout.blockSeed(corruptLayer, 0));
                }
            }
            else
            {
                buffer.fill(0, layout.poolBytes(), Patterns.POISON);
            }
            // All-gather of both segments, then a barrier: the decode pool is poisoned before any send.
            agent.publishSegment(exchange, TIMEOUT);
            final int status = rank == 0 ? prefill(agent, mine, layout, platform, nic)
                : decode(receiver, buffer, layout);
            // Neither rank frees its buffer while the other may still reach it.
            exchange.barrier(TIMEOUT);
            return status;
        }
    }

    private static int prefill(final TransferAgent agent, final RegisteredMemory mine, final KvCacheLayout layout,
        final Platform platform, final String nic)
    {
        final SegmentHandle decode = agent.openSegment("decode");
        try (LayerHandoff.Sender sender = new LayerHandoff.Sender(agent, mine, decode, layout))
        {
            final long[] perLayer = new long[layout.layers()];
            final long start = System.nanoTime();
            for (int l = 0; l < layout.layers(); l++)
            {
                final long t0 = System.nanoTime();
                sender.send(l, TIMEOUT);
                perLayer[l] = System.nanoTime() - t0;
            }
            final long total = System.nanoTime() - start;
            Arrays.sort(perLayer);
            System.out.printf(Locale.ROOT, "[prefill] handed %d layers x %d blocks x %d B (%.1f MiB) to the decode rank"
                + " on %s%s as %s in %.2f ms; per layer, send to landed: median %.1f us, max %.1f us%n",
                layout.layers(), layout.blocksPerLayer(), layout.blockBytes(),
                layout.layers() * layout.layerBytes() / 1048576.0, platform,
                nic != null ? " over the software NIC (" + (decode.isRdma() ? "RDMA" : "NOT RDMA") + ")" : "",
                sender.usesLists() ? "prepared lists + notifications" : "batches carrying notifications", total / 1e6,
                perLayer[perLayer.length / 2] / 1e3, perLayer[perLayer.length - 1] / 1e3);
            return nic != null && !decode.isRdma() ? 1 : 0;
        }
    }

    private static int decode(final LayerHandoff.Receiver receiver, final DeviceBuffer pool, final KvCacheLayout layout)
    {
        int bad = 0;
        for (int l = 0; l < layout.layers(); l++)
        {
            receiver.await(l, TIMEOUT);
            for (int b = 0; b < layout.blocksPerLayer(); b++)
            {
                final String why = Patterns.verify(pool, layout.decodeOffset(l, b), layout.blockBytes(),
                    layout.blockSeed(l, b));
                if (why != null)
                {
                    if (bad++ < 5)
                    {
                        System.out.println("[decode] layer " + l + " block " + b + ": " + why);
                    }
                }
            }
        }
        // Every slot that no block was sent to still holds the poison.
        final boolean[] used = layout.decodeSlotsUsed();
        int untouched = 0;
        int overwritten = 0;
        for (int s = 0; s < used.length; s++)
        {
            if (!used[s])
            {
                untouched++;
                final String why = Patterns.verifyPoison(pool, s * layout.blockBytes(), (int) layout.blockBytes());
                if (why != null && overwritten++ < 5)
                {
                    System.out.println("[decode] slot " + s + " received no block but " + why);
                }
            }
        }
        final long blocks = (long) layout.layers() * layout.blocksPerLayer();
        System.out.println("[decode] " + layout.layers() + " layers landed; verified " + blocks + " blocks ("
            + blocks * layout.blockBytes() + " bytes): " + bad + " bad; " + untouched + " other slots still poisoned: "
            + overwritten + " overwritten");
        return bad == 0 && overwritten == 0 ? 0 : 1;
    }
}
