package io.github.te4j.internal;

import org.bytedeco.javacpp.IntPointer;
import org.bytedeco.javacpp.Loader;
import org.bytedeco.javacpp.LongPointer;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.annotation.Cast;
import org.bytedeco.javacpp.annotation.Name;
import org.bytedeco.javacpp.annotation.Namespace;
import org.bytedeco.javacpp.annotation.Properties;

/** Peer of {@code te4j::TransferList}; see {@code te4j/list_api.h} for each method's contract. */
@Properties(inherit = NativeConfig.class)
@Namespace("te4j")
@Name("TransferList")
public final class NativeTransferList extends Pointer
{
    static
    {
        Loader.load();
    }

    public NativeTransferList(final Pointer p)
    {
        super(p);
    }

    /** The descriptors in native memory (a batch's staging layout), read during the call only. */
    public static native NativeTransferList create(int platform, int device, int count,
        @Cast("const int32_t*") IntPointer opcodes, @Cast("const uint64_t*") LongPointer local,
        @Cast("const uint64_t*") LongPointer remote, @Cast("const uint64_t*") LongPointer lengths);

    public native int status();

    public native @Cast("const char*") String lastError();

    @Name("size")
    public native int listSize();

    public native int post(int from, int to);

    public native int poll();

    /** {@code wait}: renamed because {@code Object.wait(long)} is final. */
    @Name("wait")
    public native int waitAll(@Cast("int64_t") long timeoutNanos);

    public native int cancel();

    public native int skipped();

    public native int states(int first, int count, @Cast("int32_t*") IntPointer out);
}
