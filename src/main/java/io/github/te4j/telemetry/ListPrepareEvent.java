package io.github.te4j.telemetry;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Enabled;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/** A {@code TransferList} prepared: its duration is the whole prepare (checks, routing, staging; on CUDA the copy to the device). */
@Name("io.github.te4j.ListPrepare")
@Label("Transfer List Prepare")
@Category({"te4j", "Transfer"})
@Description("A reusable transfer list prepared; the duration is the prepare call")
@StackTrace(false)
@Enabled(false)
public final class ListPrepareEvent extends Event
{
    @Label("Agent")
    public String agent;

    @Label("Platform")
    public String platform;

    @Label("List Id")
    @Description("Identifies the list within this JVM (also on its ListPost events)")
    public long listId;

    @Label("Requests")
    public int requests;

    @Label("Bytes")
    @DataAmount
    public long bytes;
}
