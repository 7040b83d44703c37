package io.github.te4j;

import io.github.te4j.internal.NativeApi;
import org.bytedeco.javacpp.Pointer;

/**
 * What a piece of memory is, as the CUDA driver of this process sees it: which copy engines,
 * kernels and NICs can reach it decides which te4j routes may carry it. Asked of memory
 * allocated anywhere ({@link #of(long, long)}, {@link #of(Pointer)}): by te4j, by the JavaCPP
 * Presets for CUDA, by PyTorch, by the JDK.
 *
 * <p>The query uses the driver's pointer attributes and never creates a CUDA context. Without a
 * CUDA driver or device, or with a te4j built without CUDA, no CUDA memory can exist in the
 * process, so every address is {@link #PAGEABLE_HOST}.
 *
 * @since 0.1
 */
public enum MemoryKind
{
    /**
     * Host memory the CUDA driver does not know (malloc, direct ByteBuffers, te4j host windows).
     *
     * @since 0.1
     */
    PAGEABLE_HOST(false, true),
    /**
     * Page-locked host memory ({@code cudaMallocHost}, {@code cudaHostAlloc}, {@code cudaHostRegister}).
     *
     * @since 0.1
     */
    PINNED_HOST(true, true),
    /**
     * GPU memory ({@code cudaMalloc}, pool allocations, {@code cuMemCreate} mappings).
     *
     * @since 0.1
     */
    DEVICE(true, false),
    /**
     * Managed memory ({@code cudaMallocManaged}): migrates between host and devices on use.
     *
     * @since 0.1
     */
    MANAGED(true, true);

    private final boolean deviceAccessible;
    private final boolean hostAccessible;

    MemoryKind(final boolean deviceAccessible, final boolean hostAccessible)
    {
        this.deviceAccessible = deviceAccessible;
        this.hostAccessible = hostAccessible;
    }

    /**
     * Whether kernels (te4j's CUDA batch copy among them) can read and write it by its address.
     *
     * @return true for device, pinned host and managed memory
     * @since 0.1
     */
    public boolean isDeviceAccessible()
    {
        return deviceAccessible;
    }

    /**
     * Whether host threads (the host platform's copies, Java's ByteBuffers) can read and write it.
     *
     * @return true for pageable host, pinned host and managed memory
     * @since 0.1
     */
    public boolean isHostAccessible()
    {
        return hostAccessible;
    }

    /**
     * The kind of [address, address + bytes).
     *
     * @param address the start of the range
     * @param bytes its size, positive
     * @return the kind
     * @throws IllegalArgumentException when the address is 0, the range is empty or wraps, or it
     *     is host memory that is not mapped over the whole range (a copy into it would crash)
     * @throws Te4jException when the driver's query fails
     * @since 0.1
     */
    public static MemoryKind of(final long address, final long bytes)
    {
        return probe(address, bytes, new int[1]);
    }

    /**
     * The kind of the memory a JavaCPP pointer designates: {@link #pointerAddress(Pointer)} for
     * {@link #pointerBytes(Pointer)} bytes.
     *
     * @param pointer the pointer
     * @return the kind
     * @throws IllegalArgumentException as {@link #of(long, long)}, and for a null pointer
     * @since 0.1
     */
    public static MemoryKind of(final Pointer pointer)
    {
        return of(pointerAddress(pointer), pointerBytes(pointer));
    }

    /**
     * The address a JavaCPP pointer designates: {@code address() + position() × sizeof()}, the
     * element at its position (JavaCPP's own convention for passing a pointer to native code).
     *
     * @param pointer the pointer
     * @return the address
     * @throws IllegalArgumentException for a null pointer (or one whose address is 0)
     * @since 0.1
     */
    public static long pointerAddress(final Pointer pointer)
    {
        Errors.checkArgument(pointer != null && !pointer.isNull(), "pointer is null");
        final long element = Math.max(1, pointer.sizeof());
        Errors.checkArgument(pointer.position() >= 0, "pointer position " + pointer.position() + " is negative");
        return pointer.address() + pointer.position() * element;
    }

    /**
     * The bytes a JavaCPP pointer designates from {@link #pointerAddress(Pointer)}: from its
     * position to its limit, or to its capacity when the limit is unset (0), times
     * {@code sizeof()}. A {@code new Pointer()} filled in by {@code cudaMalloc} has neither: set
     * its capacity or limit ({@code mem.capacity(bytes)}) or use the address overloads.
     *
     * @param pointer the pointer
     * @return the number of bytes
     * @throws IllegalArgumentException when the pointer designates no bytes
     * @since 0.1
     */
    public static long pointerBytes(final Pointer pointer)
    {
        Errors.checkArgument(pointer != null && !pointer.isNull(), "pointer is null");
        final long end = pointer.limit() > 0 ? pointer.limit() : pointer.capacity();
        final long element = Math.max(1, pointer.sizeof());
        Errors.checkArgument(end > pointer.position(), pointer + " designates no bytes: position "
            + pointer.position() + ", limit " + pointer.limit() + ", capacity " + pointer.capacity()
            + " (fix: set its capacity or limit to the allocation's size, e.g. pointer.capacity(bytes))");
        final long elements = end - pointer.position();
        Errors.checkArgument(elements <= Long.MAX_VALUE / element, pointer + " designates more than 2^63 bytes");
        return elements * element;
    }

    /** {@link #of(long, long)}, with the device ordinal in {@code device[0]} (-1: host memory). */
    static MemoryKind probe(final long address, final long bytes, final int[] device)
    {
        Errors.checkArgument(address != 0, "address is null");
        Errors.checkArgument(bytes > 0, "bytes=" + bytes + " must be positive");
        Errors.checkArgument(address > 0 && bytes <= Long.MAX_VALUE - address,
            "address 0x" + Long.toHexString(address) + " + " + bytes + " B wraps around");
        final int code = NativeApi.memoryKind(address, bytes, device);
        if (code == Te4jException.Code.INVALID_ARGUMENT.nativeCode())
        {
            throw new IllegalArgumentException(NativeApi.lastThreadError());
        }
        Errors.check(code, "MemoryKind.of(0x" + Long.toHexString(address) + ", " + bytes + ")",
            NativeApi::lastThreadError);
        final MemoryKind[] all = values();
        if (code >= all.length)
        {
            throw new Te4jException(Te4jException.Code.UNKNOWN, "MemoryKind: the native library reports kind "
                + code + ", unknown to this te4j jar (a natives jar of another version?)");
        }
        return all[code];
    }
}
