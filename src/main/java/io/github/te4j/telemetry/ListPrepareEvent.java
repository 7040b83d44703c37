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
 * A {@code TransferList} prepared: its duration is the whole prepare (checks, routing, staging; on CUDA the copy to the device).
 *
 * @since 0.1
 */
@Name("io.github.te4j.ListPrepare")
@Label("Transfer List Prepare")
@Category({"te4j", "Transfer"})
@Description("A reusable transfer list prepared; the duration is the prepare call")
@StackTrace(false)
@Enabled(false)
public final class ListPrepareEvent extends Event
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
     * Identifies the list within this JVM (also on its ListPost events).
     *
     * @since 0.1
     */
    @Label("List Id")
    @Description("Identifies the list within this JVM (also on its ListPost events)")
    public long listId;

    /**
     * The requests in the list.
     *
     * @since 0.1
     */
    @Label("Requests")
    public int requests;

    /**
     * The bytes the list's requests move, in all.
     *
     * @since 0.1
     */
    @Label("Bytes")
    @DataAmount
    public long bytes;
}
