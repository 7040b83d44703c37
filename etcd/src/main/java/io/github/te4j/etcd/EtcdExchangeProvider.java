package io.github.te4j.etcd;

import io.github.te4j.exchange.ExchangeAddress;
import io.github.te4j.exchange.ExchangeProvider;
import io.github.te4j.exchange.SegmentDirectory;
import io.github.te4j.exchange.HandleExchange;

/** The {@code etcd://} scheme for {@link io.github.te4j.exchange.Exchanges}, registered as a service. */
public final class EtcdExchangeProvider implements ExchangeProvider
{
    /** For {@link java.util.ServiceLoader}. */
    public EtcdExchangeProvider()
    {
    }

    @Override
    public String scheme()
    {
        return "etcd";
    }

    @Override
    public HandleExchange openExchange(final ExchangeAddress address, final int rank, final int worldSize)
    {
        return EtcdHandleExchange.join(EtcdSettings.of(address), rank, worldSize);
    }

    @Override
    public SegmentDirectory openDirectory(final ExchangeAddress address)
    {
        return EtcdSegmentDirectory.open(EtcdSettings.of(address));
    }
}
