package io.github.te4j;

/**
 * Where te4j's "device" memory and operations live.
 *
 * @since 0.1
 */
public enum Platform
{
    /**
     * CPU only: shared-memory segments between processes, operations on executor threads.
     *
     * @since 0.1
     */
    HOST(0),
    /**
     * NVIDIA GPUs: device memory, CUDA IPC between processes, kernels on a non-blocking stream.
     *
     * @since 0.1
     */
    CUDA(1);

    private final int nativeId;

    Platform(final int nativeId)
    {
        this.nativeId = nativeId;
    }

    /**
     * The value of {@code te4j::Platform} in the native API.
     *
     * @return the native id
     * @since 0.1
     */
    public int nativeId()
    {
        return nativeId;
    }

    /**
     * The platform with the given native id.
     *
     * @param id a {@code te4j::Platform} value
     * @return its platform
     * @throws IllegalArgumentException when {@code id} is no platform's
     * @since 0.1
     */
    public static Platform fromNativeId(final int id)
    {
        for (final Platform p : values())
        {
            if (p.nativeId == id)
            {
                return p;
            }
        }
        throw new IllegalArgumentException("unknown platform id " + id);
    }
}
