package io.github.te4j.telemetry;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Enabled;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/**
 * te4j saw a segment's owner lost (its process exited, or its RDMA connection broke): once per segment handle.
 *
 * @since 0.1
 */
@Name("io.github.te4j.PeerLost")
@Label("Peer Lost")
@Category({"te4j", "Transfer"})
@Description("A segment's owner was seen lost; requests to it fail with PeerLostException")
@StackTrace(false)
@Enabled(false)
public final class PeerLostEvent extends Event
{
    /**
     * The agent that opened the segment.
     *
     * @since 0.1
     */
    @Label("Agent")
    @Description("The agent that opened the segment")
    public String agent;

    /**
     * The lost owner's segment name.
     *
     * @since 0.1
     */
    @Label("Segment")
    public String segment;

    /**
     * The owner's rank in the handle exchange, -1 when published outside one.
     *
     * @since 0.1
     */
    @Label("Rank")
    @Description("The owner's rank in the handle exchange, -1 when published outside one")
    public int rank;

    /**
     * The route to the owner: {@code mapped} (same host) or {@code rdma}.
     *
     * @since 0.1
     */
    @Label("Route")
    @Description("mapped (same host) or rdma")
    public String route;

    /**
     * The message of the loss, as {@link io.github.te4j.PeerLostException} gives it: who is gone and how it was seen.
     *
     * @since 0.1
     */
    @Label("Detail")
    public String detail;
}
