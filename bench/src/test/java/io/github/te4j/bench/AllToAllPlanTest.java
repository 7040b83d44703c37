package io.github.te4j.bench;

import io.github.te4j.Platform;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.testng.Assert;
import org.testng.SkipException;
import org.testng.annotations.Test;

/**
 * --mode alltoall without running it: options, the plan, the window layout, the rows and the NCCL
 * comparison's parsing and skip path (no native code, no GPU).
 */
public class AllToAllPlanTest
{
    @Test
    public void optionsAndDefaults()
    {
        final BenchConfig c = BenchOptionsTest.parse("--mode", "alltoall", "--ranks", "8");
        Assert.assertEquals(c.modes(), EnumSet.of(Mode.ALLTOALL));
        Assert.assertEquals(c.sizes(Mode.ALLTOALL, Platform.HOST), List.of(4096L, 65536L, 1L << 20, 16L << 20));
        Assert.assertEquals(BenchOptionsTest.parse("--mode", "alltoall", "--a2a-sizes", "8,1M,8")
            .sizes(Mode.ALLTOALL, Platform.CUDA), List.of(8L, 1L << 20));
        // With one mode, --sizes are that mode's.
        Assert.assertEquals(BenchOptionsTest.parse("--mode", "alltoall", "--sizes", "4K")
            .sizes(Mode.ALLTOALL, Platform.HOST), List.of(4096L));
        // Not part of "all": default runs stay the pair modes.
        Assert.assertFalse(BenchOptionsTest.parse().modes().contains(Mode.ALLTOALL));
        Assert.assertFalse(BenchOptionsTest.parse("--mode", "all").modes().contains(Mode.ALLTOALL));
        Assert.assertEquals(BenchOptionsTest.parse("--mode", "all,alltoall").modes().size(), 4);
        Assert.assertEquals(BenchOptionsTest.parse("--nccl-python", "/x/python").ncclPython(), "/x/python");
        // One all-to-all per sample unless --batch says more.
        Assert.assertEquals(c.allToAllBatch(), 1);
        Assert.assertEquals(BenchOptionsTest.parse("--mode", "alltoall", "--batch", "5").allToAllBatch(), 5);
    }

    @Test
    public void badValuesAreRefusedWithTheReason()
    {
        for (final String[] args : new String[][] {{"--a2a-sizes", "7"}, {"--a2a-sizes", "2G"}, {"--a2a-sizes", "x"},
            {"--a2a-sizes", ",4K"}, {"--a2a-sizes", "0"}, {"--nccl-python", " "}})
        {
            final List<String> all = new ArrayList<>(List.of("--mode", "alltoall"));
            all.addAll(List.of(args));
            Assert.assertThrows("accepted " + all, IllegalArgumentException.class,
                () -> BenchOptionsTest.parse(all.toArray(new String[0])));
        }
        final IllegalArgumentException one = Assert.expectThrows(IllegalArgumentException.class,
            () -> BenchOptionsTest.parse("--mode", "alltoall", "--ranks", "1"));
        Assert.assertTrue(one.getMessage().contains("--mode alltoall needs --ranks 2 or more"), one.getMessage());
        Assert.assertEquals(BenchMain.run("--mode", "alltoall", "--ranks", "1"), BenchMain.EXIT_USAGE);
    }

    @Test
    public void planRunsTe4jBesideItsHostBaseline()
    {
        final BenchConfig c = BenchOptionsTest.parse("--mode", "alltoall", "--ranks", "4", "--a2a-sizes", "4K,1M",
            "--blocks", "16,0");
        final List<BenchCase> host = BenchPlan.of(c, Platform.HOST);
        Assert.assertEquals(host, List.of(new BenchCase(Series.TE4J_ALLTOALL, 4096, 1, 1),
            new BenchCase(Series.MEMCPY_ALLTOALL, 4096, 1, 1), new BenchCase(Series.TE4J_ALLTOALL, 1L << 20, 1, 1),
            new BenchCase(Series.MEMCPY_ALLTOALL, 1L << 20, 1, 1)));
        // On CUDA the comparison is NCCL's (--peers): te4j only, per launch shape.
        final List<BenchCase> cuda = BenchPlan.of(c, Platform.CUDA);
        Assert.assertEquals(cuda.size(), 4);
        Assert.assertTrue(cuda.stream().allMatch(k -> k.series() == Series.TE4J_ALLTOALL));
        Assert.assertEquals(BenchPlan.maxBlockBytes(cuda), 1L << 20);
        Assert.assertEquals(BenchPlan.maxBytes(cuda), Sizes.MIN_BYTES, "no pair cases: the pair regions stay small");
        // Over RDMA only te4j's all-to-all (the memcpy needs a P2P mapping).
        final BenchConfig rdma = BenchOptionsTest.parse("--mode", "alltoall", "--transport", "rdma-soft", "--ranks",
            "3", "--a2a-sizes", "4K");
        Assert.assertEquals(BenchPlan.of(rdma, Platform.HOST), List.of(new BenchCase(Series.TE4J_ALLTOALL, 4096, 1, 1)));
        // Launched ranks get the same plan.
        final BenchConfig child = BenchOptionsTest.parse(c.childArgs(Platform.HOST, 3, "127.0.0.1:1234", null)
            .toArray(new String[0]));
        Assert.assertEquals(BenchPlan.of(child, Platform.HOST), host);
        Assert.assertEquals(child.ranks, 4);
    }

    @Test
    public void layoutKeepsBlocksSlotsAndGuardsApart()
    {
        final WindowLayout l = new WindowLayout(1L << 20, 4, 5000);
        Assert.assertTrue(l.allToAllBlock(0) >= l.dst() + (1L << 20) + WindowLayout.GUARD, "after the pair regions");
        for (int r = 0; r < 4; r++)
        {
            Assert.assertEquals(l.allToAllBlock(r) % 4096, 0);
            Assert.assertEquals(l.allToAllSlot(r) % 4096, 0);
            final long next = r < 3 ? l.allToAllSlot(r + 1) : l.windowBytes();
            Assert.assertTrue(l.allToAllSlot(r) + 5000 + WindowLayout.GUARD <= next, "slot " + r + " and its guard");
            Assert.assertTrue(l.allToAllBlock(r) + 5000 <= l.allToAllSlot(0), "sources before the slots");
        }
        Assert.assertTrue(l.maxBlockBytes() >= 5000);
        Assert.assertTrue(WindowLayout.ALLTOALL_SIGNAL + 4 <= l.src(), "the signal word is a control word");
        Assert.assertThrows(IllegalArgumentException.class, () -> l.allToAllSlot(4));
        Assert.assertThrows(IllegalArgumentException.class, () -> l.allToAllBlock(-1));
        Assert.assertThrows(IllegalArgumentException.class, () -> new WindowLayout(8, 1, 4096));
        final WindowLayout pairOnly = new WindowLayout(1L << 20);
        Assert.assertEquals(pairOnly.maxBlockBytes(), 0);
        Assert.assertThrows(IllegalArgumentException.class, () -> pairOnly.allToAllSlot(0));
    }

    @Test
    public void rowsCarryTheirRanksAndBandwidthPerGpu()
    {
        final Row r = new Row(Mode.ALLTOALL, "te4j all-to-all", Role.TE4J, "cuda", 1L << 20, 16, 512, 1, 10, 7000.0,
            9000.0, null, "note", 8);
        Assert.assertEquals(r.gbps(), 7.0 * (1 << 20) / 7000.0, 1e-9, "(N-1) x size / time");
        final Row back = RowCodec.decode(RowCodec.encode(r));
        Assert.assertEquals(back.ranks(), 8);
        Assert.assertEquals(back.gbps(), r.gbps(), 1e-9);
        // Rows saved before the ranks field are pair rows.
        final String old = RowCodec.encode(new Row(Mode.BANDWIDTH, "te4j put", Role.TE4J, "host", 4096, 1, 1, 10, 3,
            100.0, 120.0, null, ""));
        Assert.assertEquals(RowCodec.decode(old.substring(0, old.lastIndexOf('\t'))).ranks(), 2);
        final String table = TableWriter.write(List.of(), List.of(r));
        Assert.assertTrue(table.contains("== all-to-all"), table);
        Assert.assertTrue(table.contains("8 ranks, 16x512"), table);
        Assert.assertTrue(CsvWriter.write(List.of(r)).split("\n")[1].endsWith(",8"));
        Assert.assertTrue(JsonWriter.write(List.of(), List.of(r)).contains("\"ranks\": 8"));
    }

    @Test
    public void ncclLinesBecomePeerRows()
    {
        final List<Row> rows = NcclAllToAll.parse("NCCL INFO something\n"
            + "nccl-a2a| N=4 size=4096 us=25.500 gbps=0.482\n"
            + "nccl-a2a| N=4 size=16777216 us=1000.000 gbps=50.332\n");
        Assert.assertEquals(rows.size(), 2);
        final Row big = rows.get(1);
        Assert.assertEquals(big.series(), NcclAllToAll.SERIES);
        Assert.assertEquals(big.role(), Role.PEER);
        Assert.assertEquals(big.mode(), Mode.ALLTOALL);
        Assert.assertEquals(big.ranks(), 4);
        Assert.assertEquals(big.bytes(), 16L << 20);
        Assert.assertEquals(big.medianNs(), 1e6, 1e-6);
        Assert.assertEquals(big.gbps(), 50.332, 0.001, "te4j-bench's GB/s per GPU is the script's");
    }

    @Test
    public void missingPythonIsOneInfoLineNotAFailure() throws Exception
    {
        final BenchConfig c = BenchOptionsTest.parse("--mode", "alltoall", "--nccl-python", "/nonexistent/python3");
        final ByteArrayOutputStream b = new ByteArrayOutputStream();
        final List<String> infos = new ArrayList<>();
        final List<Row> rows = NcclAllToAll.run(c, List.of(4096L), java.time.Duration.ofSeconds(30),
            new PrintStream(b, true, StandardCharsets.UTF_8), infos);
        Assert.assertTrue(rows.isEmpty());
        Assert.assertEquals(infos.size(), 1);
        Assert.assertTrue(infos.get(0).startsWith("NCCL all-to-all (torch) skipped: cannot start '/nonexistent/python3'"),
            infos.get(0));
        Assert.assertTrue(b.toString(StandardCharsets.UTF_8).contains("set --nccl-python"));
    }

    /** The script parses (python3 where there is one; torch is not needed for that). */
    @Test
    public void ncclScriptIsValidPython() throws Exception
    {
        final Path script = Path.of("peers", NcclAllToAll.SCRIPT);
        Assert.assertTrue(Files.isRegularFile(script), script.toAbsolutePath().toString());
        Assert.assertNotNull(NcclAllToAll.class.getResource(NcclAllToAll.SCRIPT), "the script must be in the jar");
        final String text = Files.readString(script);
        Assert.assertTrue(text.indexOf("NCCL_NVLS_ENABLE") < text.indexOf("import torch"),
            "multicast must be off before torch loads");
        final Process p;
        try
        {
            // ast.parse: a syntax check that writes no __pycache__ into the source tree.
            p = new ProcessBuilder("python3", "-c", "import ast, sys; ast.parse(open(sys.argv[1]).read(), sys.argv[1])",
                script.toString()).redirectErrorStream(true).start();
        }
        catch (final java.io.IOException e)
        {
            throw new SkipException("no python3 here: " + e.getMessage());
        }
        Assert.assertTrue(p.waitFor(60, TimeUnit.SECONDS), "python3 still running");
        Assert.assertEquals(p.exitValue(), 0, new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
    }
}
