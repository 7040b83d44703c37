package io.github.te4j.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.function.Predicate;

/**
 * te4j's performance targets with this run's figures and ratios, each against its
 * baseline from the same run. A target whose rows this run did not produce says which options
 * produce them. The NVSHMEM figure of target 4 comes from --peers when it ran, else from the
 * reference note (another run: marked as such).
 */
final class TargetReport
{
    /** NVSHMEM putmem_on_stream 64 KiB on the test host, both reference runs (us per op). */
    static final double NVSHMEM_64K_REFERENCE_US = 2.31;

    private TargetReport()
    {
    }

    static String write(final List<Row> rows)
    {
        final List<String[]> t = new ArrayList<>();
        t.add(new String[] {"#", "target", "this run", "ratio", "goal", "met"});
        bulk(t, rows);
        ratio64m(t, rows);
        latency(t, rows, "cuda", "3", "put(8 B)+signal round trip vs raw flag (CUDA)", 1.03);
        llLatency(t, rows, "cuda", "3L", 1.03);
        floor(t, rows, "cuda", "3f");
        javaPerOp(t, rows);
        javaVsCpp(t, rows);
        hostBandwidth(t, rows);
        latency(t, rows, "host", "7", "host signal round trip vs raw atomic ping-pong", 1.2);
        llLatency(t, rows, "host", "7L", 1.2);
        floor(t, rows, "host", "7f");
        rdma(t, rows);
        batch(t, rows);
        final StringBuilder sb = new StringBuilder("\n== performance targets (ratios within this run)\n");
        final int[] w = new int[6];
        for (final String[] r : t)
        {
            for (int i = 0; i < r.length; i++)
            {
                w[i] = Math.max(w[i], r[i].length());
            }
        }
        for (final String[] r : t)
        {
            for (int i = 0; i < r.length; i++)
            {
                sb.append(r[i]).append(i == r.length - 1 ? "" : " ".repeat(w[i] - r[i].length() + 2));
            }
            sb.append('\n');
        }
        return sb.toString();
    }

    /** The series of --mode batch that targets compare: te4j's batch, and the per-block copy loop it replaces. */
    static final String BATCH_TE4J = "te4j batch (submit..done)";
    static final List<String> BATCH_BASELINES = List.of("memcpy loop", "cudaMemcpyAsync per block");

    /**
     * Target B (report only, with --mode batch): each verified transfer batch against the
     * per-block copy loop of the same blocks in the same run, as the range over the shapes.
     */
    private static void batch(final List<String[]> t, final List<Row> rows)
    {
        double lo = Double.POSITIVE_INFINITY;
        double hi = Double.NEGATIVE_INFINITY;
        String loShape = "";
        String hiShape = "";
        int n = 0;
        for (final Row r : rows)
        {
            final int colon = r.series().indexOf(": ");
            if (r.mode() != Mode.BATCH || !r.ok() || colon < 0 || !r.series().endsWith(": " + BATCH_TE4J))
            {
                continue;
            }
            final String shape = r.series().substring(0, colon);
            for (final Row b : rows)
            {
                if (b.mode() == Mode.BATCH && BATCH_BASELINES.stream().anyMatch(x -> b.series().equals(shape + ": " + x)))
                {
                    final double q = b.medianNs() / r.medianNs();
                    n++;
                    if (q < lo)
                    {
                        lo = q;
                        loShape = shape;
                    }
                    if (q > hi)
                    {
                        hi = q;
                        hiShape = shape;
                    }
                }
            }
        }
        if (n > 0)
        {
            t.add(new String[] {"B", "transfer batch (submit..done) vs the per-block copy loop of the same blocks",
                String.format(Locale.ROOT, "%d shapes: %.2fx (%s) .. %.2fx (%s)", n, lo, loShape, hi, hiShape),
                ratio(lo) + " .. " + ratio(hi), "report only", "-"});
        }
    }

    /**
     * Target 8: the software-NIC rows (platform "host+rdma-soft" or "cuda+rdma-soft") against raw
     * TCP between the same processes in the same run: the round trip, 4 KiB puts back to back
     * and the largest put of at least 1 MiB.
     */
    private static void rdma(final List<String[]> t, final List<Row> rows)
    {
        final Predicate<Row> soft = r -> r.platform().endsWith("+rdma-soft") && r.role() != Role.PEER;
        final Optional<Row> bw = rows.stream().filter(Row::ok).filter(soft).filter(r -> isSeries(r, Series.TE4J_PUT))
            .max((a, b) -> a.bytes() != b.bytes() ? Long.compare(a.bytes(), b.bytes())
                : Double.compare(b.medianNs(), a.medianNs()));
        final Optional<Row> rt = best(rows, soft.and(r -> isSeries(r, Series.TE4J_PING_PONG) && r.bytes() == 8));
        if (bw.isEmpty() && rt.isEmpty())
        {
            t.add(new String[] {"8", "software-NIC RDMA bandwidth and round trip", "not measured (run te4j-bench"
                + " --transport rdma-soft --platform host)", "-", "report only", "-"});
            return;
        }
        final Optional<Row> tcpRt = best(rows, soft.and(r -> isSeries(r, Series.TCP_PING_PONG) && r.bytes() == 8));
        if (rt.isPresent() && tcpRt.isPresent())
        {
            final double q = rt.get().medianNs() / tcpRt.get().medianNs();
            t.add(new String[] {"8a", "software NIC put(8 B)+signal round trip vs raw TCP ping-pong",
                us(rt.get()) + " vs " + us(tcpRt.get()), ratio(q), "<= 1.5", met(q <= 1.5)});
        }
        else
        {
            t.add(missing("8a", "software NIC put(8 B)+signal round trip vs raw TCP ping-pong",
                "--transport rdma-soft --mode latency --latency-sizes 8"));
        }
        rate4k(t, rows, soft);
        final Optional<Row> big = rows.stream().filter(Row::ok).filter(soft)
            .filter(r -> isSeries(r, Series.TE4J_PUT) && r.bytes() >= (1L << 20))
            .filter(r -> best(rows, soft.and(x -> isSeries(x, Series.TCP_STREAM) && x.bytes() == r.bytes())).isPresent())
            .max((a, b) -> a.bytes() != b.bytes() ? Long.compare(a.bytes(), b.bytes())
                : Double.compare(b.medianNs(), a.medianNs()));
        if (big.isPresent())
        {
            final Row tcp = best(rows, soft.and(x -> isSeries(x, Series.TCP_STREAM) && x.bytes() == big.get().bytes()))
                .get();
            final double q = big.get().gbps() / tcp.gbps();
            t.add(new String[] {"8c", "software NIC " + Sizes.format(big.get().bytes()) + " puts vs raw TCP stream",
                String.format(Locale.ROOT, "%.2f vs %.2f GB/s", big.get().gbps(), tcp.gbps()), ratio(q), ">= 0.9",
                met(q >= 0.9)});
        }
        else
        {
            final String b = bw.map(r -> String.format(Locale.ROOT, "%s put %.2f GB/s", Sizes.format(r.bytes()),
                r.gbps())).orElse("no bandwidth row");
            t.add(new String[] {"8c", "software NIC >= 1 MiB puts vs raw TCP stream", b
                + " (no raw TCP stream row of a size >= 1 MiB)", "-", ">= 0.9", "-"});
        }
    }

    /** Target 8b: 4 KiB puts back to back (bandwidth mode, else putWithSignal in rate mode) vs raw TCP messages. */
    private static void rate4k(final List<String[]> t, final List<Row> rows, final Predicate<Row> soft)
    {
        final long k4 = 4096;
        Optional<Row> te4j = best(rows, soft.and(r -> isSeries(r, Series.TE4J_PUT) && r.bytes() == k4));
        Optional<Row> tcp = best(rows, soft.and(r -> isSeries(r, Series.TCP_STREAM) && r.bytes() == k4));
        if (te4j.isEmpty() || tcp.isEmpty())
        {
            te4j = best(rows, soft.and(r -> isSeries(r, Series.TE4J_RATE_JAVA) && r.bytes() == k4));
            tcp = best(rows, soft.and(r -> isSeries(r, Series.TCP_RATE) && r.bytes() == k4));
        }
        if (te4j.isEmpty() || tcp.isEmpty())
        {
            t.add(missing("8b", "software NIC 4 KiB puts back to back vs raw TCP messages",
                "--transport rdma-soft --mode bandwidth --sizes 4K"));
            return;
        }
        final double q = tcp.get().medianNs() / te4j.get().medianNs();
        t.add(new String[] {"8b", "software NIC 4 KiB " + (isSeries(te4j.get(), Series.TE4J_PUT) ? "puts"
            : "putWithSignal") + " back to back vs raw TCP messages", String.format(Locale.ROOT,
                "%.2f vs %.2f us per message", te4j.get().medianNs() / 1e3, tcp.get().medianNs() / 1e3), ratio(q),
            ">= 0.7 (rate)", met(q >= 0.7)});
    }

    private static Optional<Row> best(final List<Row> rows, final Predicate<Row> p)
    {
        return rows.stream().filter(Row::ok).filter(p).min((a, b) -> Double.compare(a.medianNs(), b.medianNs()));
    }

    private static Predicate<Row> is(final String platform, final Series s, final long bytes)
    {
        return r -> r.platform().equals(platform) && isSeries(r, s) && r.bytes() == bytes && r.role() != Role.PEER;
    }

    /** Whether a row is of series {@code s}, under any variant ("label" or "label [knobs]"). */
    static boolean isSeries(final Row r, final Series s)
    {
        return r.series().equals(s.label()) || r.series().startsWith(s.label() + " [");
    }

    /** The variant part of a row's series name ("" for te4j's defaults). */
    static String variantOf(final Row r)
    {
        final int open = r.series().indexOf(" [");
        return open < 0 || !r.series().endsWith("]") ? "" : r.series().substring(open + 2, r.series().length() - 1);
    }

    private static void bulk(final List<String[]> t, final List<Row> rows)
    {
        final long gib = 1L << 30;
        final Optional<Row> ce = best(rows, is("cuda", Series.COPY_ENGINE, gib));
        final Optional<Row> le16 = best(rows, is("cuda", Series.TE4J_PUT, gib).and(r -> r.blocks() > 0 && r.blocks() <= 16));
        final Optional<Row> any = best(rows, is("cuda", Series.TE4J_PUT, gib));
        if (ce.isEmpty() || le16.isEmpty())
        {
            t.add(missing("1", "bulk put 1 GiB on <= 16 SMs vs copy engine",
                "--platform cuda --mode bandwidth --sizes 1G --blocks 16"));
            return;
        }
        t.add(new String[] {"1", "bulk put 1 GiB on <= 16 SMs vs copy engine",
            gbps(le16.get()) + " on " + engines(le16.get()) + where(le16.get()) + " vs " + gbps(ce.get()),
            ratio(le16.get().gbps() / ce.get().gbps()), ">= 0.98",
            met(le16.get().gbps() / ce.get().gbps() >= 0.98)});
        final Optional<Row> sm = best(rows, is("cuda", Series.TE4J_PUT, gib)
            .and(r -> r.blocks() > 0 && r.blocks() <= 16 && !usesCopyEngine(r)));
        sm.ifPresent(r -> t.add(new String[] {"1s", "  same, SM kernels only (no copy engine)",
            gbps(r) + " on " + r.shape() + where(r) + " vs " + gbps(ce.get()), ratio(r.gbps() / ce.get().gbps()),
            "evidence", "-"}));
        t.add(new String[] {"1b", "bulk put 1 GiB, best on any SM count", gbps(any.get()) + " on "
            + engines(any.get()) + where(any.get()), ratio(any.get().gbps() / ce.get().gbps()), ">= 1.0 (goal)",
            met(any.get().gbps() / ce.get().gbps() >= 1.0)});
    }

    private static void ratio64m(final List<String[]> t, final List<Row> rows)
    {
        final Predicate<Row> le16 = r -> r.blocks() > 0 && r.blocks() <= 16;
        final Optional<Row> m64 = best(rows, is("cuda", Series.TE4J_PUT, 64L << 20).and(le16));
        final Optional<Row> g1 = best(rows, is("cuda", Series.TE4J_PUT, 1L << 30).and(le16));
        if (m64.isEmpty() || g1.isEmpty())
        {
            t.add(missing("2", "put 64 MiB vs the 1 GiB figure", "--platform cuda --sizes 64M,1G --blocks 16"));
            return;
        }
        final double r = m64.get().gbps() / g1.get().gbps();
        t.add(new String[] {"2", "put 64 MiB vs the 1 GiB figure (<= 16 SMs)", gbps(m64.get()) + where(m64.get()) + " vs "
            + gbps(g1.get()),
            ratio(r), ">= 0.9", met(r >= 0.9)});
    }

    private static void latency(final List<String[]> t, final List<Row> rows, final String platform, final String n,
        final String what, final double goal)
    {
        final Optional<Row> te4j = best(rows, is(platform, Series.TE4J_PING_PONG, 8));
        final Optional<Row> raw = best(rows, is(platform, Series.RAW_FLAG, BenchPlan.FLAG_BYTES));
        if (te4j.isEmpty() || raw.isEmpty())
        {
            t.add(missing(n, what, "--platform " + platform + " --mode latency --latency-sizes 8"));
            return;
        }
        final double r = te4j.get().medianNs() / raw.get().medianNs();
        t.add(new String[] {n, what, us(te4j.get()) + " vs " + us(raw.get()) + where(te4j.get()), ratio(r),
            String.format(Locale.ROOT, "<= %.2f", goal), met(r <= goal)});
    }

    /**
     * The LL put (signal inside each data word, no fence) of 8 bytes beside the same raw flag:
     * the goal of its platform's target (3 or 7) for te4j's fence-free small-message path.
     */
    private static void llLatency(final List<String[]> t, final List<Row> rows, final String platform, final String n,
        final double goal)
    {
        final Optional<Row> ll = best(rows, is(platform, Series.TE4J_LL_PING_PONG, 8));
        final Optional<Row> raw = best(rows, is(platform, Series.RAW_FLAG, BenchPlan.FLAG_BYTES));
        if (ll.isEmpty() || raw.isEmpty())
        {
            return;
        }
        final double r = ll.get().medianNs() / raw.get().medianNs();
        t.add(new String[] {n, "  LL put(8 B) round trip (flag in each word) vs raw flag", us(ll.get()) + " vs "
            + us(raw.get()), ratio(r), String.format(Locale.ROOT, "<= %.2f", goal), met(r <= goal)});
    }

    /** The floor of a correctly ordered put+signal (data store, release, flag) beside the raw flag. */
    private static void floor(final List<String[]> t, final List<Row> rows, final String platform, final String n)
    {
        final Optional<Row> data = best(rows, is(platform, Series.RAW_FLAG_DATA, BenchPlan.FLAG_BYTES));
        final Optional<Row> raw = best(rows, is(platform, Series.RAW_FLAG, BenchPlan.FLAG_BYTES));
        final Optional<Row> te4j = best(rows, is(platform, Series.TE4J_PING_PONG, 8));
        if (data.isEmpty() || raw.isEmpty())
        {
            return;
        }
        t.add(new String[] {n, "  floor: raw put(8 B)+release flag vs raw flag" + (te4j.isPresent()
            ? String.format(Locale.ROOT, " (te4j / floor %.3f)", te4j.get().medianNs() / data.get().medianNs()) : ""),
            us(data.get()) + " vs " + us(raw.get()), ratio(data.get().medianNs() / raw.get().medianNs()), "evidence",
            "-"});
    }

    /**
     * What moved a put row's bytes: its launch shape, or the copy engine for put=ce (no SM at
     * all) and the shape plus the copy engine for put=cesm.
     */
    static String engines(final Row r)
    {
        if (variantOf(r).contains("put=cesm"))
        {
            return r.shape() + " + copy engine";
        }
        return usesCopyEngine(r) ? "the copy engine (0 SMs)" : r.shape();
    }

    /** put=auto's copy-engine threshold for P2P routes (te4j/tuning.h, cuda_op_stream.cu). */
    static final long AUTO_COPY_ENGINE_BYTES = 32L << 20;

    /** Whether a CUDA put row's body went (wholly or partly) through the copy engine. */
    static boolean usesCopyEngine(final Row r)
    {
        final String v = variantOf(r);
        if (v.contains("put=ce"))
        {
            return true;
        }
        final boolean auto = !v.contains("put=") || v.contains("put=auto");
        return auto && r.platform().equals("cuda") && r.bytes() >= AUTO_COPY_ENGINE_BYTES;
    }

    /** " (variant)" of a te4j row chosen as best, when it is not the default. */
    private static String where(final Row r)
    {
        final String v = variantOf(r);
        return v.isEmpty() ? "" : " [" + v + "]";
    }

    private static void javaPerOp(final List<String[]> t, final List<Row> rows)
    {
        final Optional<Row> java = best(rows, is("cuda", Series.TE4J_RATE_JAVA, 64L << 10)
            .or(is("cuda", Series.TE4J_RATE_GRAPH, 64L << 10)));
        if (java.isEmpty())
        {
            t.add(missing("4", "64 KiB put+signal from Java, per op, vs NVSHMEM putmem_on_stream",
                "--platform cuda --mode rate --rate-sizes 64K"));
            return;
        }
        final Optional<Row> peer = rows.stream().filter(r -> r.role() == Role.PEER && r.bytes() == 64L << 10
            && r.series().contains("putmem_on_stream")).findFirst();
        final double nv = peer.map(r -> r.medianNs() / 1000).orElse(NVSHMEM_64K_REFERENCE_US);
        final double r = java.get().medianNs() / 1000 / nv;
        t.add(new String[] {"4", "64 KiB put+signal from Java, per op, vs NVSHMEM putmem_on_stream",
            us(java.get()) + " (" + java.get().series() + ", " + java.get().shape() + ") vs "
                + String.format(Locale.ROOT, "%.3f us", nv)
                + (peer.isPresent() ? " (peer, this run)" : " (reference figure, another run)"),
            ratio(r), "<= 1.0", met(r <= 1.0)});
    }

    private static void javaVsCpp(final List<String[]> t, final List<Row> rows)
    {
        final Optional<Row> java = best(rows, is("cuda", Series.TE4J_RATE_JAVA, 64L << 10));
        Optional<Row> cpp = Optional.empty();
        if (java.isPresent())
        {
            final Row j = java.get();
            cpp = best(rows, is("cuda", Series.TE4J_RATE_CPP, 64L << 10).and(r -> sameLoop(j, r)));
        }
        if (java.isEmpty() || cpp.isEmpty())
        {
            t.add(missing("5", "Java-launched op rate vs the same loop in C++",
                "--platform cuda --mode rate --rate-sizes 64K"));
            return;
        }
        final double r = java.get().opsPerSecond() / cpp.get().opsPerSecond();
        t.add(new String[] {"5", "Java-launched op rate vs the same loop in C++ (64 KiB, fastest Java loop)",
            mops(java.get()) + " vs " + mops(cpp.get()) + " on " + java.get().shape() + where(java.get()), ratio(r),
            ">= 0.95", met(r >= 0.95)});
        // The same ratio for every variant and shape that has both loops: the JNI cost at each op rate.
        for (final Row j : rows)
        {
            if (j == java.get() || !j.ok() || !j.platform().equals("cuda") || !isSeries(j, Series.TE4J_RATE_JAVA)
                || j.bytes() != 64L << 10)
            {
                continue;
            }
            best(rows, is("cuda", Series.TE4J_RATE_CPP, 64L << 10).and(c -> sameLoop(j, c))).ifPresent(c -> t.add(new String[] {"5.",
                    "  same, " + j.shape() + where(j), mops(j) + " vs " + mops(c),
                    ratio(j.opsPerSecond() / c.opsPerSecond()), ">= 0.95", met(j.opsPerSecond() / c.opsPerSecond() >= 0.95)}));
        }
    }

    /**
     * Whether C++ row c is the twin of Java row j: same launch shape, variant, batch and sample
     * count, i.e. measured by the same te4j-bench step. A run of several steps (scripts/perf-gpu.sh)
     * has rate rows in more than one; pairing across steps would compare two moments of the host's
     * launch jitter instead of Java with C++.
     */
    static boolean sameLoop(final Row j, final Row c)
    {
        return c.blocks() == j.blocks() && variantOf(c).equals(variantOf(j)) && c.batch() == j.batch()
            && c.samples() == j.samples();
    }

    private static void hostBandwidth(final List<String[]> t, final List<Row> rows)
    {
        // Per variant the worst size >= 1 MiB against memcpy of that size; then the best variant.
        final java.util.Map<String, double[]> worstOf = new java.util.LinkedHashMap<>();
        final java.util.Map<String, String> whereOf = new java.util.HashMap<>();
        for (final Row te4j : rows)
        {
            if (!te4j.ok() || !te4j.platform().equals("host") || !isSeries(te4j, Series.TE4J_PUT)
                || te4j.bytes() < (1L << 20))
            {
                continue;
            }
            final Optional<Row> mc = best(rows, is("host", Series.MEMCPY, te4j.bytes()));
            if (mc.isPresent())
            {
                final double r = te4j.gbps() / mc.get().gbps();
                final String v = variantOf(te4j);
                final double[] w = worstOf.computeIfAbsent(v, x -> new double[] {Double.MAX_VALUE});
                if (r < w[0])
                {
                    w[0] = r;
                    whereOf.put(v, Sizes.format(te4j.bytes()) + ": " + gbps(te4j) + " vs " + gbps(mc.get())
                        + (v.isEmpty() ? "" : " [" + v + "]"));
                }
            }
        }
        if (worstOf.isEmpty())
        {
            t.add(missing("6", "host put >= 1 MiB vs single-thread memcpy",
                "--platform host --mode bandwidth --sizes 1M,16M,64M"));
            return;
        }
        String bestVariant = null;
        for (final String v : worstOf.keySet())
        {
            if (bestVariant == null || worstOf.get(v)[0] > worstOf.get(bestVariant)[0])
            {
                bestVariant = v;
            }
        }
        final double worst = worstOf.get(bestVariant)[0];
        t.add(new String[] {"6", "host put >= 1 MiB vs single-thread memcpy (worst size, best variant)",
            whereOf.get(bestVariant), ratio(worst), ">= 0.9", met(worst >= 0.9)});
    }

    private static String[] missing(final String n, final String what, final String how)
    {
        return new String[] {n, what, "not measured in this run (needs " + how + ")", "-", "-", "-"};
    }

    private static String gbps(final Row r)
    {
        return String.format(Locale.ROOT, "%.1f GB/s", r.gbps());
    }

    private static String us(final Row r)
    {
        return String.format(Locale.ROOT, "%.3f us", r.medianNs() / 1000);
    }

    private static String mops(final Row r)
    {
        return String.format(Locale.ROOT, "%.3f Mop/s", r.opsPerSecond() / 1e6);
    }

    private static String ratio(final double r)
    {
        return String.format(Locale.ROOT, "%.3f", r);
    }

    private static String met(final boolean ok)
    {
        return ok ? "yes" : "NO";
    }
}
