package io.github.te4j.telemetry;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Enabled;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/**
 * Every request of a {@code TransferBatch} is final: its duration runs from the batch's first
 * submit to the moment te4j saw the last request final (a wait, a poll or the future's watcher).
 *
 * @since 0.1
 */
@Name("io.github.te4j.BatchComplete")
@Label("Transfer Batch Complete")
@Category({"te4j", "Transfer"})
@Description("Every request of a transfer batch is final; the duration runs from its first submit")
@StackTrace(false)
@Enabled(false)
public final class BatchCompleteEvent extends Event
{
    /**
     * The agent's segment name.
     *
     * @since 0.1
     */
    @Label("Agent")
    public String agent;

    /**
     * The platform of the agent's engine ({@code HOST} or {@code CUDA}).
     *
     * @since 0.1
     */
    @Label("Platform")
    public String platform;

    /**
     * Identifies the batch within this JVM (also on its BatchSubmit events).
     *
     * @since 0.1
     */
    @Label("Batch Id")
    public long batchId;

    /**
     * The requests submitted to the batch.
     *
     * @since 0.1
     */
    @Label("Requests")
    public int requests;

    /**
     * Requests that ended COMPLETED.
     *
     * @since 0.1
     */
    @Label("Completed")
    public int completed;

    /**
     * Requests that ended FAILED.
     *
     * @since 0.1
     */
    @Label("Failed")
    public int failed;

    /**
     * Requests that ended TIMEOUT.
     *
     * @since 0.1
     */
    @Label("Timed Out")
    public int timedOut;

    /**
     * Requests that ended CANCELLED.
     *
     * @since 0.1
     */
    @Label("Cancelled")
    public int cancelled;
}
