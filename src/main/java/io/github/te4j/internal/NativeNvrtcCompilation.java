package io.github.te4j.internal;

import org.bytedeco.javacpp.Loader;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.annotation.Cast;
import org.bytedeco.javacpp.annotation.Name;
import org.bytedeco.javacpp.annotation.Namespace;
import org.bytedeco.javacpp.annotation.Properties;

/** Peer of {@code te4j::NvrtcCompilation}; see {@code te4j/module_api.h}. Freed with NativeApi.destroyObject. */
@Properties(inherit = NativeConfig.class)
@Namespace("te4j")
@Name("NvrtcCompilation")
public final class NativeNvrtcCompilation extends Pointer
{
    static
    {
        Loader.load();
    }

    public NativeNvrtcCompilation(final Pointer p)
    {
        super(p);
    }

    /** Options and name expressions are joined by '\n'. */
    public static native NativeNvrtcCompilation compile(String source, String name, String options,
        String nameExpressions);

    public native int status();

    public native @Cast("const char*") String lastError();

    public native @Cast("const char*") String log();

    public native long imageBytes();

    public native int imageIsCubin();

    public native int copyImage(@Cast("void*") byte[] dst, long capacity);

    public native @Cast("const char*") String loweredName(int index);

    public native int nameExpressionCount();
}
