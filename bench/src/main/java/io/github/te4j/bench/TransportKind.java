package io.github.te4j.bench;

import java.util.Locale;

/**
 * Which te4j transport carries the measured puts: {@link #P2P}, or {@link #RDMA_SOFT} (every op to
 * the partner routed over te4j's software NIC: P2P maps only the own rank), or {@link #RDMA_HW} (the
 * same over a ConnectX NIC through the mlx5 DevX backend; unavailable, with the cause, without one).
 */
public enum TransportKind
{
    /** NVLink/PCIe between GPUs of one host, or shared memory on the host platform. */
    P2P("p2p"),
    /** RDMA through te4j's software NIC (one host, no RDMA hardware needed). */
    RDMA_SOFT("rdma-soft"),
    /** RDMA through a real NIC (IBGDA). */
    RDMA_HW("rdma-hw");

    /** The Java class of the RDMA transport (absent from builds without the RDMA API). */
    static final String RDMA_CLASS = "io.github.te4j.RdmaTransport";

    private final String label;

    TransportKind(final String label)
    {
        this.label = label;
    }

    /** The command-line name. */
    public String label()
    {
        return label;
    }

    /** The kind named {@code text} (p2p, rdma-soft, rdma-hw). */
    public static TransportKind parse(final String text)
    {
        for (final TransportKind k : values())
        {
            if (k.label.equals(text.toLowerCase(Locale.ROOT)))
            {
                return k;
            }
        }
        throw new IllegalArgumentException("unknown transport '" + text + "' (expected p2p, rdma-soft or rdma-hw)");
    }

    /** Why this transport cannot be benchmarked in this build, or null when it can. */
    public String unavailableReason()
    {
        if (this == P2P)
        {
            return null;
        }
        try
        {
            Class.forName(RDMA_CLASS);
        }
        catch (final ClassNotFoundException e)
        {
            return label + " is not yet available: this build has no RDMA Java API (" + RDMA_CLASS
                + "); use --transport p2p";
        }
        if (this == RDMA_SOFT)
        {
            return null;
        }
        return mlx5Unavailable();
    }

    /** The RdmaTransport device filter of an RDMA kind: the software NIC or any mlx5 device. */
    String rdmaDeviceFilter()
    {
        return this == RDMA_HW ? "mlx5" : "soft";
    }

    /** Why no mlx5 backend can be created here (no rdma-core, no device, no DevX), or null. */
    private String mlx5Unavailable()
    {
        try (io.github.te4j.TransferEngine engine = io.github.te4j.TransferEngine.builder()
            .platform(io.github.te4j.Platform.HOST).build())
        {
            engine.getOrCreateRdmaTransport(rdmaDeviceFilter());
            return null;
        }
        catch (final io.github.te4j.Te4jException | IllegalStateException e)
        {
            return label + " is not available here: " + e.getMessage() + " (use --transport rdma-soft for the"
                + " software NIC)";
        }
    }
}
