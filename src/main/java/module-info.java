/**
 * te4j, the transfer engine for Java: transports between GPUs and hosts (NVLink P2P, RDMA through
 * mlx5 or the software NIC, the host platform), device contexts for kernels, and op streams.
 *
 * <p>{@code io.github.te4j.internal} holds the JavaCPP peers of the native library and is not
 * exported: only JavaCPP's Loader reaches into it (it reads the peers' build annotations and
 * finds their natives in the platform jar).
 */
module io.github.te4j
{
    requires org.bytedeco.javacpp;
    requires org.slf4j;
    requires jdk.jfr;

    exports io.github.te4j;
    exports io.github.te4j.exchange;
    exports io.github.te4j.rendezvous;
    exports io.github.te4j.telemetry;

    uses io.github.te4j.exchange.ExchangeProvider;

    opens io.github.te4j.internal to org.bytedeco.javacpp;
}
