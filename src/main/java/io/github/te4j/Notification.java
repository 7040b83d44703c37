package io.github.te4j;

import java.util.Arrays;

/**
 * A message from another agent ({@link TransferBatch#submit(java.util.List, byte[], java.time.Duration)},
 * {@link TransferAgent#sendNotification(String, byte[], java.time.Duration)}), received through
 * {@link TransferAgent#notifications()}: the sender's segment name and up to {@link #MAX_BYTES}
 * bytes. One that came with a submit is received only after every byte of that submit landed here.
 *
 * @since 0.1
 */
public final class Notification
{
    /**
     * The largest message, in bytes.
     *
     * @since 0.1
     */
    public static final int MAX_BYTES = 4096;

    private final String sender;
    private final byte[] message;

    Notification(final String sender, final byte[] message)
    {
        this.sender = sender;
        this.message = message;
    }

    /**
     * The segment name of the agent that sent it.
     *
     * @return the sender's segment name
     * @since 0.1
     */
    public String sender()
    {
        return sender;
    }

    /**
     * The message (a copy).
     *
     * @return a new array with the message
     * @since 0.1
     */
    public byte[] message()
    {
        return message.clone();
    }

    /**
     * The message's length in bytes.
     *
     * @return the length
     * @since 0.1
     */
    public int size()
    {
        return message.length;
    }

    /** Refuses a message that is null or over the limit; before anything else of a send runs. */
    static void check(final byte[] message)
    {
        Errors.checkArgument(message != null, "notification is null");
        Errors.checkArgument(message.length <= MAX_BYTES, "notification of " + message.length + " B is over the limit of "
            + MAX_BYTES + " B");
    }

    @Override
    public boolean equals(final Object o)
    {
        return o instanceof Notification && ((Notification) o).sender.equals(sender)
            && Arrays.equals(((Notification) o).message, message);
    }

    @Override
    public int hashCode()
    {
        return sender.hashCode() * 31 + Arrays.hashCode(message);
    }

    @Override
    public String toString()
    {
        return "Notification from '" + sender + "' (" + message.length + " B)";
    }
}
