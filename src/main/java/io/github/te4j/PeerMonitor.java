package io.github.te4j;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Liveness of the peer processes of one window. P2P peers always run on this host (the import
 * checks the host identity), and every handle names its owner's pid ({@link IpcHandle#ownerPid()},
 * both platforms), so a peer is alive while {@code /proc/<pid>} shows the same process (start
 * time taken at import, which defeats pid reuse) and it is not a zombie.
 *
 * <p>Blocked waits consult it between slices ({@link SlicedWait}): a stream waiting on work that
 * involves a lost peer fails with {@link PeerLostException} within one check interval instead of
 * running out its full timeout. Interval: {@code -Dte4j.peerCheckMillis} (default 100 ms).
 */
final class PeerMonitor
{
    /** How often blocked waits look at peers; detection latency is about one interval. */
    static final long CHECK_NANOS = Math.max(1, Long.getLong("te4j.peerCheckMillis", 100)) * 1_000_000L;

    private static final PeerMonitor NONE = new PeerMonitor(new int[0], new long[0]);

    private final int[] pids;
    private final long[] startTimes;

    private PeerMonitor(final int[] pids, final long[] startTimes)
    {
        this.pids = pids;
        this.startTimes = startTimes;
    }

    /** Watches the owners of the active ranks' handles other than {@code rank} and this process. */
    static PeerMonitor of(final List<IpcHandle> handles, final int rank, final long mask)
    {
        if (handles == null)
        {
            return NONE;
        }
        final int n = handles.size();
        final int[] pids = new int[n];
        final long[] starts = new long[n];
        final long self = ProcessHandle.current().pid();
        for (int r = 0; r < n && r < 64; r++)
        {
            final IpcHandle h = handles.get(r);
            if (r == rank || (mask & (1L << r)) == 0 || h == null)
            {
                continue;
            }
            final int pid = h.ownerPid();
            if (pid <= 0 || pid == self)
            {
                continue;
            }
            final long start = startTime(pid);
            if (start >= 0)
            {
                pids[r] = pid;
                starts[r] = start;
            }
        }
        return new PeerMonitor(pids, starts);
    }

    /** Throws {@link PeerLostException} naming the first watched peer that is gone. */
    void check(final String waitingFor)
    {
        for (int r = 0; r < pids.length; r++)
        {
            if (pids[r] != 0 && startTime(pids[r]) != startTimes[r])
            {
                throw new PeerLostException("peer lost while waiting for " + waitingFor + ": rank " + r + " (pid "
                    + pids[r] + ") has exited (fix: close this stream and the contexts that include rank " + r
                    + ", then re-import the remaining ranks with a new active-ranks mask, or exit)");
            }
        }
    }

    /** Start time (clock ticks since boot, field 22 of /proc/pid/stat) of a live process; -1 if gone or a zombie. */
    static long startTime(final int pid)
    {
        final String stat;
        try
        {
            stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
        }
        catch (final IOException | RuntimeException e)
        {
            return -1;
        }
        // The command name (field 2) may hold spaces or ')': fields after the last ')' are safe to split.
        final int paren = stat.lastIndexOf(')');
        if (paren < 0)
        {
            return -1;
        }
        final String[] f = stat.substring(paren + 2).trim().split(" ");
        if (f.length < 20 || f[0].equals("Z") || f[0].equals("X"))
        {
            return -1;
        }
        try
        {
            return Long.parseLong(f[19]);
        }
        catch (final NumberFormatException e)
        {
            return -1;
        }
    }
}
