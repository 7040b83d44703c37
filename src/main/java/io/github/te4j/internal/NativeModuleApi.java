package io.github.te4j.internal;

import org.bytedeco.javacpp.Loader;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.annotation.Cast;
import org.bytedeco.javacpp.annotation.Const;
import org.bytedeco.javacpp.annotation.Namespace;
import org.bytedeco.javacpp.annotation.Properties;
import org.bytedeco.javacpp.annotation.StdString;

/**
 * Peer of the free functions of {@code te4j/module_api.h}: NVRTC loading, the GPU's compute
 * capability and the CommCtx bytes. Callers ({@link io.github.te4j}) validate arguments first.
 */
@Properties(inherit = NativeConfig.class)
@Namespace("te4j")
public final class NativeModuleApi
{
    static
    {
        Loader.load();
    }

    private NativeModuleApi()
    {
    }

    public static native @Cast("const char*") String moduleLastError();

    /** NVRTC's version (major * 1000 + minor * 10) or a negative status; candidates joined by '\n'. */
    public static native int nvrtcLoad(String candidates);

    public static native @StdString String nvrtcLibrary();

    public static native int cudaComputeCapability(int device);

    public static native long commCtxSize();

    public static native @StdString String commCtxLayout();

    public static native int copyCommCtx(@Const NativeCommCtx ctx, @Cast("void*") byte[] dst, long capacity);

    public static native int copyCommCtx(@Const NativeCommCtx ctx, @Cast("void*") Pointer dst, long capacity);

    /** As above into native memory at {@code dst} (a kernel's parameter block). */
    public static native int copyCommCtx(@Const NativeCommCtx ctx, @Cast("void*") long dst, long capacity);
}
