package io.github.te4j.exchange;

import java.time.Duration;
import java.util.List;

/**
 * Collective exchange of small byte blobs (IPC handles, RDMA metadata) between the ranks of one
 * job. Every rank calls the same operations in the same order; each call returns only when all
 * {@link #worldSize()} ranks have made it, or throws.
 *
 * <p>Every wait is bounded: when it runs out a {@link io.github.te4j.rendezvous.RendezvousTimeoutException} names the
 * missing ranks. After any failure the exchange is unusable (the ranks no longer agree on where
 * they are); later calls throw. Calls on one instance are serialized.
 *
 * @since 0.1
 */
public interface HandleExchange extends AutoCloseable
{

    /**
     * This process's rank in the job.
     *
     * @return this process's rank, {@code 0 <= rank < worldSize}
     * @since 0.1
     */
    int rank();

    /**
     * The number of ranks in the job.
     *
     * @return the number of ranks
     * @since 0.1
     */
    int worldSize();

    /**
     * The timeout of the collectives called without one.
     *
     * @return the limit that the overloads without a timeout use
     * @since 0.1
     */
    Duration defaultTimeout();

    /**
     * Gathers one blob from every rank.
     *
     * @param mine this rank's blob (may be empty, not null)
     * @param timeout how long to wait for all ranks
     * @return the blobs indexed by rank, this rank's own included; an unmodifiable list
     * @throws io.github.te4j.rendezvous.RendezvousTimeoutException when not all ranks arrived in time
     * @throws io.github.te4j.PeerLostException when a rank's connection ended
     * @throws io.github.te4j.rendezvous.RendezvousException on any other protocol failure
     * @since 0.1
     */
    List<byte[]> allGather(byte[] mine, Duration timeout);

    /**
     * {@link #allGather(byte[], Duration)} with {@link #defaultTimeout()}.
     *
     * @param mine this rank's blob
     * @return the blobs indexed by rank
     * @since 0.1
     */
    default List<byte[]> allGather(final byte[] mine)
    {
        return allGather(mine, defaultTimeout());
    }

    /**
     * Waits until every rank has reached this barrier.
     *
     * @param timeout how long to wait for all ranks
     * @throws io.github.te4j.rendezvous.RendezvousTimeoutException when not all ranks arrived in time
     * @throws io.github.te4j.rendezvous.RendezvousException on any other failure
     * @since 0.1
     */
    void barrier(Duration timeout);

    /**
     * {@link #barrier(Duration)} with {@link #defaultTimeout()}.
     *
     * @since 0.1
     */
    default void barrier()
    {
        barrier(defaultTimeout());
    }

    /**
     * Sends {@code data} from rank {@code root} to every rank. Built on {@link #allGather}: the other
     * ranks contribute empty blobs, so it costs one allGather.
     *
     * @param root the rank whose data is sent
     * @param data the data on {@code root} (required there: null is an IllegalArgumentException); ignored, may
     *             be null, elsewhere
     * @param timeout how long to wait for all ranks
     * @return root's data, on every rank
     * @throws IllegalArgumentException when {@code root} is not a rank, or {@code data} is null on the root
     * @since 0.1
     */
    default byte[] broadcast(final int root, final byte[] data, final Duration timeout)
    {
        if (root < 0 || root >= worldSize())
        {
            throw new IllegalArgumentException("root " + root + " out of range 0.." + (worldSize() - 1));
        }
        if (rank() == root && data == null)
        {
            throw new IllegalArgumentException("data is null on the root rank " + root);
        }
        final byte[] mine = rank() == root ? data : new byte[0];
        return allGather(mine, timeout).get(root);
    }

    /** Releases sockets, threads and files held by this exchange; idempotent. */
    @Override
    void close();
}
