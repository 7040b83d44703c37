package io.github.te4j.bench;

import java.util.Locale;

/**
 * One result: a series at one message size and launch shape, with the median and 99th
 * percentile time per operation over the timed samples, and the outcome of its check.
 * Bandwidth uses GB/s = 1e9 bytes per second.
 */
public final class Row
{
    /**
     * In the note of a row that two processes measured on one GPU while both ran kernels (the
     * ping-pongs): the GPU time-slices between their contexts, so the figure includes its switches.
     */
    static final String TIME_SLICED = "two processes time-slice one GPU";

    private final Mode mode;
    private final String series;
    private final Role role;
    private final String platform;
    private final long bytes;
    private final int blocks;
    private final int threads;
    private final int batch;
    private final int samples;
    private final double medianNs;
    private final double p99Ns;
    private final String failure;
    private final String note;
    private final int ranks;

    /** A row of the pair 0 -> 1 (every mode but the all-to-all). */
    public Row(final Mode mode, final String series, final Role role, final String platform, final long bytes,
        final int blocks, final int threads, final int batch, final int samples, final double medianNs,
        final double p99Ns, final String failure, final String note)
    {
        this(mode, series, role, platform, bytes, blocks, threads, batch, samples, medianNs, p99Ns, failure, note, 2);
    }

    /**
     * @param mode      the mode the row belongs to (bandwidth, latency or rate)
     * @param series    the name shown in output
     * @param role      te4j, baseline or peer
     * @param platform  "cuda" or "host"
     * @param bytes     message size
     * @param blocks    blocks (SMs) of the launch; 0 = te4j's choice; -1 = not applicable; on
     *                  host 1 (one thread does the copy)
     * @param threads   threads per block
     * @param batch     operations per timed sample
     * @param samples   timed samples
     * @param medianNs  median time per operation (NaN when the case failed)
     * @param p99Ns     99th percentile time per operation (NaN when the case failed)
     * @param failure   null when every check held, else what went wrong
     * @param note      free text (how it was timed, where a figure comes from); may be empty
     * @param ranks     ranks taking part: 2 for the pair modes, N for an all-to-all among N
     */
    public Row(final Mode mode, final String series, final Role role, final String platform, final long bytes,
        final int blocks, final int threads, final int batch, final int samples, final double medianNs,
        final double p99Ns, final String failure, final String note, final int ranks)
    {
        this.mode = mode;
        this.series = series;
        this.role = role;
        this.platform = platform;
        this.bytes = bytes;
        this.blocks = blocks;
        this.threads = threads;
        this.batch = batch;
        this.samples = samples;
        this.medianNs = medianNs;
        this.p99Ns = p99Ns;
        this.failure = failure;
        this.note = note == null ? "" : note;
        this.ranks = ranks;
    }

    public Mode mode()
    {
        return mode;
    }

    public String series()
    {
        return series;
    }

    public Role role()
    {
        return role;
    }

    public String platform()
    {
        return platform;
    }

    public long bytes()
    {
        return bytes;
    }

    public int blocks()
    {
        return blocks;
    }

    public int threads()
    {
        return threads;
    }

    public int batch()
    {
        return batch;
    }

    public int samples()
    {
        return samples;
    }

    /** Median time per operation (a round trip in latency mode), nanoseconds. */
    public double medianNs()
    {
        return medianNs;
    }

    /** 99th percentile time per operation, nanoseconds. */
    public double p99Ns()
    {
        return p99Ns;
    }

    /** Null when the row's checks held. */
    public String failure()
    {
        return failure;
    }

    public boolean ok()
    {
        return failure == null;
    }

    public String note()
    {
        return note;
    }

    /** Whether two processes sharing one GPU measured this row ({@link #TIME_SLICED}). */
    public boolean timeSliced()
    {
        return note.contains(TIME_SLICED);
    }

    /** Ranks taking part: 2 for the pair modes, N for an all-to-all among N. */
    public int ranks()
    {
        return ranks;
    }

    /** Bytes that count for bandwidth: an all-to-all moves (N-1) blocks into and out of each rank. */
    private double movedBytes()
    {
        return mode == Mode.ALLTOALL ? (double)(ranks - 1) * bytes : bytes;
    }

    /**
     * GB/s (1e9 B/s) at the median time; NaN for latency rows, which move data both ways. An
     * all-to-all's is per GPU: (N-1) x block size / time of one all-to-all.
     */
    public double gbps()
    {
        return mode == Mode.LATENCY ? Double.NaN : movedBytes() / medianNs;
    }

    /** GB/s at the 99th percentile time (the slow end). */
    public double gbpsP99()
    {
        return mode == Mode.LATENCY ? Double.NaN : movedBytes() / p99Ns;
    }

    /** Operations per second at the median time. */
    public double opsPerSecond()
    {
        return 1e9 / medianNs;
    }

    /** "16x512" (blocks x threads), "auto" (te4j's choice) or "-" where it does not apply. */
    public String shape()
    {
        return blocks < 0 ? "-" : blocks == 0 ? "auto" : blocks + "x" + threads;
    }

    /** A key for grouping rows into chart lines: the series, plus the launch shape of grid launches. */
    public String lineKey()
    {
        return blocks == 0 || blocks > 1 ? series + " [" + shape() + "]" : series;
    }

    @Override
    public String toString()
    {
        return String.format(Locale.ROOT, "%s %s %s %s%s median %.1f ns p99 %.1f ns %s", mode.label(), series,
            Sizes.format(bytes), shape(), mode == Mode.ALLTOALL ? " " + ranks + " ranks" : "", medianNs, p99Ns,
            ok() ? "ok" : "FAILED: " + failure);
    }
}
