/**
 * te4j, the transfer engine for Java: {@link io.github.te4j.TransferEngine} and its transports
 * (NVLink/shared-memory P2P, RDMA), device contexts for kernels, op streams, and the transfer
 * agent's batches of READ and WRITE requests.
 *
 * <p><b>Arguments.</b> Every argument is checked in Java before native code runs. A null argument
 * throws {@link java.lang.IllegalArgumentException} naming the parameter ({@code "buffer is null"})
 * unless a method says that null is allowed; every other bad value throws
 * {@link java.lang.IllegalArgumentException} or {@link java.lang.IndexOutOfBoundsException} naming
 * it. A closed object throws {@link io.github.te4j.ClosedException}.
 *
 * <p><b>Timeouts.</b> A timeout bounds the whole call, however many steps it takes
 * ({@link io.github.te4j.exchange.Deadline}); any timeout longer than
 * {@link io.github.te4j.exchange.Deadline#FOREVER} (about 73 years) means that, so
 * {@code Duration.ofSeconds(Long.MAX_VALUE)} is "practically forever", never an arithmetic error.
 */
package io.github.te4j;
