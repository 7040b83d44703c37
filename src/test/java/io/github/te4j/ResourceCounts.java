package io.github.te4j;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * What a process holds that te4j could leak, read from /proc: open fds, threads (without the
 * JVM's own compiler and GC workers, whose number changes by itself), te4j shared-memory
 * mappings, and /dev/shm entries.
 */
final class ResourceCounts
{
    final int fds;
    final int threads;
    final int te4jMaps;
    final int shmEntries;

    private ResourceCounts(final int fds, final int threads, final int te4jMaps, final int shmEntries)
    {
        this.fds = fds;
        this.threads = threads;
        this.te4jMaps = te4jMaps;
        this.shmEntries = shmEntries;
    }

    static ResourceCounts now() throws IOException
    {
        final String[] fds = new File("/proc/self/fd").list();
        int threads = 0;
        final File[] tasks = new File("/proc/self/task").listFiles();
        for (final File t : tasks == null ? new File[0] : tasks)
        {
            final String comm;
            try
            {
                comm = Files.readString(t.toPath().resolve("comm")).trim();
            }
            catch (final IOException e)
            {
                continue;  // the thread ended while we looked
            }
            if (!comm.startsWith("C1 CompilerThre") && !comm.startsWith("C2 CompilerThre")
                && !comm.startsWith("GC Thread") && !comm.startsWith("G1 "))
            {
                threads++;
            }
        }
        final long maps = Files.readAllLines(Path.of("/proc/self/maps")).stream().filter(l -> l.contains("te4j-")).count();
        final String[] shm = new File("/dev/shm").list();
        return new ResourceCounts(fds == null ? 0 : fds.length, threads, (int)maps, shm == null ? 0 : shm.length);
    }

    /**
     * {@link #now()} once two readings 100 ms apart agree (at most ~5 s): a thread of an earlier
     * test that is still ending (a rendezvous connection, an output pump) must not count as a
     * change here.
     */
    static ResourceCounts settled() throws IOException, InterruptedException
    {
        ResourceCounts last = now();
        for (int i = 0; i < 50; i++)
        {
            Thread.sleep(100);
            final ResourceCounts next = now();
            if (next.toString().equals(last.toString()))
            {
                return next;
            }
            last = next;
        }
        return last;
    }

    @Override
    public String toString()
    {
        return "fds=" + fds + " threads=" + threads + " te4jMaps=" + te4jMaps + " shm=" + shmEntries;
    }
}
