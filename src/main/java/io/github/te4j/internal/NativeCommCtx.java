package io.github.te4j.internal;

import org.bytedeco.javacpp.Loader;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.annotation.Name;
import org.bytedeco.javacpp.annotation.Namespace;
import org.bytedeco.javacpp.annotation.Opaque;
import org.bytedeco.javacpp.annotation.Properties;

/**
 * Peer of {@code mooncake::device::CommCtx} in host memory: the context handed by value to every
 * operation (P2P tables, RDMA tables, rank). Opaque here: made by
 * {@link NativeApi#newCommCtx()} and filled by the transports.
 */
@Properties(inherit = NativeConfig.class)
@Opaque
@Namespace("mooncake::device")
@Name("CommCtx")
public final class NativeCommCtx extends Pointer
{
    static
    {
        Loader.load();
    }

    public NativeCommCtx(final Pointer p)
    {
        super(p);
    }
}
