package io.github.te4j.exchange;


/**
 * An implementation of a URI scheme for {@link Exchanges}, found through
 * {@link java.util.ServiceLoader}: a module such as te4j-etcd lists its provider in
 * {@code META-INF/services/io.github.te4j.exchange.ExchangeProvider}, so the core library does
 * not depend on its client libraries.
 *
 * @since 0.1
 */
public interface ExchangeProvider
{
    /**
     * The URI scheme of the addresses this provider opens.
     *
     * @return the scheme this provider implements, lower case (e.g. {@code "etcd"})
     * @since 0.1
     */
    String scheme();

    /**
     * Joins a job as one rank.
     *
     * @param address the parsed address, options merged
     * @param rank this process's rank
     * @param worldSize the number of ranks
     * @return the exchange, joined
     * @since 0.1
     */
    HandleExchange openExchange(ExchangeAddress address, int rank, int worldSize);

    /**
     * Opens the job's segment directory.
     *
     * @param address the parsed address, options merged
     * @return the directory
     * @since 0.1
     */
    SegmentDirectory openDirectory(ExchangeAddress address);
}
