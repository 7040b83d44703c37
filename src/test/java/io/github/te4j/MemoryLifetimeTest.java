package io.github.te4j;

import io.github.te4j.check.Patterns;
import io.github.te4j.exchange.InMemorySegmentDirectory;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.Pointer;
import org.testng.Assert;
import org.testng.annotations.AfterMethod;
import org.testng.annotations.BeforeMethod;
import org.testng.annotations.Test;

/**
 * Issue 32, build 1: memory registered with a transfer agent cannot be freed under a batch. A
 * raw range inside a te4j buffer closed before its registration is refused; one closed after is
 * withdrawn, and a batch READ into it is refused with the reason instead of copying into freed
 * memory (which crashed the JVM). Also the registration of memory from elsewhere through a
 * JavaCPP pointer (issue 30, item 4), its kind, and the host platform's buffer views.
 */
public class MemoryLifetimeTest
{
    private static final Duration T = Duration.ofSeconds(30);
    private static final long AREA = 4L << 20;

    private TransferEngine e0;
    private TransferEngine e1;
    private P2pTransport p0;
    private TransferAgent a0;
    private DeviceBuffer seg1;
    private SegmentHandle s1;
    private InMemorySegmentDirectory dir0;
    private InMemorySegmentDirectory dir1;

    @BeforeMethod(alwaysRun = true)
    public void setUp()
    {
        final String space = "lifetime" + System.nanoTime();
        e0 = TransferEngine.builder().platform(Platform.HOST).build();
        e1 = TransferEngine.builder().platform(Platform.HOST).build();
        p0 = e0.getOrCreateP2pTransport(2);
        final P2pTransport p1 = e1.getOrCreateP2pTransport(2);
        a0 = e0.createTransferAgent(p0, "rank0");
        final TransferAgent a1 = e1.createTransferAgent(p1, "rank1");
        seg1 = p1.allocateBuffer(AREA);
        a1.registerLocalMemory(seg1);
        dir0 = InMemorySegmentDirectory.open(space);
        dir1 = InMemorySegmentDirectory.open(space);
        a1.publishSegment(dir1);
        s1 = a0.openSegment("rank1", dir0, T);
    }

    @AfterMethod(alwaysRun = true)
    public void tearDown() throws Exception
    {
        for (final AutoCloseable c : new AutoCloseable[] {e0, e1, dir0, dir1})
        {
            if (c != null)
            {
                c.close();
            }
        }
    }

    private static void expectMessage(final Class<? extends Throwable> type, final String needle, final Runnable r)
    {
        final Throwable t = Assert.expectThrows(type, r::run);
        Assert.assertTrue(t.getMessage() != null && t.getMessage().contains(needle),
            "expected '" + needle + "' in: " + t.getMessage());
    }

    /** The crash of the issue, first order: the buffer is closed, then its memory is registered. */
    @Test(groups = "host", timeOut = 60_000)
    public void rawRangeOfClosedBufferIsRefused()
    {
        final DeviceBuffer b = p0.allocateBuffer(AREA);
        final long inside = b.address() + 4096;
        b.close();
        expectMessage(IllegalArgumentException.class, "freed", () -> a0.registerLocalMemory(inside, 65536));
        expectMessage(IllegalArgumentException.class, "freed", () -> a0.registerLocalMemory(b.address(), AREA));
    }

    /** Second order: registered inside a live buffer, which is then closed; a READ into it is refused. */
    @Test(groups = "host", timeOut = 60_000)
    public void rawRangeIsWithdrawnWhenItsBufferCloses()
    {
        final DeviceBuffer b = p0.allocateBuffer(AREA);
        final RegisteredMemory m = a0.registerLocalMemory(b.address() + 4096, 65536);
        Assert.assertTrue(m.isRegistered());
        // While the buffer lives, the range works as local memory.
        seg1.write(0, new byte[] {1, 2, 3, 4});
        try (TransferBatch batch = a0.allocateBatch(1))
        {
            batch.submit(List.of(TransferRequest.read(m, 0, s1, 0, 4)), T);
            Assert.assertEquals(batch.await(T).get(0).state(), TransferState.COMPLETED);
        }
        Assert.assertEquals(b.read(4096, 4), new byte[] {1, 2, 3, 4});
        b.close();
        Assert.assertFalse(m.isRegistered(), "the close withdrew the registration");
        try (TransferBatch batch = a0.allocateBatch(1))
        {
            expectMessage(IllegalArgumentException.class, "not registered",
                () -> batch.submit(List.of(TransferRequest.read(m, 0, s1, 0, 65536)), T));
        }
        expectMessage(IllegalArgumentException.class, "not registered", () -> a0.unregisterLocalMemory(m));
        // The range is now freed te4j memory: registering it again is refused.
        expectMessage(IllegalArgumentException.class, "freed", () -> a0.registerLocalMemory(b.address() + 4096, 4096));
    }

    /** A te4j buffer registered whole: its close unregisters it from the agent first. */
    @Test(groups = "host", timeOut = 60_000)
    public void registeredBufferCloseUnregisters()
    {
        final DeviceBuffer b = p0.allocateBuffer(AREA);
        final RegisteredMemory m = a0.registerLocalMemory(b);
        b.close();
        Assert.assertFalse(m.isRegistered());
        expectMessage(IllegalArgumentException.class, "not registered", () -> a0.unregisterLocalMemory(m));
        try (TransferBatch batch = a0.allocateBatch(1))
        {
            expectMessage(IllegalArgumentException.class, "not registered",
                () -> batch.submit(List.of(TransferRequest.read(m, 0, s1, 0, 4096)), T));
        }
    }

    /**
     * The buffer is closed from another thread while READs into a raw range inside it run: the
     * close waits (bounded) for them, so every request ends in a state and no byte lands in
     * freed memory; the close returns.
     */
    @Test(groups = "host", timeOut = 120_000)
    public void closeDuringBatchWaitsForIt() throws Exception
    {
        for (int round = 0; round < 10; round++)
        {
            final DeviceBuffer b = p0.allocateBuffer(AREA);
            final RegisteredMemory m = a0.registerLocalMemory(b.address(), AREA);
            try (TransferBatch batch = a0.allocateBatch(64))
            {
                final List<TransferRequest> reads = new java.util.ArrayList<>();
                for (int i = 0; i < 64; i++)
                {
                    reads.add(TransferRequest.read(m, (i % 4) * (AREA / 4), s1, 0, AREA / 4));
                }
                batch.submit(reads, T);
                final CompletableFuture<Void> closer = CompletableFuture.runAsync(b::close);
                closer.get(30, TimeUnit.SECONDS);
                Assert.assertFalse(m.isRegistered());
                for (final TransferStatus s : batch.await(T))
                {
                    Assert.assertNotEquals(s.state(), TransferState.PENDING, "request left running after the close");
                }
            }
        }
    }

    /** Ranges that reach outside a live buffer, and memory that is not mapped at all, are refused. */
    @Test(groups = "host", timeOut = 60_000)
    public void straddlingAndUnmappedRangesAreRefused()
    {
        final DeviceBuffer b = p0.allocateBuffer(AREA);
        expectMessage(IllegalArgumentException.class, "reaches outside",
            () -> a0.registerLocalMemory(b.address() + AREA - 4096, 8192));
        expectMessage(IllegalArgumentException.class, "reaches outside",
            () -> a0.registerLocalMemory(b.address() - 4096, 8192));
        // The first page of the address space is never mapped on Linux (vm.mmap_min_addr).
        expectMessage(IllegalArgumentException.class, "not mapped", () -> a0.registerLocalMemory(4096, 4096));
        // te4j's mapping of another process's segment is not local memory.
        final long mapped = s1.addressOf(0, 4096);
        expectMessage(IllegalArgumentException.class, "mapping", () -> a0.registerLocalMemory(mapped, 4096));
    }

    /** A JavaCPP pointer at its position, to its limit: registered, transferred both ways, checked. */
    @Test(groups = "host", timeOut = 60_000)
    public void javacppPointerIsLocalMemory()
    {
        try (BytePointer whole = outsideFreedTe4jMemory(1 << 20))
        {
            final Random rnd = new Random(Patterns.seed(1, 2, 3, 4));
            final byte[] data = new byte[65536];
            rnd.nextBytes(data);
            whole.position(0).put(new byte[1 << 20]);
            whole.position(4096).put(data, 0, data.length);
            final BytePointer window = new BytePointer(whole).position(4096).limit(4096 + 2 * 65536);
            Assert.assertEquals(MemoryKind.of(window), MemoryKind.PAGEABLE_HOST);
            Assert.assertEquals(MemoryKind.pointerAddress(window), whole.address() + 4096);
            Assert.assertEquals(MemoryKind.pointerBytes(window), 2 * 65536);
            final RegisteredMemory m = a0.registerLocalMemory(window);
            Assert.assertEquals(m.address(), whole.address() + 4096);
            Assert.assertEquals(m.size(), 2 * 65536);
            seg1.fill(0, AREA, Patterns.POISON);
            final byte[] back = new byte[65536];
            rnd.nextBytes(back);
            seg1.write(1 << 20, back);
            try (TransferBatch batch = a0.allocateBatch(2))
            {
                batch.submit(List.of(TransferRequest.write(m, 0, s1, 8192, 65536),
                    TransferRequest.read(m, 65536, s1, 1 << 20, 65536)), T);
                batch.await(T).forEach(s -> Assert.assertEquals(s.state(), TransferState.COMPLETED));
            }
            Assert.assertEquals(seg1.read(8192, 65536), data);
            Assert.assertEquals(seg1.read(8192 + 65536, 16), poison(16), "no byte past the request");
            final byte[] landed = new byte[65536];
            whole.position(4096 + 65536).get(landed);
            Assert.assertEquals(landed, back);
            a0.unregisterLocalMemory(m);
            // A pointer that designates no bytes, and a null one, are refused with the fix.
            final Pointer noSize = new Pointer(whole).position(0).limit(0).capacity(0);
            expectMessage(IllegalArgumentException.class, "capacity", () -> a0.registerLocalMemory(noSize));
            expectMessage(IllegalArgumentException.class, "null", () -> a0.registerLocalMemory(new Pointer()));
            expectMessage(IllegalArgumentException.class, "null", () -> a0.registerLocalMemory((Pointer) null));
        }
    }

    /** An RDMA transport registers a JavaCPP pointer's bytes; unmapped memory is refused, not crashed on. */
    @Test(groups = "host", timeOut = 60_000)
    public void rdmaRegistersPointerAndRefusesUnmappedMemory()
    {
        try (BytePointer bytes = outsideFreedTe4jMemory(1 << 16))
        {
            final RdmaTransport rdma = e0.getOrCreateRdmaTransport("soft");
            rdma.initialize(1, 1);
            final BytePointer window = new BytePointer(bytes).position(4096);
            rdma.register(window);
            Assert.assertEquals(rdma.registeredAddress(), bytes.address() + 4096);
            Assert.assertEquals(rdma.registeredBytes(), (1 << 16) - 4096);
            expectMessage(IllegalArgumentException.class, "not mapped", () -> rdma.register(4096, 4096));
            expectMessage(IllegalArgumentException.class, "null", () -> rdma.register((Pointer) null));
            rdma.deregister(bytes.address() + 4096);
        }
    }

    /**
     * Where the JVM has the foreign memory API (22+), a MemorySegment over a host buffer reads and
     * writes in place, and every access after the buffer's close throws IllegalStateException;
     * on Java 17 to 21 asking for one says what it needs. Reflection, because these tests are
     * compiled for Java 17.
     */
    @Test(groups = "host", timeOut = 60_000)
    public void memorySegmentViewWhereTheJdkHasIt() throws Exception
    {
        final DeviceBuffer b = p0.allocateBuffer(AREA);
        if (Runtime.version().feature() < 22)
        {
            expectMessage(UnsupportedOperationException.class, "Java 22", b::asMemorySegment);
            return;
        }
        final Object segment = b.asMemorySegment();
        final Class<?> type = Class.forName("java.lang.foreign.MemorySegment");
        Assert.assertTrue(type.isInstance(segment), segment.getClass().getName());
        Assert.assertEquals(type.getMethod("byteSize").invoke(segment), AREA);
        final Class<?> ofByte = Class.forName("java.lang.foreign.ValueLayout$OfByte");
        final Object javaByte = Class.forName("java.lang.foreign.ValueLayout").getField("JAVA_BYTE").get(null);
        final java.lang.reflect.Method get = type.getMethod("get", ofByte, long.class);
        final java.lang.reflect.Method set = type.getMethod("set", ofByte, long.class, byte.class);
        b.write(100, new byte[] {42});
        Assert.assertEquals(get.invoke(segment, javaByte, 100L), (byte) 42);
        set.invoke(segment, javaByte, 200L, (byte) 7);
        Assert.assertEquals(b.read(200, 1)[0], (byte) 7);
        b.close();
        final java.lang.reflect.InvocationTargetException after = Assert.expectThrows(
            java.lang.reflect.InvocationTargetException.class, () -> get.invoke(segment, javaByte, 100L));
        Assert.assertTrue(after.getCause() instanceof IllegalStateException, String.valueOf(after.getCause()));
        Assert.expectThrows(ClosedException.class, b::asMemorySegment);
    }

    /**
     * Memory from JavaCPP's allocator that does not lie where te4j freed a buffer lately: the
     * allocator may reuse such a range, and te4j refuses to register it (it cannot tell it from
     * a stale address of the freed buffer; BATCH.md, "Local memory and its lifetime"). Earlier
     * tests of this JVM freed buffers, so an allocation landing there is kept aside while the
     * next is tried.
     */
    static BytePointer outsideFreedTe4jMemory(final long bytes)
    {
        final List<BytePointer> reused = new java.util.ArrayList<>();
        try
        {
            for (int attempt = 0; attempt < 64; attempt++)
            {
                final BytePointer p = new BytePointer(bytes);
                try
                {
                    LiveMemory.checkLocalRegistration(p.address(), bytes);
                    return p;
                }
                catch (final IllegalArgumentException e)
                {
                    reused.add(p);
                }
            }
            throw new AssertionError("64 allocations of " + bytes + " B all landed in freed te4j memory");
        }
        finally
        {
            reused.forEach(BytePointer::close);
        }
    }

    private static byte[] poison(final int n)
    {
        final byte[] p = new byte[n];
        java.util.Arrays.fill(p, Patterns.POISON);
        return p;
    }

    /** read/write with direct and heap ByteBuffers: positions advance, bytes match, bounds hold. */
    @Test(groups = "host", timeOut = 60_000)
    public void byteBufferReadWrite()
    {
        final DeviceBuffer b = p0.allocateBuffer(AREA);
        b.fill(0, AREA, Patterns.POISON);
        final byte[] data = new byte[100_000];
        new Random(7).nextBytes(data);
        final ByteBuffer direct = ByteBuffer.allocateDirect(data.length + 10);
        direct.position(10);
        direct.put(data);
        direct.position(10);
        b.write(1000, direct);
        Assert.assertEquals(direct.position(), direct.limit());
        Assert.assertEquals(b.read(1000, data.length), data);
        Assert.assertEquals(b.read(1000 + data.length, 8), poison(8));
        final ByteBuffer heap = ByteBuffer.allocate(data.length);
        b.read(1000, heap);
        Assert.assertEquals(heap.array(), data);
        final ByteBuffer directIn = ByteBuffer.allocateDirect(data.length);
        b.read(1000, directIn);
        directIn.flip();
        final byte[] got = new byte[data.length];
        directIn.get(got);
        Assert.assertEquals(got, data);
        b.write(0, ByteBuffer.wrap(data).asReadOnlyBuffer());
        Assert.assertEquals(b.read(0, data.length), data);
        Assert.expectThrows(IndexOutOfBoundsException.class, () -> b.write(AREA - 10, ByteBuffer.allocateDirect(11)));
        Assert.expectThrows(IllegalArgumentException.class, () -> b.read(0, ByteBuffer.allocate(4).asReadOnlyBuffer()));
        b.close();
        Assert.expectThrows(ClosedException.class, () -> b.read(0, ByteBuffer.allocateDirect(4)));
    }

    /** A host view reads and writes in place, and every access after the close throws. */
    @Test(groups = "host", timeOut = 60_000)
    public void hostViewChecksLivenessOnEveryAccess()
    {
        final DeviceBuffer b = p0.allocateBuffer(AREA);
        final HostMemoryView v = b.hostView(4096, 65536);
        Assert.assertEquals(v.size(), 65536);
        v.putLong(8, 0x1122334455667788L);
        v.put(100, (byte) 42);
        Assert.assertEquals(v.getLong(8), 0x1122334455667788L);
        Assert.assertEquals(b.read(4096 + 100, 1)[0], (byte) 42);
        final byte[] data = new byte[1000];
        new Random(9).nextBytes(data);
        v.put(2000, ByteBuffer.wrap(data));
        Assert.assertEquals(b.read(4096 + 2000, 1000), data);
        final ByteBuffer out = ByteBuffer.allocateDirect(1000);
        v.get(2000, out);
        out.flip();
        final byte[] got = new byte[1000];
        out.get(got);
        Assert.assertEquals(got, data);
        Assert.expectThrows(IndexOutOfBoundsException.class, () -> v.getLong(65536 - 4));
        Assert.expectThrows(IndexOutOfBoundsException.class, () -> b.hostView(AREA - 10, 11));
        b.close();
        Assert.assertFalse(v.isOpen());
        Assert.expectThrows(ClosedException.class, () -> v.get(0));
        Assert.expectThrows(ClosedException.class, () -> v.putLong(0, 1));
        Assert.expectThrows(ClosedException.class, () -> v.put(0, ByteBuffer.allocate(8)));
        Assert.expectThrows(ClosedException.class, b::hostView);
    }
}
