package io.github.te4j.telemetry;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Enabled;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;

/** A notification was taken from a ring and handed to the application (poll, take or the listener). */
@Name("io.github.te4j.NotificationReceived")
@Label("Notification Received")
@Category({"te4j", "Notifications"})
@Description("A notification handed to the receiving application, after its checks (known, live sender; length; CRC)")
@Enabled(false)
public final class NotificationReceivedEvent extends Event
{
    @Label("Receiver")
    @Description("The receiving agent's segment name")
    public String receiver;

    @Label("Sender")
    @Description("The sending agent's segment name")
    public String sender;

    @Label("Size")
    @DataAmount
    public int bytes;

    @Label("Position")
    @Description("Its position in the sender's ring")
    public long position;

    @Label("Via")
    @Description("poll, take or listener")
    public String via;
}
