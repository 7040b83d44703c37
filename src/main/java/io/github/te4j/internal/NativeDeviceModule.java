package io.github.te4j.internal;

import org.bytedeco.javacpp.Loader;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.annotation.Cast;
import org.bytedeco.javacpp.annotation.Name;
import org.bytedeco.javacpp.annotation.NoException;
import org.bytedeco.javacpp.annotation.Namespace;
import org.bytedeco.javacpp.annotation.Properties;

/**
 * Peer of {@code te4j::DeviceModule}; see {@code te4j/module_api.h}. Kernel functions and
 * streams travel as addresses ({@code long}). Freed with NativeApi.destroyObject.
 */
@Properties(inherit = NativeConfig.class)
@Namespace("te4j")
@Name("DeviceModule")
public final class NativeDeviceModule extends Pointer
{
    static
    {
        Loader.load();
    }

    public NativeDeviceModule(final Pointer p)
    {
        super(p);
    }

    public static native NativeDeviceModule load(int device, @Cast("const void*") byte[] image, long bytes);

    public native int status();

    public native @Cast("const char*") String lastError();

    public native int device();

    public native int getFunction(String name, @Cast("void**") long[] function);

    public native int paramInfo(@Cast("void*") long function, int[] count, @Cast("int64_t*") long[] sizes,
        int capacity);

    public native int maxThreadsPerBlock(@Cast("void*") long function);

    public native int maxCooperativeBlocks(@Cast("void*") long function, int threads, long sharedBytes);

    /** Cannot throw: every failure is a status (and lastError). */
    @NoException
    public native int launch(@Cast("void*") long function, @Cast("void*") long stream, int gridX, int gridY,
        int gridZ, int blockX, int blockY, int blockZ, long sharedBytes, int cooperative,
        @Cast("const void*") long args, @Cast("const int64_t*") long offsets, int count);

    @NoException
    public native int launchRepeated(@Cast("void*") long function, @Cast("void*") long stream, int gridX, int gridY,
        int gridZ, int blockX, int blockY, int blockZ, long sharedBytes, int cooperative,
        @Cast("const void*") long args, @Cast("const int64_t*") long offsets, int count, int repeats);
}
