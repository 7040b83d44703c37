package io.github.te4j.telemetry;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Enabled;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/** te4j saw a segment's owner lost (its process exited, or its RDMA connection broke): once per segment handle. */
@Name("io.github.te4j.PeerLost")
@Label("Peer Lost")
@Category({"te4j", "Transfer"})
@Description("A segment's owner was seen lost; requests to it fail with PeerLostException")
@StackTrace(false)
@Enabled(false)
public final class PeerLostEvent extends Event
{
    @Label("Agent")
    @Description("The agent that opened the segment")
    public String agent;

    @Label("Segment")
    public String segment;

    @Label("Rank")
    @Description("The owner's rank in the handle exchange, -1 when published outside one")
    public int rank;

    @Label("Route")
    @Description("mapped (same host) or rdma")
    public String route;

    @Label("Detail")
    public String detail;
}
