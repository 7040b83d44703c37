package io.github.te4j.telemetry;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Enabled;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;

/**
 * A notification was published into its receiver's ring: for one sent with a submit, after the
 * submit's data landed. Its duration runs from the send (or the submit) to that publication, so
 * it holds the wait for the data and any back-pressure wait for a free slot.
 *
 * @since 0.1
 */
@Name("io.github.te4j.NotificationSent")
@Label("Notification Sent")
@Category({"te4j", "Notifications"})
@Description("A notification published to the receiving agent's ring, after its submit's data landed")
@Enabled(false)
public final class NotificationSentEvent extends Event
{
    /**
     * The sending agent's segment name.
     *
     * @since 0.1
     */
    @Label("Sender")
    @Description("The sending agent's segment name")
    public String sender;

    /**
     * The receiving agent's segment name.
     *
     * @since 0.1
     */
    @Label("Target")
    @Description("The receiving agent's segment name")
    public String target;

    /**
     * The notification's size in bytes.
     *
     * @since 0.1
     */
    @Label("Size")
    @DataAmount
    public int bytes;

    /**
     * Whether it came with a batch submit (else sent on its own).
     *
     * @since 0.1
     */
    @Label("With Submit")
    @Description("Whether it came with a batch submit (else sent on its own)")
    public boolean withSubmit;

    /**
     * Its position in this sender's ring at the target: notifications arrive in this order.
     *
     * @since 0.1
     */
    @Label("Position")
    @Description("Its position in this sender's ring at the target: notifications arrive in this order")
    public long position;
}
