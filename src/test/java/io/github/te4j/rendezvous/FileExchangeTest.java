package io.github.te4j.rendezvous;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertNotNull;
import static org.testng.Assert.assertThrows;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.testng.annotations.AfterMethod;
import org.testng.annotations.BeforeMethod;
import org.testng.annotations.DataProvider;
import org.testng.annotations.Test;

public class FileExchangeTest
{

    private static final Duration LONG = Ranks.LONG;

    private Path dir;

    @BeforeMethod(alwaysRun = true)
    public void createDirectory() throws IOException
    {
        dir = Files.createTempDirectory("te4j-file-exchange");
    }

    @AfterMethod(alwaysRun = true)
    public void deleteDirectory() throws IOException
    {
        try (Stream<Path> all = Files.walk(dir))
        {
            for (Path p : all.sorted(Comparator.reverseOrder()).collect(Collectors.toList()))
            {
                Files.deleteIfExists(p);
            }
        }
    }

    private FileExchange.Builder builder(final int rank, final int n)
    {
        return FileExchange.builder().directory(dir).rank(rank).worldSize(n).pollInterval(Duration.ofMillis(5))
                .defaultTimeout(LONG);
    }

    private static List<String> names(final Path p) throws IOException
    {
        try (Stream<Path> s = Files.list(p))
        {
            return s.map(x -> x.getFileName().toString()).sorted().collect(Collectors.toList());
        }
    }

    @DataProvider
    public Object[][] worldSizes()
    {
        return new Object[][] {{2}, {4}, {8}};
    }

    @Test(dataProvider = "worldSizes", timeOut = 120_000)
    public void allGatherBarrierBroadcast(final int n) throws Exception
    {
        Ranks.runAll(n, r -> builder(r, n).build(), Ranks::exercise);
        // 3 x (gather + barrier) + the broadcast's gather = 7 collectives; the files of all but the last
        // were collected, and no temporary file is left behind.
        assertEquals(names(dir), List.of("op-000007-gather"));
        List<String> last = names(dir.resolve("op-000007-gather"));
        assertEquals(last.size(), n);
        for (int r = 0; r < n; r++)
        {
            assertTrue(last.contains("rank-" + r + ".bin"), last.toString());
        }
    }

    @Test(timeOut = 60_000)
    public void sessionUsesASubdirectory() throws Exception
    {
        Ranks.runAll(2, r -> builder(r, 2).session("job-7").build(), x ->
        {
            assertEquals(((FileExchange) x).directory(), dir.resolve("job-7"));
            Ranks.exercise(x);
        });
        assertEquals(names(dir), List.of("job-7"));
    }

    @Test(timeOut = 60_000)
    public void timeoutNamesTheMissingRank() throws Exception
    {
        int n = 3;
        List<Throwable> failures = Ranks.runCollect(2, r -> builder(r, n).build(),
                x -> x.allGather(new byte[] {(byte) x.rank()}, Duration.ofMillis(500)));
        for (int r = 0; r < 2; r++)
        {
            Throwable t = failures.get(r);
            assertTrue(t instanceof RendezvousTimeoutException, "rank " + r + " threw " + t);
            RendezvousTimeoutException e = (RendezvousTimeoutException) t;
            assertEquals(e.missingRanks(), List.of(2));
            assertTrue(e.getMessage().contains("allGather #1"), e.getMessage());
        }
    }

    @Test(timeOut = 30_000)
    public void barrierTimeoutNamesTheMissingRanks()
    {
        try (FileExchange x = builder(1, 4).build())
        {
            RendezvousTimeoutException e = expectThrows(RendezvousTimeoutException.class,
                    () -> x.barrier(Duration.ofMillis(200)));
            assertEquals(e.missingRanks(), List.of(0, 2, 3));
            RendezvousException later = expectThrows(RendezvousException.class, () -> x.barrier(LONG));
            assertTrue(later.getMessage().contains("unusable"), later.getMessage());
        }
    }

    @Test(timeOut = 30_000)
    public void staleOwnFileIsRefused() throws IOException
    {
        Path op = Files.createDirectories(dir.resolve(FileExchange.opDirName(1, FileExchange.KIND_BLOB)));
        Files.write(op.resolve("rank-0.bin"), new byte[] {1, 2, 3});
        try (FileExchange x = builder(0, 2).build())
        {
            RendezvousException e = expectThrows(RendezvousException.class, () -> x.allGather(new byte[0], LONG));
            assertTrue(e.getMessage().contains("stale"), e.getMessage());
        }
    }

    @Test(timeOut = 30_000)
    public void corruptPeerFileIsRejected() throws IOException
    {
        Path op = Files.createDirectories(dir.resolve(FileExchange.opDirName(1, FileExchange.KIND_BLOB)));
        Files.write(op.resolve("rank-1.bin"), "this is not a te4j blob file".getBytes());
        try (FileExchange x = builder(0, 2).build())
        {
            RendezvousException e = expectThrows(RendezvousException.class, () -> x.allGather(new byte[] {4}, LONG));
            assertTrue(e.peer().startsWith("rank 1"), e.peer());
            assertTrue(e.reason().contains("bad magic"), e.reason());
        }
    }

    @Test(timeOut = 30_000)
    public void oversizePeerFileIsRejected() throws IOException
    {
        Path op = Files.createDirectories(dir.resolve(FileExchange.opDirName(1, FileExchange.KIND_BLOB)));
        Files.write(op.resolve("rank-1.bin"), new byte[FileExchange.FILE_HEADER_BYTES + 2048]);
        try (FileExchange x = builder(0, 2).maxBlobBytes(1024).build())
        {
            RendezvousException e = expectThrows(RendezvousException.class, () -> x.allGather(new byte[] {4}, LONG));
            assertTrue(e.reason().contains("out of bounds"), e.reason());
            assertThrows(IllegalStateException.class, () ->
            {
                x.close();
                x.allGather(new byte[0], LONG);
            });
        }
    }

    @Test(timeOut = 60_000)
    public void worldSizeMismatchIsRejected() throws Exception
    {
        List<Throwable> failures = Ranks.runCollect(2, r -> builder(r, r == 0 ? 2 : 3).build(),
                x -> x.allGather(new byte[] {1}, Duration.ofSeconds(2)));
        Throwable t = failures.get(0);
        assertNotNull(t);
        assertTrue(t.getMessage().contains("worldSize mismatch"), t.toString());
    }

    @Test(timeOut = 10_000)
    public void invalidArgumentsAreRefused()
    {
        assertThrows(IllegalArgumentException.class, () -> FileExchange.builder().rank(0).worldSize(1).build());
        assertThrows(IllegalArgumentException.class, () -> builder(0, 0).build());
        assertThrows(IllegalArgumentException.class, () -> builder(0, 65).build());
        assertThrows(IllegalArgumentException.class, () -> builder(2, 2).build());
        assertThrows(IllegalArgumentException.class, () -> builder(0, 2).session("../escape"));
        assertThrows(IllegalArgumentException.class, () -> builder(0, 2).pollInterval(Duration.ZERO));
        try (FileExchange x = builder(0, 1).maxBlobBytes(4).build())
        {
            assertThrows(IllegalArgumentException.class, () -> x.allGather(new byte[5], LONG));
            assertThrows(IllegalArgumentException.class, () -> x.allGather(null, LONG));  // the package's null rule
            assertThrows(IllegalArgumentException.class, () -> x.barrier(Duration.ZERO));
            assertEquals(x.allGather(new byte[] {7}, LONG).get(0), new byte[] {7});
        }
    }
}
