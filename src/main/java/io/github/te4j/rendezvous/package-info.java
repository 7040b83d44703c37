/**
 * Exchange of small byte blobs (IPC handles, RDMA metadata) between the ranks of a job, which are
 * separate processes, possibly on different hosts.
 *
 * <p>{@link io.github.te4j.exchange.HandleExchange} is the interface: allGather, barrier and a
 * broadcast built on allGather, each with a deadline. Two implementations:
 * {@link io.github.te4j.rendezvous.Rendezvous}, an embedded TCP rendezvous in which rank 0 is the
 * hub (optionally authenticated with a shared secret), and
 * {@link io.github.te4j.rendezvous.FileExchange}, which goes through a shared directory.
 * Failures are {@link io.github.te4j.rendezvous.RendezvousException}s:
 * {@link io.github.te4j.rendezvous.RendezvousTimeoutException} names the ranks that did not arrive,
 * {@link io.github.te4j.PeerLostException} the rank whose connection ended.
 *
 * <p><b>Arguments.</b> A null argument throws {@link java.lang.IllegalArgumentException} naming the
 * parameter ({@code "mine is null"}), unless a method says that null is allowed (a builder's
 * {@code secret}, {@code FileExchange}'s {@code session}, a non-root rank's {@code broadcast} data).
 * Timeouts follow {@link io.github.te4j.exchange.Deadline}: one bounds the whole call, and any length
 * is accepted (longer than {@link io.github.te4j.exchange.Deadline#FOREVER} means that).
 */
package io.github.te4j.rendezvous;
