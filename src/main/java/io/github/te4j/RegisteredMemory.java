package io.github.te4j;

/**
 * Local memory registered with a {@link TransferAgent}: the local side of transfer requests. A
 * te4j buffer ({@link TransferAgent#registerLocalMemory(DeviceBuffer)}) is also part of the
 * rank's segment, which peers address; memory allocated elsewhere
 * ({@link TransferAgent#registerLocalMemory(long, long)}) is only a local side.
 *
 * <p>A registration ends when it is unregistered, when its agent closes, or when the te4j
 * buffer it is or lies in is closed: that close withdraws it from the agent first and waits
 * (bounded) for the batches that use it. Memory allocated elsewhere must stay allocated until
 * the registration ends: te4j cannot see another library's free.
 *
 * @since 0.1
 */
public final class RegisteredMemory
{
    private final TransferAgent agent;
    private final DeviceBuffer buffer;
    /** The te4j buffer this memory lies in (its own, or the live one a raw range lies in), or null. */
    private final DeviceBuffer within;
    private final long address;
    private final long size;
    private final long segmentOffset;
    private volatile boolean registered = true;

    RegisteredMemory(final TransferAgent agent, final DeviceBuffer buffer, final DeviceBuffer within,
        final long address, final long size, final long segmentOffset)
    {
        this.agent = agent;
        this.buffer = buffer;
        this.within = buffer != null ? buffer : within;
        this.address = address;
        this.size = size;
        this.segmentOffset = segmentOffset;
    }

    /**
     * The platform address of the first byte.
     *
     * @return the address
     * @since 0.1
     */
    public long address()
    {
        return address;
    }

    /**
     * The size of the registered range.
     *
     * @return its size in bytes
     * @since 0.1
     */
    public long size()
    {
        return size;
    }

    /**
     * The te4j buffer, or null for memory allocated elsewhere.
     *
     * @return the buffer registered with {@link TransferAgent#registerLocalMemory(DeviceBuffer)}, or null
     * @since 0.1
     */
    public DeviceBuffer buffer()
    {
        return buffer;
    }

    /**
     * Where this memory starts in the rank's segment (peers' remote offsets), or -1 when it is not
     * part of the segment (memory allocated elsewhere).
     *
     * @return the segment offset, or -1
     * @since 0.1
     */
    public long segmentOffset()
    {
        return segmentOffset;
    }

    /**
     * Whether it is still registered: not unregistered, its agent open, and the te4j buffer it is
     * or lies in (a raw range inside a te4j buffer) not closed.
     *
     * @return true while requests may use it
     * @since 0.1
     */
    public boolean isRegistered()
    {
        return registered && (within == null || !within.isClosed());
    }

    /**
     * The te4j buffer whose free ends this registration: {@link #buffer()}, or the live buffer a
     * raw range was found inside at registration; null for memory te4j does not know.
     */
    DeviceBuffer liveBuffer()
    {
        return within;
    }

    TransferAgent agent()
    {
        return agent;
    }

    void unregistered()
    {
        registered = false;
    }

    @Override
    public String toString()
    {
        return "RegisteredMemory[0x" + Long.toHexString(address) + " " + size + " B"
            + (segmentOffset >= 0 ? " at segment offset " + segmentOffset : " local only") + "]";
    }
}
