package io.github.te4j.internal;

import org.bytedeco.javacpp.Loader;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.annotation.Cast;
import org.bytedeco.javacpp.annotation.Name;
import org.bytedeco.javacpp.annotation.Namespace;
import org.bytedeco.javacpp.annotation.Properties;

/** Peer of {@code te4j::RdmaTransferBatch}; see {@code te4j/rdma_batch_api.h} for each method's contract. */
@Properties(inherit = NativeConfig.class)
@Namespace("te4j")
@Name("RdmaTransferBatch")
public final class NativeRdmaTransferBatch extends Pointer
{
    static
    {
        Loader.load();
    }

    public NativeRdmaTransferBatch(final Pointer p)
    {
        super(p);
    }

    public static native NativeRdmaTransferBatch create(NativeRdmaTransport transport, int capacity);

    public native int status();

    public native @Cast("const char*") String lastError();

    public native int submit(int first, int count, @Cast("const int32_t*") int[] opcodes,
        @Cast("const uint64_t*") long[] local, @Cast("const uint32_t*") int[] lkeys,
        @Cast("const uint64_t*") long[] remote, @Cast("const uint32_t*") int[] rkeys,
        @Cast("const uint64_t*") long[] lengths, @Cast("const int32_t*") int[] ranks,
        @Cast("int64_t") long timeoutNanos);

    public native int submitPublication(int first, @Cast("uint64_t") long slotLocal,
        @Cast("uint64_t") long fetchLocal, @Cast("uint32_t") int lkey, @Cast("uint64_t") long slotRemote,
        @Cast("uint64_t") long seqRemote, @Cast("uint32_t") int rkey, @Cast("uint32_t") int slotBytes,
        @Cast("uint64_t") long expected, @Cast("uint64_t") long sequence, @Cast("int32_t") int rank,
        @Cast("int64_t") long timeoutNanos);

    public native int states(int first, int count, @Cast("int32_t*") int[] out);

    public native int syndromes(int first, int count, @Cast("int32_t*") int[] out);

    /** {@code wait}: renamed because {@code Object.wait(long)} is final. */
    @Name("wait")
    public native int waitAll(@Cast("int64_t") long timeoutNanos);

    public native int cancel();
}
