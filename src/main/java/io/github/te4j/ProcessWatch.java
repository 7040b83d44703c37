package io.github.te4j;

import io.github.te4j.internal.NativeApi;

/**
 * Whether one peer process (a segment's owner) has exited, cheap enough to ask at every batch
 * submit: a pidfd polled without waiting (about a microsecond) where reading the owner's
 * {@code /proc/<pid>/stat} costs tens of microseconds. The start time taken when the watch opens
 * still guards against a pid that was reused before it opened; on a kernel without pidfds
 * (Linux before 5.3) the watch falls back to comparing that start time at each question.
 */
final class ProcessWatch implements AutoCloseable
{
    private final int pid;
    private final long startTime;
    private int fd;  // the pidfd, or -1 (none on this kernel, or closed): guarded by this

    private ProcessWatch(final int pid, final long startTime, final int fd)
    {
        this.pid = pid;
        this.startTime = startTime;
        this.fd = fd;
    }

    /** Watches {@code pid}, the process running now under that number. */
    static ProcessWatch of(final int pid)
    {
        final int fd = NativeApi.processWatchOpen(pid);
        // Taken after the pidfd: both name the same process unless it exited in between, which
        // the start time then reports (-1, or another process's).
        return new ProcessWatch(pid, PeerMonitor.startTime(pid), Math.max(fd, -1));
    }

    /** Whether the process watched has exited (or never ran when the watch opened). */
    synchronized boolean exited()
    {
        if (startTime < 0)
        {
            return true;
        }
        if (fd >= 0)
        {
            final int st = NativeApi.processWatchExited(fd);
            if (st >= 0)
            {
                return st == 1;
            }
        }
        return PeerMonitor.startTime(pid) != startTime;
    }

    int pid()
    {
        return pid;
    }

    @Override
    public synchronized void close()
    {
        NativeApi.processWatchClose(fd);
        fd = -1;
    }
}
