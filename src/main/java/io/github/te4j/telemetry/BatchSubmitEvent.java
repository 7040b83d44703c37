package io.github.te4j.telemetry;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Enabled;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/** One part submitted to a {@code TransferBatch}: its duration is the submit call's (checks and native hand-off). */
@Name("io.github.te4j.BatchSubmit")
@Label("Transfer Batch Submit")
@Category({"te4j", "Transfer"})
@Description("A part of READ/WRITE requests submitted to a transfer batch; the duration is the submit call")
@StackTrace(false)
@Enabled(false)
public final class BatchSubmitEvent extends Event
{
    @Label("Agent")
    @Description("The submitting agent's segment name")
    public String agent;

    @Label("Platform")
    public String platform;

    @Label("Batch Id")
    @Description("Identifies the batch within this JVM (also on its BatchComplete event)")
    public long batchId;

    @Label("First Index")
    @Description("The batch index of the part's first request")
    public int first;

    @Label("Requests")
    public int requests;

    @Label("Bytes")
    @DataAmount
    public long bytes;
}
