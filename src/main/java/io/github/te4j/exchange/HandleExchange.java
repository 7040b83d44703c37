package io.github.te4j.exchange;

import java.time.Duration;
import java.util.List;

/**
 * Collective exchange of small byte blobs (IPC handles, RDMA metadata) between the ranks of one
 * job. Every rank calls the same operations in the same order; each call returns only when all
 * {@link #worldSize()} ranks have made it, or throws.
 *
 * <p>Every wait is bounded: when it runs out a {@link RendezvousTimeoutException} names the
 * missing ranks. After any failure the exchange is unusable (the ranks no longer agree on where
 * they are); later calls throw. Calls on one instance are serialized.
 */
public interface HandleExchange extends AutoCloseable
{

    /** @return this process's rank, {@code 0 <= rank < worldSize} */
    int rank();

    /** @return the number of ranks */
    int worldSize();

    /** @return the limit that the overloads without a timeout use */
    Duration defaultTimeout();

    /**
     * Gathers one blob from every rank.
     *
     * @param mine this rank's blob (may be empty, not null)
     * @param timeout how long to wait for all ranks
     * @return the blobs indexed by rank, this rank's own included; an unmodifiable list
     * @throws RendezvousTimeoutException when not all ranks arrived in time
     * @throws PeerLostException when a rank's connection ended
     * @throws RendezvousException on any other protocol failure
     */
    List<byte[]> allGather(byte[] mine, Duration timeout);

    /**
     * {@link #allGather(byte[], Duration)} with {@link #defaultTimeout()}.
     *
     * @param mine this rank's blob
     * @return the blobs indexed by rank
     */
    default List<byte[]> allGather(final byte[] mine)
    {
        return allGather(mine, defaultTimeout());
    }

    /**
     * Waits until every rank has reached this barrier.
     *
     * @param timeout how long to wait for all ranks
     * @throws RendezvousTimeoutException when not all ranks arrived in time
     * @throws RendezvousException on any other failure
     */
    void barrier(Duration timeout);

    /** {@link #barrier(Duration)} with {@link #defaultTimeout()}. */
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
