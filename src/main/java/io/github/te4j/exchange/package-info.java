/**
 * Choosing and opening where a job's ranks meet: {@link io.github.te4j.exchange.Exchanges} opens
 * a handle exchange or a segment directory from a URI ({@code tcp://}, {@code etcd://},
 * {@code file://}, {@code mem://}), {@link io.github.te4j.exchange.LaunchEnvironment} reads a
 * rank's place from its launcher's variables, and {@link io.github.te4j.exchange.SegmentDirectory}
 * maps segment names to descriptors, with watches. Schemes outside the core library (etcd) are
 * {@link io.github.te4j.exchange.ExchangeProvider}s found through {@link java.util.ServiceLoader}.
 *
 * <p><b>Arguments.</b> A null argument throws {@link java.lang.IllegalArgumentException} naming the
 * parameter ({@code "uri is null"}), unless a method says that null is allowed; option maps may hold
 * no null key or value. An option too large for what it configures is refused the same way.
 *
 * <p><b>Timeouts.</b> {@link io.github.te4j.exchange.Deadline} is the one rule: a timeout bounds the
 * whole call, and one longer than {@link io.github.te4j.exchange.Deadline#FOREVER} means that.
 */
package io.github.te4j.exchange;
