package io.github.te4j.bench.internal;

import io.github.te4j.internal.NativeApi;

import org.bytedeco.javacpp.Loader;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.annotation.Cast;
import org.bytedeco.javacpp.annotation.Name;
import org.bytedeco.javacpp.annotation.Namespace;
import org.bytedeco.javacpp.annotation.Platform;
import org.bytedeco.javacpp.annotation.Properties;

/**
 * Peers of {@code te4j/bench_api.h} (namespace {@code te4j::bench}): the native half of
 * te4j-bench. Addresses travel as {@code long}; every method returns a te4j status and keeps its
 * message in {@code lastError()}. Objects are deleted with {@link NativeApi#destroyObject}.
 * Callers ({@code io.github.te4j.bench}) validate every argument first.
 */
@Properties(
    value = @Platform(
        value = "linux-x86_64",
        compiler = "cpp17",
        include = "te4j/bench_api.h",
        link = "te4jbench",
        library = "jnite4jbench"))
@Namespace("te4j::bench")
public final class NativeBench
{
    static
    {
        // libte4jbench needs libte4j: load the library's natives (from its platform jar) first,
        // so the dynamic linker finds libte4j by its soname instead of looking for a file.
        Loader.load(NativeApi.class);
        Loader.load();
    }

    private NativeBench()
    {
    }

    /** {@code te4j::bench::applyTuning}: the variant knobs for this process ("" = defaults). */
    public static native int applyTuning(String spec);

    /** {@code te4j::bench::tuningText}: the knobs in force, or why the last applyTuning failed. */
    public static native @Cast("const char*") String tuningText();

    /**
     * {@code te4j::bench::exitNow}: ends the process with {@code code} after flushing stdio,
     * skipping exit()'s teardown (for threads still inside native calls).
     */
    public static native void exitNow(int code);

    /** Peer of {@code te4j::bench::StreamTimer}: CUDA events on a stream, or the monotonic clock. */
    @Name("StreamTimer")
    public static final class StreamTimer extends Pointer
    {
        static
        {
            Loader.load(NativeApi.class);
            Loader.load();
        }

        public StreamTimer(final Pointer p)
        {
            super(p);
        }

        public static native StreamTimer create(int platform, int device, @Cast("void*") long stream);

        public native int status();

        public native @Cast("const char*") String lastError();

        public native int start();

        public native int stop();

        public native int elapsedNs(long timeoutNs, @Cast("int64_t*") long[] out);
    }

    /** The {@code how} values of {@link CopyBaseline#copyBlocks} (bench_api.h's kBlocks*). */
    public static final class CopyBaselineModes
    {
        public static final int LOOP = 0;
        public static final int BATCH_ASYNC = 1;
        public static final int CONTIGUOUS = 2;

        private CopyBaselineModes()
        {
        }
    }

    /** Peer of {@code te4j::bench::CopyBaseline}: copy engine / SM copy kernel / memcpy. */
    @Name("CopyBaseline")
    public static final class CopyBaseline extends Pointer
    {
        static
        {
            Loader.load(NativeApi.class);
            Loader.load();
        }

        public CopyBaseline(final Pointer p)
        {
            super(p);
        }

        public static native CopyBaseline create(int platform, int device, @Cast("void*") long stream);

        public native int status();

        public native @Cast("const char*") String lastError();

        public native int copyEngine(@Cast("void*") long dst, @Cast("const void*") long src,
            @Cast("size_t") long bytes, int count, long timeoutNs, @Cast("int64_t*") long[] elapsedNs);

        public native int smCopy(@Cast("void*") long dst, @Cast("const void*") long src, @Cast("size_t") long bytes,
            int blocks, int threads, int count, long timeoutNs, @Cast("int64_t*") long[] elapsedNs);

        /** The batch baselines; {@code how}: 0 loop, 1 cudaMemcpyBatchAsync, 2 one contiguous copy. */
        public native int copyBlocks(int how, @Cast("const uint64_t*") long[] dst, @Cast("const uint64_t*") long[] src,
            @Cast("const uint64_t*") long[] bytes, int count, long timeoutNs, @Cast("int64_t*") long[] elapsedNs);
    }

    /** Peer of {@code te4j::bench::PingPong}: te4j put+signal and raw flag round trips. */
    @Name("PingPong")
    public static final class PingPong extends Pointer
    {
        static
        {
            Loader.load(NativeApi.class);
            Loader.load();
        }

        public PingPong(final Pointer p)
        {
            super(p);
        }

        public static native PingPong create(int platform, int device, @Cast("void*") long localBase,
            @Cast("void*") long availableTable, @Cast("void*") long peerPtrsTable, int rank, int peer,
            @Cast("uint32_t*") long sig, @Cast("uint32_t*") long flag, @Cast("uint32_t*") long peerFlag,
            @Cast("uint32_t*") long ready);

        public native int status();

        public native @Cast("const char*") String lastError();

        public native int te4j(boolean initiator, @Cast("void*") long dst, @Cast("const void*") long src,
            @Cast("size_t") long bytes, int iters, long timeoutNs, @Cast("int64_t*") long[] elapsedNs);

        public native int te4jLl(boolean initiator, @Cast("void*") long slot, @Cast("void*") long dst,
            @Cast("const void*") long src, @Cast("size_t") long bytes, int iters, long timeoutNs,
            @Cast("int64_t*") long[] elapsedNs);

        public native int rawFlag(boolean initiator, int iters, long timeoutNs, @Cast("int64_t*") long[] elapsedNs);
    }

    /** Peer of {@code te4j::bench::LaunchLoop}: the C++ loop of {@code OpStream::putWithSignal}. */
    @Name("LaunchLoop")
    public static final class LaunchLoop extends Pointer
    {
        static
        {
            Loader.load(NativeApi.class);
            Loader.load();
        }

        public LaunchLoop(final Pointer p)
        {
            super(p);
        }

        public static native LaunchLoop create(int platform, int device, @Cast("void*") long localBase,
            @Cast("void*") long availableTable, @Cast("void*") long peerPtrsTable, int rank);

        public native int status();

        public native @Cast("const char*") String lastError();

        public native int putWithSignal(int dstRank, @Cast("void*") long recv, @Cast("const void*") long send,
            @Cast("size_t") long bytes, @Cast("uint32_t*") long sig, int blocks, int threads, int count,
            long timeoutNs, @Cast("int64_t*") long[] elapsedNs);
    }

    /** Peer of {@code te4j::bench::TcpBaseline}: raw TCP beside the software NIC's rows. */
    @Name("TcpBaseline")
    public static final class TcpBaseline extends Pointer
    {
        static
        {
            Loader.load(NativeApi.class);
            Loader.load();
        }

        public TcpBaseline(final Pointer p)
        {
            super(p);
        }

        public static native TcpBaseline create();

        public native int status();

        public native @Cast("const char*") String lastError();

        public native int listen(String ipv4);

        public native int connect(String ipv4, int port, long timeoutNs);

        public native int accept(long timeoutNs);

        public native int pingPong(boolean initiator, @Cast("size_t") long bytes, int iters, long timeoutNs,
            @Cast("int64_t*") long[] elapsedNs);

        public native int oneWay(boolean sender, @Cast("size_t") long bytes, int count, long timeoutNs,
            @Cast("int64_t*") long[] elapsedNs);
    }
}
