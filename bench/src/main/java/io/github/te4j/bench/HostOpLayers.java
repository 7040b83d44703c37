package io.github.te4j.bench;

import io.github.te4j.CommContext;
import io.github.te4j.DeviceBuffer;
import io.github.te4j.IpcHandle;
import io.github.te4j.OpStream;
import io.github.te4j.Platform;
import io.github.te4j.TransferEngine;
import io.github.te4j.internal.NativeCommCtx;
import io.github.te4j.internal.NativeOpStream;
import java.lang.reflect.Field;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * Per-op cost of one host-platform put, layer by layer, in one JVM (two engines, rank 0 puts to
 * rank 1's mapped window): the whole {@code OpStream.put} call, the JavaCPP call of the native
 * put alone (the stream's native peer, reached by reflection: no Java checks, locks or
 * tracking), a JNI call that does nothing (the JNI transition and the peer's address lookup),
 * and the executor's side (ops enqueued back to back, timed to the end of synchronize). Each
 * figure is the median of several samples of {@code N} ops; the differences between rows are
 * the cost of each layer. A bench tool, not a test: {@code java -cp te4j-bench.jar
 * io.github.te4j.bench.HostOpLayers [bytes ...]}.
 */
public final class HostOpLayers
{
    private static final int OPS = 1000;
    private static final int SAMPLES = 41;
    private static final Duration T = Duration.ofSeconds(30);
    private static final com.sun.management.ThreadMXBean ALLOCATED =
        (com.sun.management.ThreadMXBean)java.lang.management.ManagementFactory.getThreadMXBean();

    private HostOpLayers()
    {
    }

    public static void main(final String[] args) throws Exception
    {
        final long[] sizes = args.length == 0 ? new long[] {64, 2048} : Arrays.stream(args).mapToLong(Long::parseLong)
            .toArray();
        final TransferEngine[] engines = new TransferEngine[2];
        final DeviceBuffer[] windows = new DeviceBuffer[2];
        final List<IpcHandle> handles = new ArrayList<>();
        final long windowBytes = 1 << 20;
        try
        {
            for (int r = 0; r < 2; r++)
            {
                engines[r] = TransferEngine.builder().platform(Platform.HOST).build();
                windows[r] = engines[r].getOrCreateP2pTransport(2).allocateBuffer(windowBytes);
                handles.add(engines[r].getOrCreateP2pTransport(2).exportHandle(windows[r]));
            }
            final CommContext ctx = engines[0].getOrCreateP2pTransport(2).importPeerHandles(windows[0], 0, handles, 0b11);
            engines[1].getOrCreateP2pTransport(2).importPeerHandles(windows[1], 1, handles, 0b11);
            final OpStream stream = engines[0].createStream();
            final NativeOpStream peer = (NativeOpStream)field(OpStream.class, "peer").get(stream);
            final NativeCommCtx nctx = (NativeCommCtx)field(CommContext.class, "ctx").get(ctx);
            final long localBase = windows[0].address();
            final long nctxAddress = nctx.address();
            System.out.printf("# host put layers, %d CPUs, median of %d samples of %d ops, ns per op%n",
                Runtime.getRuntime().availableProcessors(), SAMPLES, OPS);
            System.out.printf("%-72s %6s %10s %8s %10s%n", "layer", "bytes", "median ns", "min ns", "B alloc/op");
            for (final long bytes : sizes)
            {
                final long dstOff = windowBytes / 2;
                report("OpStream.put, enqueue only (Java API: checks, locks, JNI, native enqueue)", bytes,
                    time(() -> stream.put(ctx, 1, dstOff, windows[0], 0, bytes), null, stream));
                report("OpStream.put + synchronize per sample (the bench's 'te4j put')", bytes,
                    time(() -> stream.put(ctx, 1, dstOff, windows[0], 0, bytes), stream, stream));
                report("NativeOpStream.put, enqueue only (JNI + native enqueue)", bytes,
                    time(() -> peer.put(nctxAddress, 1, localBase + dstOff, localBase, bytes, 0, 0), null, stream));
                report("NativeOpStream.put + synchronize per sample", bytes,
                    time(() -> peer.put(nctxAddress, 1, localBase + dstOff, localBase, bytes, 0, 0), stream, stream));
            }
            report("NativeOpStream.platform() (a JNI call that does nothing)", 0, time(peer::platform, null, null));
            final ReentrantReadWriteLock[] rw = {new ReentrantReadWriteLock(), new ReentrantReadWriteLock(),
                new ReentrantReadWriteLock()};
            report("3 ReentrantReadWriteLock read lock + unlock (stream, window, source)", 0, time(() ->
            {
                for (final ReentrantReadWriteLock l : rw)
                {
                    l.readLock().lock();
                }
                for (final ReentrantReadWriteLock l : rw)
                {
                    l.readLock().unlock();
                }
            }, null, null));
            final Set<Object> set = ConcurrentHashMap.newKeySet();
            final Object[] keys = {stream, ctx, windows[0]};
            set.addAll(Arrays.asList(keys));
            report("3 ConcurrentHashMap.contains of present keys (touch)", 0, time(() ->
            {
                for (final Object k : keys)
                {
                    if (!set.contains(k))
                    {
                        throw new IllegalStateException();
                    }
                }
            }, null, null));
            stream.close();
        }
        finally
        {
            for (final TransferEngine e : engines)
            {
                if (e != null)
                {
                    e.close();
                }
            }
        }
    }

    private static Field field(final Class<?> c, final String name) throws NoSuchFieldException
    {
        final Field f = c.getDeclaredField(name);
        f.setAccessible(true);
        return f;
    }

    /** Median and minimum ns per op over the samples; {@code timed}: synchronize inside the sample. */
    private static long[] time(final Runnable op, final OpStream timed, final OpStream drained)
    {
        final long[] ns = new long[SAMPLES];
        // Enough calls for the JIT to compile the whole enqueue path before anything is timed.
        for (int warm = 0; warm < 200; warm++)
        {
            sample(op, timed, drained);
        }
        for (int s = 0; s < SAMPLES; s++)
        {
            ns[s] = sample(op, timed, drained);
        }
        final long before = ALLOCATED.getCurrentThreadAllocatedBytes();
        sample(op, timed, drained);
        final long bytesPerOp = (ALLOCATED.getCurrentThreadAllocatedBytes() - before) / OPS;
        Arrays.sort(ns);
        return new long[] {ns[SAMPLES / 2], ns[0], bytesPerOp};
    }

    private static long sample(final Runnable op, final OpStream timed, final OpStream drained)
    {
        final long t0 = System.nanoTime();
        for (int i = 0; i < OPS; i++)
        {
            op.run();
        }
        if (timed != null)
        {
            timed.synchronize(T);
        }
        final long t1 = System.nanoTime();
        if (drained != null && timed == null)
        {
            drained.synchronize(T);
        }
        return (t1 - t0) / OPS;
    }

    private static void report(final String layer, final long bytes, final long[] ns)
    {
        System.out.printf("%-72s %6d %10d %8d %10d%n", layer, bytes, ns[0], ns[1], ns[2]);
    }
}
