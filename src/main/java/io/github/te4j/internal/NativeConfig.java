package io.github.te4j.internal;

import org.bytedeco.javacpp.annotation.Platform;
import org.bytedeco.javacpp.annotation.Properties;

/**
 * JavaCPP build settings shared by every peer class of this package: all of them compile into
 * one JNI library, {@code libjnite4j.so}, linked against {@code libte4j.so} (built by CMake).
 *
 * <p>Internal: the public API is {@code io.github.te4j}.
 */
@Properties(
    value = @Platform(
        value = "linux-x86_64",
        compiler = "cpp17",
        include = {"te4j/api.h", "te4j/rdma_api.h", "te4j/module_api.h", "te4j/batch_api.h",
            "te4j/list_api.h"},
        link = "te4j",
        library = "jnite4j"))
public final class NativeConfig
{
    private NativeConfig()
    {
    }
}
