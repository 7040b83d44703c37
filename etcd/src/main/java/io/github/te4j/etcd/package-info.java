/**
 * The etcd scheme of te4j's exchanges ({@code etcd://host:2379/job}): a handle exchange and a
 * segment directory kept in etcd, with leases so that a dead process's entries disappear.
 *
 * <p><b>Arguments.</b> As in {@code io.github.te4j.exchange}: a null argument throws
 * {@link java.lang.IllegalArgumentException} naming the parameter unless a method says that null is
 * allowed, an option too large for what it configures is refused the same way, and timeouts follow
 * {@link io.github.te4j.exchange.Deadline} (any length; longer than
 * {@link io.github.te4j.exchange.Deadline#FOREVER} means that).
 */
package io.github.te4j.etcd;
