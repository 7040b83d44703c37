package io.github.te4j.rendezvous;

import io.github.te4j.exchange.Deadline;
import io.github.te4j.exchange.HandleExchange;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A handle exchange through a directory that all ranks share (a local directory for one host, or
 * a shared file system): no network, no threads. Each collective gets its own subdirectory, in
 * which every rank publishes one file atomically (written to a hidden temporary file, forced to
 * disk, then renamed) and then polls, bounded by the timeout, until all {@code worldSize} files
 * exist:
 * <pre>
 *   directory/[session/]op-000001-gather/rank-0.bin, rank-1.bin, ...   allGather #1
 *   directory/[session/]op-000002-barrier/rank-0.done, rank-1.done, ... barrier #2
 * </pre>
 * Each file holds a header and the blob, integers big-endian:
 * <pre>
 *   0        4        6    7    8        12       16       20       24
 *   +--------+--------+----+----+--------+--------+--------+--------+-----------+
 *   | magic  |version |kind|rsvd|  rank  |  seq   | world  | length |  blob ... |
 *   | "TE4F" |   1    |1/2 | 0  |        | op no. |  size  | bytes  |           |
 *   +--------+--------+----+----+--------+--------+--------+--------+-----------+
 * </pre>
 * kind 1 is a gather blob, kind 2 a barrier marker (no blob). A reader checks every field against
 * the file's name and its own configuration and rejects a mismatch with a
 * {@link RendezvousException}.
 *
 * <p>Garbage collection: once collective #k has completed on a rank, every rank has finished
 * reading the files of #k-1 (a rank publishes #k only after it finished #k-1), so the rank then
 * deletes its own file of #k-1. The files of the last collective stay after {@link #close()}
 * because other ranks may still be reading them; the directory belongs to the caller. Use a fresh
 * directory, or a {@link Builder#session} unique to the job: a rank that finds its own file
 * already present refuses it as stale, but it cannot tell a stale file of another rank from a
 * fresh one.
 *
 * <p>This exchange cannot notice a rank that died: a missing rank shows as a
 * {@link RendezvousTimeoutException} naming it.
 *
 * @since 0.1
 */
public final class FileExchange implements HandleExchange
{

    /** "TE4F". */
    static final int FILE_MAGIC = 0x54453446;
    static final short FILE_VERSION = 1;
    static final int FILE_HEADER_BYTES = 24;
    static final byte KIND_BLOB = 1;
    static final byte KIND_BARRIER = 2;

    private static final Logger LOG = LoggerFactory.getLogger(FileExchange.class);
    private static final Pattern SESSION_NAME = Pattern.compile("[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}");

    private final int rank;
    private final int worldSize;
    private final Path base;
    private final Duration defaultTimeout;
    private final long maxPollNanos;
    private final int maxBlobBytes;

    private final Object opLock = new Object();
    private int seq;
    private Path previousOwnFile;
    private volatile RendezvousException failure;
    private final AtomicBoolean closed = new AtomicBoolean();

    private FileExchange(final Builder b)
    {
        this.rank = b.rank;
        this.worldSize = b.worldSize;
        this.base = b.session == null ? b.directory : b.directory.resolve(b.session);
        this.defaultTimeout = b.defaultTimeout;
        this.maxPollNanos = Deadline.toNanos(b.pollInterval);
        this.maxBlobBytes = b.maxBlobBytes;
        try
        {
            Files.createDirectories(base);
        }
        catch (IOException e)
        {
            throw new RendezvousException(base.toString(), "cannot create the exchange directory: " + e, e);
        }
        LOG.debug("file exchange rank {}/{} in {}", rank, worldSize, base);
    }

    /**
     * A builder of a file exchange.
     *
     * @return a new builder
     * @since 0.1
     */
    public static Builder builder()
    {
        return new Builder();
    }

    @Override
    public int rank()
    {
        return rank;
    }

    @Override
    public int worldSize()
    {
        return worldSize;
    }

    @Override
    public Duration defaultTimeout()
    {
        return defaultTimeout;
    }

    /**
     * Where this exchange keeps its files.
     *
     * @return the directory this exchange's collectives live in (the session subdirectory if one is set)
     * @since 0.1
     */
    public Path directory()
    {
        return base;
    }

    @Override
    public List<byte[]> allGather(final byte[] mine, final Duration timeout)
    {
        BuilderChecks.notNull(mine, "mine");
        if (mine.length > maxBlobBytes)
        {
            throw new IllegalArgumentException("blob of " + mine.length + " bytes exceeds the limit of "
                    + maxBlobBytes + " bytes");
        }
        return collective(KIND_BLOB, mine, timeout);
    }

    @Override
    public void barrier(final Duration timeout)
    {
        collective(KIND_BARRIER, new byte[0], timeout);
    }

    /** Marks this exchange closed. Files are left in place: other ranks may still read them. */
    @Override
    public void close()
    {
        closed.set(true);
    }

    @Override
    public String toString()
    {
        return "FileExchange[rank " + rank + "/" + worldSize + ", " + base + "]";
    }

    static String opDirName(final int seq, final byte kind)
    {
        return String.format("op-%06d-%s", seq, kind == KIND_BARRIER ? "barrier" : "gather");
    }

    static String fileName(final int r, final byte kind)
    {
        return "rank-" + r + (kind == KIND_BARRIER ? ".done" : ".bin");
    }

    private List<byte[]> collective(final byte kind, final byte[] mine, final Duration timeout)
    {
        BuilderChecks.notNull(timeout, "timeout");
        if (timeout.isNegative() || timeout.isZero())
        {
            throw new IllegalArgumentException("timeout must be positive: " + timeout);
        }
        long deadline = Deadline.after(timeout).nanoTime();
        synchronized (opLock)
        {
            if (closed.get())
            {
                throw new IllegalStateException("file exchange is closed");
            }
            RendezvousException earlier = failure;
            if (earlier != null)
            {
                throw new RendezvousException(null, "file exchange is unusable after an earlier failure: "
                        + earlier.getMessage(), earlier);
            }
            int s = ++seq;
            String what = (kind == KIND_BARRIER ? "barrier" : "allGather") + " #" + s;
            Path opDir = base.resolve(opDirName(s, kind));
            try
            {
                Files.createDirectories(opDir);
                Path own = opDir.resolve(fileName(rank, kind));
                publish(own, encode(kind, s, mine));
                awaitAll(opDir, kind, deadline, timeout, what);
                List<byte[]> result = kind == KIND_BLOB ? readAll(opDir, s) : List.of();
                collectGarbage(own);
                return result;
            }
            catch (IOException e)
            {
                RendezvousException re = new RendezvousException(opDir.toString(), what + " failed: " + e, e);
                failure = re;
                throw re;
            }
            catch (RendezvousException e)
            {
                failure = e;
                throw e;
            }
        }
    }

    private byte[] encode(final byte kind, final int s, final byte[] blob)
    {
        ByteBuffer b = ByteBuffer.allocate(FILE_HEADER_BYTES + blob.length);
        b.putInt(FILE_MAGIC).putShort(FILE_VERSION).put(kind).put((byte) 0);
        b.putInt(rank).putInt(s).putInt(worldSize).putInt(blob.length).put(blob);
        return b.array();
    }

    /** Writes to a hidden temporary file, forces it, then renames: readers never see a partial file. */
    private void publish(final Path target, final byte[] content) throws IOException
    {
        if (Files.exists(target))
        {
            throw new RendezvousException(target.toString(), "already exists: a stale file from an earlier run, "
                    + "or another process claims rank " + rank + "; use a fresh directory or session");
        }
        Path tmp = target.resolveSibling("." + target.getFileName() + "." + ProcessHandle.current().pid() + "."
                + System.nanoTime() + ".tmp");
        try
        {
            try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE))
            {
                ByteBuffer buf = ByteBuffer.wrap(content);
                while (buf.hasRemaining())
                {
                    ch.write(buf);
                }
                ch.force(true);
            }
            Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE);
        }
        catch (AtomicMoveNotSupportedException e)
        {
            throw new RendezvousException(target.toString(), "the file system cannot rename atomically", e);
        }
        finally
        {
            Files.deleteIfExists(tmp);
        }
    }

    private void awaitAll(final Path opDir, final byte kind, final long deadline, final Duration timeout, final String what)
    {
        List<Integer> missing = new ArrayList<>();
        for (int r = 0; r < worldSize; r++)
        {
            missing.add(r);
        }
        long pollNanos = TimeUnit.MILLISECONDS.toNanos(1);
        while (true)
        {
            missing.removeIf(r -> Files.isRegularFile(opDir.resolve(fileName(r, kind))));
            if (missing.isEmpty())
            {
                return;
            }
            long left = deadline - System.nanoTime();
            if (left <= 0)
            {
                throw new RendezvousTimeoutException(opDir.toString(), what, missing, timeout);
            }
            try
            {
                TimeUnit.NANOSECONDS.sleep(Math.min(pollNanos, left));
            }
            catch (InterruptedException e)
            {
                Thread.currentThread().interrupt();
                throw new RendezvousException(opDir.toString(), "interrupted while waiting for " + what, e);
            }
            // Back off towards the configured interval: fast when ranks are close, cheap when not.
            pollNanos = Math.min(pollNanos * 2, maxPollNanos);
        }
    }

    private List<byte[]> readAll(final Path opDir, final int s) throws IOException
    {
        byte[][] out = new byte[worldSize][];
        for (int r = 0; r < worldSize; r++)
        {
            Path f = opDir.resolve(fileName(r, KIND_BLOB));
            long size = Files.size(f);
            if (size < FILE_HEADER_BYTES || size > FILE_HEADER_BYTES + (long) maxBlobBytes)
            {
                throw new RendezvousException("rank " + r + " (" + f + ")", "file size " + size
                        + " out of bounds (header " + FILE_HEADER_BYTES + ", blob limit " + maxBlobBytes + ")");
            }
            out[r] = decode(Files.readAllBytes(f), r, s, KIND_BLOB, "rank " + r + " (" + f + ")");
        }
        return Collections.unmodifiableList(Arrays.asList(out));
    }

    private byte[] decode(final byte[] content, final int r, final int s, final byte kind, final String peer)
    {
        if (content.length < FILE_HEADER_BYTES)
        {
            throw new RendezvousException(peer, "file shorter than its header");
        }
        ByteBuffer b = ByteBuffer.wrap(content);
        int magic = b.getInt();
        if (magic != FILE_MAGIC)
        {
            throw new RendezvousException(peer, String.format("bad magic 0x%08x (expected 0x%08x)", magic, FILE_MAGIC));
        }
        short version = b.getShort();
        if (version != FILE_VERSION)
        {
            throw new RendezvousException(peer, "unsupported file version " + version);
        }
        byte k = b.get();
        byte reserved = b.get();
        if (k != kind || reserved != 0)
        {
            throw new RendezvousException(peer, "wrong kind " + k + " or reserved byte " + reserved);
        }
        int fileRank = b.getInt();
        int fileSeq = b.getInt();
        int fileWorld = b.getInt();
        int length = b.getInt();
        if (fileRank != r)
        {
            throw new RendezvousException(peer, "file claims rank " + fileRank);
        }
        if (fileSeq != s)
        {
            throw new RendezvousException(peer, "sequence mismatch: file is for op #" + fileSeq + ", expected #" + s);
        }
        if (fileWorld != worldSize)
        {
            throw new RendezvousException(peer, "worldSize mismatch: file says " + fileWorld + ", this rank has "
                    + worldSize);
        }
        if (length != b.remaining())
        {
            throw new RendezvousException(peer, "length field " + length + " but " + b.remaining() + " blob bytes");
        }
        byte[] blob = new byte[length];
        b.get(blob);
        return blob;
    }

    /** Deletes this rank's file of the previous collective, which every rank has finished reading. */
    private void collectGarbage(final Path ownCurrent)
    {
        Path prev = previousOwnFile;
        previousOwnFile = ownCurrent;
        if (prev == null)
        {
            return;
        }
        try
        {
            Files.deleteIfExists(prev);
            Files.delete(prev.getParent());
        }
        catch (DirectoryNotEmptyException | NoSuchFileException e)
        {
            // other ranks' files are still there, or another rank removed the directory first
        }
        catch (IOException e)
        {
            LOG.debug("file exchange rank {} could not clean {}: {}", rank, prev, e.toString());
        }
    }

    /**
     * Configuration of a {@link FileExchange}. Not thread-safe.
     *
     * @since 0.1
     */
    public static final class Builder
    {
        private Path directory;
        private int rank = -1;
        private int worldSize = -1;
        private String session;
        private Duration defaultTimeout = Duration.ofSeconds(60);
        private Duration pollInterval = Duration.ofMillis(50);
        private int maxBlobBytes = Rendezvous.DEFAULT_MAX_FRAME_BYTES;

        private Builder()
        {
        }

        /**
         * Sets the shared directory; required.
         *
         * @param directory the directory shared by all ranks (created if missing)
         * @return this builder
         * @since 0.1
         */
        public Builder directory(final Path directory)
        {
            this.directory = BuilderChecks.notNull(directory, "directory");
            return this;
        }

        /**
         * Sets this process's rank; required.
         *
         * @param rank this process's rank, {@code 0 <= rank < worldSize}
         * @return this builder
         * @since 0.1
         */
        public Builder rank(final int rank)
        {
            this.rank = rank;
            return this;
        }

        /**
         * Sets the number of ranks; required.
         *
         * @param worldSize number of ranks, 1..{@value Rendezvous#MAX_WORLD_SIZE}
         * @return this builder
         * @since 0.1
         */
        public Builder worldSize(final int worldSize)
        {
            this.worldSize = worldSize;
            return this;
        }

        /**
         * Sets the job's session: a subdirectory, so that jobs can share one directory.
         *
         * @param session a subdirectory name unique to the job (letters, digits, '.', '_', '-'; at most 64),
         *                or null to use the directory itself
         * @return this builder
         * @throws IllegalArgumentException when {@code session} does not match that pattern
         * @since 0.1
         */
        public Builder session(final String session)
        {
            if (session != null && !SESSION_NAME.matcher(session).matches())
            {
                throw new IllegalArgumentException("session must match " + SESSION_NAME + ": '" + session + "'");
            }
            this.session = session;
            return this;
        }

        /**
         * Sets the timeout of the collectives called without one.
         *
         * @param timeout the limit of the collectives called without one (default 60 s)
         * @return this builder
         * @since 0.1
         */
        public Builder defaultTimeout(final Duration timeout)
        {
            this.defaultTimeout = BuilderChecks.positive(timeout, "defaultTimeout");
            return this;
        }

        /**
         * Sets how often a waiting rank looks at the directory, at most.
         *
         * @param interval the longest pause between two looks at the directory (default 50 ms); polling starts
         *                 at 1 ms and backs off to this
         * @return this builder
         * @throws IllegalArgumentException when {@code interval} is null or outside [1 ms, 10 s]
         * @since 0.1
         */
        public Builder pollInterval(final Duration interval)
        {
            BuilderChecks.notNull(interval, "interval");
            if (interval.compareTo(Duration.ofMillis(1)) < 0 || interval.compareTo(Duration.ofSeconds(10)) > 0)
            {
                throw new IllegalArgumentException("pollInterval must be 1 ms..10 s: " + interval);
            }
            this.pollInterval = interval;
            return this;
        }

        /**
         * Sets the largest blob a rank may contribute to a collective.
         *
         * @param bytes the largest blob accepted (default 64 MiB)
         * @return this builder
         * @throws IllegalArgumentException when {@code bytes} is negative
         * @since 0.1
         */
        public Builder maxBlobBytes(final int bytes)
        {
            if (bytes < 0)
            {
                throw new IllegalArgumentException("maxBlobBytes must not be negative: " + bytes);
            }
            this.maxBlobBytes = bytes;
            return this;
        }

        /**
         * Builds the exchange of this rank.
         *
         * @return the exchange, its directory created
         * @throws IllegalArgumentException on an invalid configuration
         * @throws RendezvousException when the directory cannot be created
         * @since 0.1
         */
        public FileExchange build()
        {
            if (directory == null)
            {
                throw new IllegalArgumentException("directory is required");
            }
            BuilderChecks.rankInWorld(rank, worldSize);
            return new FileExchange(this);
        }
    }
}
