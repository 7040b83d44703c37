package io.github.te4j.internal;

import org.bytedeco.javacpp.Loader;
import org.bytedeco.javacpp.annotation.Cast;
import org.bytedeco.javacpp.annotation.Namespace;
import org.bytedeco.javacpp.annotation.Properties;
import org.bytedeco.javacpp.annotation.StdString;

/**
 * Peer of the free functions of {@code te4j/api.h}. Addresses travel as {@code long}.
 * Callers ({@link io.github.te4j}) validate every argument first.
 */
@Properties(inherit = NativeConfig.class)
@Namespace("te4j")
public final class NativeApi
{
    static
    {
        Loader.load();
    }

    private NativeApi()
    {
    }

    /** Lines "key=value" describing what works here. */
    public static native @StdString String availabilityReport();

    /** Message of the last failed free function on this thread. */
    public static native @Cast("const char*") String lastThreadError();

    public static native int cudaDeviceCount();

    public static native int cudaCanAccessPeer(int device, int peerDevice);

    public static native int copyMemory(
        int platform, int device, @Cast("void*") long dst, @Cast("const void*") long src, @Cast("size_t") long bytes);

    public static native int fillMemory(
        int platform, int device, @Cast("void*") long dst, int byteValue, @Cast("size_t") long bytes);

    /**
     * The MemoryKindCode of [ptr, ptr + bytes) and its CUDA device in {@code device[0]} (-1: host),
     * or a negative status (host memory that is not mapped over the whole range, a failed query).
     */
    public static native int memoryKind(@Cast("const void*") long ptr, @Cast("size_t") long bytes, int[] device);

    /** A pidfd on {@code pid}, or a negative status (no such process, no pidfds here). */
    public static native int processWatchOpen(int pid);

    /** 1 once the watched process exited, 0 while it runs, a negative status on error. */
    public static native int processWatchExited(int fd);

    public static native void processWatchClose(int fd);

    /** A zeroed CommCtx in host memory; free with {@link #deleteCommCtx(NativeCommCtx)}. */
    public static native NativeCommCtx newCommCtx();

    public static native void deleteCommCtx(NativeCommCtx ctx);

    /** Bit r set when rank r's route in {@code ctx}, decided when it was connected, is RDMA. */
    public static native @Cast("uint64_t") long commCtxRdmaRanks(NativeCommCtx ctx);

    /** Deletes any te4j native object (virtual destructor). */
    public static native void destroyObject(@Cast("te4j::NativeObject*") org.bytedeco.javacpp.Pointer object);
}
