package io.github.te4j.internal;

import org.bytedeco.javacpp.Loader;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.annotation.Cast;
import org.bytedeco.javacpp.annotation.Name;
import org.bytedeco.javacpp.annotation.Namespace;
import org.bytedeco.javacpp.annotation.Properties;

/**
 * Peer of {@code te4j::OpStream}; see {@code te4j/api.h} for each method's contract. The per-op
 * methods take only primitives (the context as the address of its native {@code CommCtx}): the
 * generated JNI then reads no fields of argument objects, one call per op is the JNI transition
 * and the stream's own address.
 */
@Properties(inherit = NativeConfig.class)
@Namespace("te4j")
@Name("OpStream")
public final class NativeOpStream extends Pointer
{
    static
    {
        Loader.load();
    }

    public NativeOpStream(final Pointer p)
    {
        super(p);
    }

    public static native NativeOpStream create(int platform, int device);

    public static native NativeOpStream wrapCuda(int device, @Cast("void*") long cudaStream);

    public native int status();

    public native @Cast("const char*") String lastError();

    public native int platform();

    public native @Cast("intptr_t") long nativeHandle();

    public native int put(
        @Cast("const mooncake::device::CommCtx*") long ctx, int dstRank, @Cast("void*") long recvPtr,
        @Cast("const void*") long sendPtr,
        @Cast("size_t") long nbytes, int blocks, int threads);

    public native int putWithSignal(
        @Cast("const mooncake::device::CommCtx*") long ctx, int dstRank, @Cast("void*") long recvPtr,
        @Cast("const void*") long sendPtr,
        @Cast("size_t") long nbytes, @Cast("uint32_t*") long sigPtr, @Cast("uint32_t") int value, int blocks,
        int threads);

    public native int signal(
        @Cast("const mooncake::device::CommCtx*") long ctx, int dstRank, @Cast("uint32_t*") long sigPtr,
        @Cast("uint32_t") int value);

    public native int redAdd(
        @Cast("const mooncake::device::CommCtx*") long ctx, int dstRank, @Cast("uint32_t*") long ptr,
        @Cast("uint32_t") int value);

    public native int waitSignal(@Cast("uint32_t*") long sigPtr, @Cast("uint32_t") int expected, long timeoutNs);

    public native int synchronize(long timeoutNs);

    public native int beginCapture();

    public native int endCapture(@Cast("void**") long[] graphExec);

    public native int launchGraph(@Cast("void*") long graphExec);

    public native int destroyGraph(@Cast("void*") long graphExec);
}
