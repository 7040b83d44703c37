package io.github.te4j.telemetry;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Enabled;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;

/**
 * A notification was taken from a ring and handed to the application (poll, take or the listener).
 *
 * @since 0.1
 */
@Name("io.github.te4j.NotificationReceived")
@Label("Notification Received")
@Category({"te4j", "Notifications"})
@Description("A notification handed to the receiving application, after its checks (known, live sender; length; CRC)")
@Enabled(false)
public final class NotificationReceivedEvent extends Event
{
    /**
     * The receiving agent's segment name.
     *
     * @since 0.1
     */
    @Label("Receiver")
    @Description("The receiving agent's segment name")
    public String receiver;

    /**
     * The sending agent's segment name.
     *
     * @since 0.1
     */
    @Label("Sender")
    @Description("The sending agent's segment name")
    public String sender;

    /**
     * The notification's size in bytes.
     *
     * @since 0.1
     */
    @Label("Size")
    @DataAmount
    public int bytes;

    /**
     * Its position in the sender's ring.
     *
     * @since 0.1
     */
    @Label("Position")
    @Description("Its position in the sender's ring")
    public long position;

    /**
     * How the application took it: {@code poll}, {@code take} or {@code listener}.
     *
     * @since 0.1
     */
    @Label("Via")
    @Description("poll, take or listener")
    public String via;
}
