package io.github.te4j.telemetry;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Enabled;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/**
 * One part submitted to a {@code TransferBatch}: its duration is the submit call's (checks and native hand-off).
 *
 * @since 0.1
 */
@Name("io.github.te4j.BatchSubmit")
@Label("Transfer Batch Submit")
@Category({"te4j", "Transfer"})
@Description("A part of READ/WRITE requests submitted to a transfer batch; the duration is the submit call")
@StackTrace(false)
@Enabled(false)
public final class BatchSubmitEvent extends Event
{
    /**
     * The submitting agent's segment name.
     *
     * @since 0.1
     */
    @Label("Agent")
    @Description("The submitting agent's segment name")
    public String agent;

    /**
     * The platform of the agent's engine ({@code HOST} or {@code CUDA}).
     *
     * @since 0.1
     */
    @Label("Platform")
    public String platform;

    /**
     * Identifies the batch within this JVM (also on its BatchComplete event).
     *
     * @since 0.1
     */
    @Label("Batch Id")
    @Description("Identifies the batch within this JVM (also on its BatchComplete event)")
    public long batchId;

    /**
     * The batch index of the part's first request.
     *
     * @since 0.1
     */
    @Label("First Index")
    @Description("The batch index of the part's first request")
    public int first;

    /**
     * The requests in the part.
     *
     * @since 0.1
     */
    @Label("Requests")
    public int requests;

    /**
     * The bytes the part's requests move, in all.
     *
     * @since 0.1
     */
    @Label("Bytes")
    @DataAmount
    public long bytes;
}
