package io.github.te4j.bench;

/** What a benchmark run measures. */
public enum Mode
{
    /** Bulk put bandwidth against the copy engine, a plain SM copy kernel or memcpy. */
    BANDWIDTH,
    /** put + signal ping-pong round trip against a raw flag ping-pong. */
    LATENCY,
    /** putWithSignal launched back to back, from Java and from C++ (the JNI cost). */
    RATE,
    /**
     * Every rank puts a distinct block to every other rank with a signal and waits for the N-1
     * arriving: bandwidth per GPU. Not part of {@link #ALL}: it takes every rank of the run.
     */
    ALLTOALL,
    BATCH,
    /**
     * A prefill engine hands L layers x B scattered blocks to a decode engine one layer at a time,
     * each with a notification: time-to-notify per layer and the whole handoff, beside copy
     * baselines of the same blocks. Runs alone, both engines in this process.
     */
    KVCACHE,
    /** Bandwidth, latency and rate, each with its own sizes. */
    ALL;

    /** The name used on the command line and in output. */
    public String label()
    {
        return name().toLowerCase(java.util.Locale.ROOT);
    }
}
