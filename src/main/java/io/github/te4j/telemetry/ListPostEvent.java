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
 */
@Name("io.github.te4j.ListPost")
@Label("Transfer List Post")
@Category({"te4j", "Transfer"})
@Description("A post of a transfer list, from the post call until it was seen to end")
@StackTrace(false)
@Enabled(false)
public final class ListPostEvent extends Event
{
    @Label("Agent")
    public String agent;

    @Label("Platform")
    public String platform;

    @Label("List Id")
    public long listId;

    @Label("Post")
    @Description("The list's post number, from 1")
    public long post;

    @Label("From")
    @Description("The first list index posted")
    public int from;

    @Label("To")
    @Description("One past the last list index posted")
    public int to;

    @Label("Bytes")
    @DataAmount
    public long bytes;

    @Label("Skipped")
    @Description("Requests that never started (cancelled, or the deadline passed)")
    public int skipped;

    @Label("Outcome")
    @Description("COMPLETED, CANCELLED, TIMEOUT (some request did not run), or CLOSED (the list closed under it)")
    public String outcome;
}
