package io.github.te4j.exchange;

import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * A directory of memory segments shared by the processes of a job: a segment's name maps to its
 * descriptor (the bytes a peer needs to reach it: an IPC handle, RDMA metadata). A process
 * publishes its own segments; the entries are bound to its lifetime, so they disappear when it
 * closes the directory or dies. Every process can look names up, wait for one to appear and
 * watch the directory for changes.
 *
 * <p>Descriptors are opaque here: the code that imports one validates it like every other handle.
 * Names are 1 to 128 characters of letters, digits, {@code '.'}, {@code '_'}, {@code ':'} and
 * {@code '-'}.
 */
public interface SegmentDirectory extends AutoCloseable
{
    /** The characters and length a segment name may have. */
    Pattern NAME = Pattern.compile("[A-Za-z0-9._:-]{1,128}");

    /**
     * Publishes (or replaces) a segment of this process.
     *
     * @param name the segment's name
     * @param descriptor its descriptor, at most {@link #maxDescriptorBytes()} bytes
     * @throws IllegalArgumentException on an invalid name or an oversized descriptor
     * @throws io.github.te4j.rendezvous.RendezvousException when another live process owns the name,
     *         or the store cannot be reached
     */
    void publish(String name, byte[] descriptor);

    /**
     * Removes a segment this process published.
     *
     * @param name the segment's name
     * @return true when it was there and this process owned it
     */
    boolean remove(String name);

    /**
     * @param name the segment's name
     * @return its current descriptor, or empty when no live process publishes it
     */
    Optional<byte[]> lookup(String name);

    /**
     * Waits until a segment is published.
     *
     * @param name the segment's name
     * @param timeout how long to wait
     * @return its descriptor
     * @throws io.github.te4j.rendezvous.RendezvousTimeoutException when it did not appear in time
     */
    byte[] await(String name, Duration timeout);

    /** @return every live segment, name to descriptor, sorted by name; a snapshot */
    Map<String, byte[]> list();

    /**
     * Calls {@code listener} with every segment present now, then with each change until the
     * returned registration is closed. Calls come from one thread per registration, in the order
     * the changes happened; a listener must not block for long.
     *
     * @param listener what to call
     * @return the registration; close it to stop the calls
     */
    Registration watch(Listener listener);

    /** @return the largest descriptor {@link #publish} accepts */
    int maxDescriptorBytes();

    /** Removes this process's segments and stops its watches; idempotent. */
    @Override
    void close();

    /** Receives directory changes. */
    interface Listener
    {
        /**
         * A segment appeared or its descriptor changed.
         *
         * @param name the segment's name
         * @param descriptor its descriptor
         */
        void published(String name, byte[] descriptor);

        /**
         * A segment disappeared: its owner removed it, closed its directory or died.
         *
         * @param name the segment's name
         */
        void removed(String name);
    }

    /** A running {@link #watch}. */
    interface Registration extends AutoCloseable
    {
        /** Stops the calls; idempotent. After it returns no further call starts. */
        @Override
        void close();
    }

    /**
     * Checks a segment name.
     *
     * @param name the name
     * @return the name
     * @throws IllegalArgumentException when it does not match {@link #NAME}
     */
    static String checkName(final String name)
    {
        Checks.notNull(name, "name");
        if (!NAME.matcher(name).matches())
        {
            throw new IllegalArgumentException("segment name must match " + NAME + ": '" + name + "'");
        }
        return name;
    }
}
