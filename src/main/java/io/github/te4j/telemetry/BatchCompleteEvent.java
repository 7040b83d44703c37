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
 */
@Name("io.github.te4j.BatchComplete")
@Label("Transfer Batch Complete")
@Category({"te4j", "Transfer"})
@Description("Every request of a transfer batch is final; the duration runs from its first submit")
@StackTrace(false)
@Enabled(false)
public final class BatchCompleteEvent extends Event
{
    @Label("Agent")
    public String agent;

    @Label("Platform")
    public String platform;

    @Label("Batch Id")
    public long batchId;

    @Label("Requests")
    public int requests;

    @Label("Completed")
    public int completed;

    @Label("Failed")
    public int failed;

    @Label("Timed Out")
    public int timedOut;

    @Label("Cancelled")
    public int cancelled;
}
