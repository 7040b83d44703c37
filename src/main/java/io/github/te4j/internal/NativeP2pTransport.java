package io.github.te4j.internal;

import org.bytedeco.javacpp.Loader;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.annotation.Cast;
import org.bytedeco.javacpp.annotation.Name;
import org.bytedeco.javacpp.annotation.Namespace;
import org.bytedeco.javacpp.annotation.Properties;

/** Peer of {@code te4j::P2pTransport}; see {@code te4j/api.h} for each method's contract. */
@Properties(inherit = NativeConfig.class)
@Namespace("te4j")
@Name("P2pTransport")
public final class NativeP2pTransport extends Pointer
{
    static
    {
        Loader.load();
    }

    public NativeP2pTransport(final Pointer p)
    {
        super(p);
    }

    public static native NativeP2pTransport create(int platform, int device, int numRanks);

    /** Decodes a handle's wire bytes: values to {@code out}, blob words to {@code words}, a refusal to {@code why}. */
    public static native int describeHandle(@Cast("const uint8_t*") byte[] bytes, int length,
        @Cast("int64_t*") long[] out, int capacity, @Cast("int32_t*") int[] words, int wordsCapacity,
        @Cast("char*") byte[] why, int whyCapacity);

    /** The wire bytes of hand-made blob words (tools, tests). */
    public static native int encodeHandleWords(@Cast("const int32_t*") int[] words, int count,
        @Cast("uint8_t*") byte[] out, int capacity);

    public native int status();

    public native @Cast("const char*") String lastError();

    public native int platform();

    public native int device();

    /** Allocates; the address lands in {@code out[0]}. */
    public native int allocateBuffer(@Cast("size_t") long bytes, @Cast("void**") long[] out);

    public native int freeBuffer(@Cast("void*") long ptr);

    public native int registerBuffer(@Cast("void*") long ptr, @Cast("size_t") long bytes);

    public native int exportIpcHandle(@Cast("void*") long ptr, @Cast("int32_t*") int[] blob, int capacity);

    public native int handleInts();

    public native int handleBytesLength();

    public native int exportHandleBytes(@Cast("void*") long ptr, @Cast("uint8_t*") byte[] out, int capacity);

    /** {@code all}: the handles' wire bytes back to back, rank r's {@code lengths[r]} long. */
    public native int importPeerHandleBytes(
        @Cast("void*") long localPtr, int rank, int numRanks, @Cast("const uint8_t*") byte[] all,
        @Cast("const int32_t*") int[] lengths, int numEntries, @Cast("uint64_t") long activeRanksMask);

    public native int mapSegmentBytes(@Cast("const uint8_t*") byte[] bytes, int length, @Cast("void**") long[] base,
        @Cast("uint64_t*") long[] size);

    public native int importPeerHandles(
        @Cast("void*") long localPtr, int rank, int numRanks,
        @Cast("const int32_t*") int[] remoteHandles, @Cast("uint64_t") long activeRanksMask);

    public native int closeWindow(int window);

    public native @Cast("intptr_t") long availableTablePtr(int window);

    public native @Cast("intptr_t") long peerPtrsTablePtr(int window);

    public native @Cast("bool") boolean allPeersAccessible(int window);

    public native int verifyPeerAccess(int window);

    public native int makeCommCtx(int window, NativeCommCtx ctx);

    /** Maps one peer buffer of any size; its address lands in {@code base[0]}, its size in {@code bytes[0]}. */
    public native int mapSegment(@Cast("const int32_t*") int[] blob, int ints, @Cast("void**") long[] base,
        @Cast("uint64_t*") long[] bytes);

    public native int unmapSegment(@Cast("void*") long base);
}
