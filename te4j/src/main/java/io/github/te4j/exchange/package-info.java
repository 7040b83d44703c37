/**
 * Choosing and opening where a job's ranks meet: {@link io.github.te4j.exchange.Exchanges} opens
 * a handle exchange or a segment directory from a URI ({@code tcp://}, {@code etcd://},
 * {@code file://}, {@code mem://}), {@link io.github.te4j.exchange.LaunchEnvironment} reads a
 * rank's place from its launcher's variables, and {@link io.github.te4j.exchange.SegmentDirectory}
 * maps segment names to descriptors, with watches. Schemes outside the core library (etcd) are
 * {@link io.github.te4j.exchange.ExchangeProvider}s found through {@link java.util.ServiceLoader}.
 */
package io.github.te4j.exchange;
