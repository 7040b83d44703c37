package io.github.te4j.internal;

import org.bytedeco.javacpp.Loader;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.annotation.Cast;
import org.bytedeco.javacpp.annotation.Name;
import org.bytedeco.javacpp.annotation.Namespace;
import org.bytedeco.javacpp.annotation.Properties;

/** Peer of {@code te4j::RdmaTransport}; see {@code te4j/rdma_api.h} for each method's contract. */
@Properties(inherit = NativeConfig.class)
@Namespace("te4j")
@Name("RdmaTransport")
public final class NativeRdmaTransport extends Pointer
{
    static
    {
        Loader.load();
    }

    public NativeRdmaTransport(final Pointer p)
    {
        super(p);
    }

    public static native NativeRdmaTransport create(int platform, int device, int backend);

    public static native int clearCommCtx(NativeCommCtx ctx);

    public native int status();

    public native @Cast("const char*") String lastError();

    public native int backend();

    public native int initialize(@Cast("const char*") String deviceName, int numRanks, int numQps);

    public native int registerMemory(@Cast("void*") long ptr, @Cast("size_t") long bytes);

    public native int deregisterMemory(@Cast("void*") long ptr);

    public native int deregisterRange(@Cast("void*") long ptr, @Cast("size_t") long bytes);

    public native int setRingSize(int wqebbs);

    public native int allocateControlBuffer();

    public native int createQueuePairs(@Cast("void*") long stream);

    public native int recreateQueuePairs(@Cast("void*") long stream);

    public native int encodedMetadataLength();

    public native int encodedMetadata(@Cast("uint8_t*") byte[] out, int capacity);

    public native int connectMetadata(int localRank, @Cast("const uint8_t*") byte[] all,
        @Cast("const int32_t*") int[] lengths, int numEntries, @Cast("uint64_t") long activeRanksMask);

    public static native int describeMetadata(@Cast("const uint8_t*") byte[] bytes, int length,
        @Cast("int64_t*") long[] out, int capacity, @Cast("uint8_t*") byte[] key, int keyCapacity,
        @Cast("char*") byte[] why, int whyCapacity);

    public static native int encodeMetadataValues(@Cast("const int64_t*") long[] values, int count,
        @Cast("const uint8_t*") byte[] key, int keyLength, @Cast("uint8_t*") byte[] out, int capacity);

    public native @Cast("intptr_t") long raddrsPtr();

    public native @Cast("intptr_t") long rkeysPtr();

    public native @Cast("intptr_t") long qpDevCtxsPtr();

    public native @Cast("bool") boolean isRoce();

    public native int gidIndex();

    public native int numRanks();

    public native int qpsPerRank();

    public native int setDeviceTimeoutNs(@Cast("int64_t") long timeoutNs);

    public native int fillCommCtx(NativeCommCtx ctx);

    public native int queryQpError(int qpIndex, @Cast("int64_t*") long[] out, int capacity);

    public native int statistics(@Cast("int64_t*") long[] out, int capacity);

    public native @Cast("const char*") String statisticsNames();

    public native @Cast("const char*") String diagnostics();

    public native int lostPeers(@Cast("int32_t*") int[] out, int capacity);

    public native int setPeerTimeoutMs(int timeoutMs);

    public native int setConnectTimeoutMs(int timeoutMs);

    public native @Cast("int64_t") long regionKey(@Cast("void*") long ptr, @Cast("size_t") long bytes);
}
