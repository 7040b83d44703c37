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
 * One post of a {@code TransferList}, committed when te4j sees it end: its duration runs from
 * the post call to then, and its fields say how it ended.
 *
 * @since 0.1
 */
@Name("io.github.te4j.ListPost")
@Label("Transfer List Post")
@Category({"te4j", "Transfer"})
@Description("A post of a transfer list, from the post call until it was seen to end")
@StackTrace(false)
@Enabled(false)
public final class ListPostEvent extends Event
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
     * Identifies the list within this JVM (also on its ListPrepare event).
     *
     * @since 0.1
     */
    @Label("List Id")
    public long listId;

    /**
     * The list's post number, from 1.
     *
     * @since 0.1
     */
    @Label("Post")
    @Description("The list's post number, from 1")
    public long post;

    /**
     * The first list index posted.
     *
     * @since 0.1
     */
    @Label("From")
    @Description("The first list index posted")
    public int from;

    /**
     * One past the last list index posted.
     *
     * @since 0.1
     */
    @Label("To")
    @Description("One past the last list index posted")
    public int to;

    /**
     * The bytes the posted requests move, in all.
     *
     * @since 0.1
     */
    @Label("Bytes")
    @DataAmount
    public long bytes;

    /**
     * Requests that never started (cancelled, or the deadline passed).
     *
     * @since 0.1
     */
    @Label("Skipped")
    @Description("Requests that never started (cancelled, or the deadline passed)")
    public int skipped;

    /**
     * How the post ended: COMPLETED, CANCELLED, TIMEOUT (some request did not run), or CLOSED (the list closed
     * under it).
     *
     * @since 0.1
     */
    @Label("Outcome")
    @Description("COMPLETED, CANCELLED, TIMEOUT (some request did not run), or CLOSED (the list closed under it)")
    public String outcome;
}
