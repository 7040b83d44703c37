package io.github.te4j.rendezvous;

import io.github.te4j.Te4jException;
import java.time.Duration;
import java.util.List;

/**
 * One rank's part in the star: rank 0's hub or another rank's link to it. {@link Rendezvous}
 * numbers and serializes the collectives and hands each to its role.
 */
interface StarRole
{
    /** @return the port rank 0 listens on */
    int port();

    /**
     * Runs collective number {@code seq} of {@code type} with this rank's contribution.
     *
     * @param what names the operation in errors ("allGather #3")
     * @return every rank's blob for a gather, an empty list for a barrier
     */
    List<byte[]> collect(byte type, int seq, byte[] mine, long deadline, Duration timeout, String what);

    /** Tells the other ranks, where this role can, that the session failed with {@code e}. */
    void abort(Te4jException e);

    /** Closes the sockets and stops this role's threads. */
    void close();
}
