package io.github.te4j;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.testng.Assert;
import org.testng.annotations.Test;

/**
 * Issue 6, target 5 (host platform): an imported handle maps exactly the segment its owner
 * exported. Handles forged to name another fd, another token, a bigger size or another process
 * are refused with {@link BadHandleException}; a real import maps exactly the exported size.
 * The software NIC's side (foreign keys, out-of-range WQEs) is src/test/cpp/test_rdma_wqe_fuzz.cpp,
 * run under ASan/UBSan and TSan by scripts/sanitize.sh; the rendezvous side is RendezvousTest.
 */
public class ConfinementTest
{
    /** The control page every host segment has after its user bytes: one 4 KiB page on x86-64. */
    private static final long CONTROL_PAGE = 4096;

    private static final long SIZE = 1 << 16;

    /** The blob of rank 0's real handle, and of another segment of the same owner (read only). */
    private interface Forge
    {
        void apply(int[] blob, int[] other);
    }

    /**
     * Rank 1 (its buffer {@code localSize} B) imports rank 0's handle after {@code forge} rewrote
     * the blob, which claims {@code claimedSize}. The import must throw BadHandleException.
     */
    private static void forge(final String what, final long localSize, final long claimedSize, final Forge forge)
    {
        try (TransferEngine e0 = TransferEngine.builder().build(); TransferEngine e1 = TransferEngine.builder().build())
        {
            final P2pTransport t0 = e0.getOrCreateP2pTransport(2);
            final P2pTransport t1 = e1.getOrCreateP2pTransport(2);
            final DeviceBuffer b0 = t0.allocateBuffer(SIZE);
            final DeviceBuffer other = t0.allocateBuffer(SIZE + 4096);
            final DeviceBuffer b1 = t1.allocateBuffer(localSize);
            final IpcHandle real = t0.exportHandle(b0);
            final int[] blob = real.blob();
            forge.apply(blob, t0.exportHandle(other).blob());
            final IpcHandle forged = IpcHandle.ofBlob(blob);
            Assert.assertEquals(forged.bufferSize(), claimedSize, what + ": the forged blob's size");
            final BadHandleException ex = Assert.expectThrows(BadHandleException.class,
                () -> t1.importPeerHandles(b1, 1, Arrays.asList(forged, t1.exportHandle(b1)), 3));
            System.out.println(what + " refused: " + ex.getMessage());
        }
    }

    @Test(groups = "host", timeOut = 60_000)
    public void forgedHandlesAreRefused() throws Exception
    {
        final int n = ForgedHandles.INTS;
        // The owner's other te4j segment (right fd, wrong token), and the token of that segment with our fd.
        forge("another fd of the owner", SIZE, SIZE, (blob, other) -> blob[ForgedHandles.FD] = other[ForgedHandles.FD]);
        forge("another token", SIZE, SIZE, (blob, other) -> blob[ForgedHandles.TOKEN] ^= 1);
        forge("fd and token of a different-size segment", SIZE, SIZE, (blob, other) ->
            System.arraycopy(other, ForgedHandles.FD, blob, ForgedHandles.FD, n - ForgedHandles.FD));
        // Claims more than was exported: the importer checks the segment's real size and seals.
        forge("a bigger size", 2 * SIZE, 2 * SIZE, (blob, other) ->
        {
            blob[ForgedHandles.SIZE_LO] = (int)(2 * SIZE);
            blob[ForgedHandles.SIZE_HI] = 0;
        });
        // Another process of ours and one of its fds: not a te4j segment of that name.
        final Process stranger = startSleeper();
        try
        {
            forge("another process's fd", SIZE, SIZE, (blob, other) ->
            {
                blob[ForgedHandles.PID] = (int)stranger.pid();
                blob[ForgedHandles.FD] = 0;
            });
        }
        finally
        {
            stranger.destroyForcibly();
        }
        forge("a non-existent fd", SIZE, SIZE, (blob, other) -> blob[ForgedHandles.FD] = 1 << 20);
        // The owner's pid exchanged for one of its threads' ids: /proc shows the same fd table
        // there, so only the importer's check that the pid is a process tells them apart.
        final int thread = aThreadOfThisProcess();
        forge("a thread id for the owner's pid", SIZE, SIZE, (blob, other) -> blob[ForgedHandles.PID] = thread);
    }

    private static int aThreadOfThisProcess() throws java.io.IOException
    {
        final long self = ProcessHandle.current().pid();
        try (java.util.stream.Stream<Path> tasks = Files.list(Path.of("/proc/self/task")))
        {
            return tasks.mapToInt(t -> Integer.parseInt(t.getFileName().toString())).filter(t -> t != self)
                .findFirst().orElseThrow(() -> new IllegalStateException("a JVM with one thread"));
        }
    }

    private static Process startSleeper()
    {
        try
        {
            return new ProcessBuilder("sleep", "60").start();
        }
        catch (final java.io.IOException e)
        {
            throw new IllegalStateException("cannot start sleep", e);
        }
    }

    @Test(groups = "host", timeOut = 60_000)
    public void importMapsExactlyTheExportedSegment() throws Exception
    {
        try (HostInProcessTest.Pair p = new HostInProcessTest.Pair(Platform.HOST, SIZE + 4096))
        {
            final int[] blob = p.engines[0].getOrCreateP2pTransport(2).exportHandle(p.windows[0]).blob();
            final String token = String.format("%08x%08x%08x%08x", blob[ForgedHandles.TOKEN],
                blob[ForgedHandles.TOKEN + 1], blob[ForgedHandles.TOKEN + 2], blob[ForgedHandles.TOKEN + 3]);
            final List<String> maps = Files.readAllLines(Path.of("/proc/self/maps"));
            long mapped = 0;
            int count = 0;
            for (final String line : maps)
            {
                if (line.contains("te4j-" + token))
                {
                    final String[] range = line.substring(0, line.indexOf(' ')).split("-");
                    mapped = Long.parseUnsignedLong(range[1], 16) - Long.parseUnsignedLong(range[0], 16);
                    count++;
                    // The segment's user bytes and, after them, its control page (the count of
                    // waiters parked on its words, host_p2p_transport.h): nothing else.
                    Assert.assertEquals(mapped, SIZE + 4096 + CONTROL_PAGE, "a mapping of rank 0's segment: " + line);
                }
            }
            // Rank 0's own mapping plus rank 1's import of it: both exactly the exported size
            // and the control page.
            Assert.assertEquals(count, 2, "mappings of rank 0's segment");
        }
    }
}
