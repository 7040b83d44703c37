package io.github.te4j;

/**
 * Local memory registered with a {@link TransferAgent}: the local side of transfer requests. A
 * te4j buffer ({@link TransferAgent#registerLocalMemory(DeviceBuffer)}) is also part of the
 * rank's segment, which peers address; memory allocated elsewhere
 * ({@link TransferAgent#registerLocalMemory(long, long)}) is only a local side.
 */
public final class RegisteredMemory
{
    private final TransferAgent agent;
    private final DeviceBuffer buffer;
    private final long address;
    private final long size;
    private final long segmentOffset;
    private volatile boolean registered = true;

    RegisteredMemory(final TransferAgent agent, final DeviceBuffer buffer, final long address, final long size,
        final long segmentOffset)
    {
        this.agent = agent;
        this.buffer = buffer;
        this.address = address;
        this.size = size;
        this.segmentOffset = segmentOffset;
    }

    /** The platform address of the first byte. */
    public long address()
    {
        return address;
    }

    public long size()
    {
        return size;
    }

    /** The te4j buffer, or null for memory allocated elsewhere. */
    public DeviceBuffer buffer()
    {
        return buffer;
    }

    /**
     * Where this memory starts in the rank's segment (peers' remote offsets), or -1 when it is not
     * part of the segment (memory allocated elsewhere).
     */
    public long segmentOffset()
    {
        return segmentOffset;
    }

    /** Whether it is still registered (and, for a te4j buffer, the buffer is open). */
    public boolean isRegistered()
    {
        return registered && (buffer == null || !buffer.isClosed());
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
