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
 *
 * @since 0.1
 */
public interface SegmentDirectory extends AutoCloseable
{
    /**
     * The characters and length a segment name may have.
     *
     * @since 0.1
     */
    Pattern NAME = Pattern.compile("[A-Za-z0-9._:-]{1,128}");

    /**
     * Publishes (or replaces) a segment of this process.
     *
     * @param name the segment's name
     * @param descriptor its descriptor, at most {@link #maxDescriptorBytes()} bytes
     * @throws IllegalArgumentException on an invalid name or an oversized descriptor
     * @throws io.github.te4j.rendezvous.RendezvousException when another live process owns the name,
     *         or the store cannot be reached
     * @since 0.1
     */
    void publish(String name, byte[] descriptor);

    /**
     * Removes a segment this process published.
     *
     * @param name the segment's name
     * @return true when it was there and this process owned it
     * @since 0.1
     */
    boolean remove(String name);

    /**
     * The descriptor published under {@code name} now.
     *
     * @param name the segment's name
     * @return its current descriptor, or empty when no live process publishes it
     * @since 0.1
     */
    Optional<byte[]> lookup(String name);

    /**
     * Waits until a segment is published.
     *
     * @param name the segment's name
     * @param timeout how long to wait
     * @return its descriptor
     * @throws io.github.te4j.rendezvous.RendezvousTimeoutException when it did not appear in time
     * @since 0.1
     */
    byte[] await(String name, Duration timeout);

    /**
     * Every segment published now.
     *
     * @return every live segment, name to descriptor, sorted by name; a snapshot
     * @since 0.1
     */
    Map<String, byte[]> list();

    /**
     * Calls {@code listener} with every segment present now, then with each change until the
     * returned registration is closed. Calls come from one thread per registration, in the order
     * the changes happened; a listener must not block for long.
     *
     * @param listener what to call
     * @return the registration; close it to stop the calls
     * @since 0.1
     */
    Registration watch(Listener listener);

    /**
     * The size limit of one descriptor in this directory.
     *
     * @return the largest descriptor {@link #publish} accepts
     * @since 0.1
     */
    int maxDescriptorBytes();

    /** Removes this process's segments and stops its watches; idempotent. */
    @Override
    void close();

    /**
     * Receives directory changes.
     *
     * @since 0.1
     */
    interface Listener
    {
        /**
         * A segment appeared or its descriptor changed.
         *
         * @param name the segment's name
         * @param descriptor its descriptor
         * @since 0.1
         */
        void published(String name, byte[] descriptor);

        /**
         * A segment disappeared: its owner removed it, closed its directory or died.
         *
         * @param name the segment's name
         * @since 0.1
         */
        void removed(String name);
    }

    /**
     * A running {@link #watch}.
     *
     * @since 0.1
     */
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
     * @since 0.1
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
