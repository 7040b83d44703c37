package io.github.te4j;

import io.github.te4j.exchange.HandleExchange;
import io.github.te4j.rendezvous.Rendezvous;
import java.time.Duration;

/** Rendezvous set-up shared by the multi-process tests. */
final class TestExchanges
{
    private TestExchanges()
    {
    }

    /** A loopback TCP rendezvous: rank 0 listens on {@code port}. */
    static HandleExchange tcp(final int rank, final int world, final int port, final Duration timeout)
    {
        return Rendezvous.builder().rank(rank).worldSize(world).endpoint("127.0.0.1", port)
            .connectTimeout(timeout).defaultTimeout(timeout).build();
    }
}
