package io.github.te4j.exchange;


/**
 * An implementation of a URI scheme for {@link Exchanges}, found through
 * {@link java.util.ServiceLoader}: a module such as te4j-etcd lists its provider in
 * {@code META-INF/services/io.github.te4j.exchange.ExchangeProvider}, so the core library does
 * not depend on its client libraries.
 */
public interface ExchangeProvider
{
    /** @return the scheme this provider implements, lower case (e.g. {@code "etcd"}) */
    String scheme();

    /**
     * Joins a job as one rank.
     *
     * @param address the parsed address, options merged
     * @param rank this process's rank
     * @param worldSize the number of ranks
     * @return the exchange, joined
     */
    HandleExchange openExchange(ExchangeAddress address, int rank, int worldSize);

    /**
     * Opens the job's segment directory.
     *
     * @param address the parsed address, options merged
     * @return the directory
     */
    SegmentDirectory openDirectory(ExchangeAddress address);
}
