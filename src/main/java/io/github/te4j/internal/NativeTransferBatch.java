package io.github.te4j.internal;

import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.IntPointer;
import org.bytedeco.javacpp.Loader;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.annotation.Cast;
import org.bytedeco.javacpp.annotation.Name;
import org.bytedeco.javacpp.annotation.Namespace;
import org.bytedeco.javacpp.annotation.Properties;

/** Peer of {@code te4j::TransferBatch}; see {@code te4j/batch_api.h} for each method's contract. */
@Properties(inherit = NativeConfig.class)
@Namespace("te4j")
@Name("TransferBatch")
public final class NativeTransferBatch extends Pointer
{
    static
    {
        Loader.load();
    }

    public NativeTransferBatch(final Pointer p)
    {
        super(p);
    }

    public static native NativeTransferBatch create(int platform, int device, int capacity);

    public native int status();

    public native @Cast("const char*") String lastError();

    @Name("capacity")
    public native int batchCapacity();

    /** The batch's descriptor slots ({@code te4j::BatchDescriptor[capacity]}), written in place. */
    public native @Cast("char*") BytePointer descriptors();

    public native int attachRdma(NativeRdmaTransport transport);

    /** Submits requests [first, first + count) from their descriptor slots. */
    public native int submit(int first, int count, @Cast("int64_t") long timeoutNanos);

    /** Submits requests [first, first + 2) from their slots as a notification's WRITE and fenced swap. */
    public native int submitPublication(int first, @Cast("uint64_t") long expected, @Cast("uint64_t") long sequence,
        @Cast("int64_t") long timeoutNanos);

    public native int states(int first, int count, @Cast("int32_t*") IntPointer out);

    public native int syndromes(int first, int count, @Cast("int32_t*") IntPointer out);

    /** {@code wait}: renamed because {@code Object.wait(long)} is final. */
    @Name("wait")
    public native int waitAll(@Cast("int64_t") long timeoutNanos);

    public native int cancel();
}
