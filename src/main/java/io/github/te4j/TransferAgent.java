package io.github.te4j;

import io.github.te4j.exchange.Deadline;
import io.github.te4j.exchange.HandleExchange;
import io.github.te4j.exchange.SegmentDirectory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.locks.Lock;
import org.bytedeco.javacpp.Pointer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The transfer engine's host API, with Mooncake's concepts: register local memory, publish it as
 * this rank's named segment, open other ranks' segments by name, and move bytes between the two
 * in batches of READ and WRITE requests with a state per request ({@link TransferBatch}).
 *
 * <pre>{@code
 * TransferAgent agent = engine.createTransferAgent(p2p, "rank" + rank);
 * RegisteredMemory mine = agent.registerLocalMemory(p2p.allocateBuffer(1 << 30));
 * agent.publishSegment(exchange, timeout);                  // every rank: all-gather descriptors
 * SegmentHandle peer = agent.openSegment("rank1");
 * try (TransferBatch batch = agent.allocateBatch(1024)) {
 *     batch.submit(List.of(TransferRequest.write(mine, 0, peer, 4096, 16384)), timeout);
 *     List<TransferStatus> done = batch.await(timeout);
 * }
 * }</pre>
 *
 * <p>A segment is the list of te4j buffers registered here, each at the segment offset
 * {@link RegisteredMemory#segmentOffset()} (their sizes added up in registration order; an
 * unregistered buffer leaves a hole). Peers see the list as of the last publish. Memory
 * allocated elsewhere can be registered as the local side of requests only.
 *
 * <p>Platforms: the host platform (peers' segments are mapped into this process, so READ copies
 * out of the mapping). With {@link #useRdma(RdmaTransport)}, segments of other ranks are reached
 * over RDMA instead (one WRITE or READ work request per request), so their owners may be in
 * other network namespaces or on other hosts. Every argument is checked here before native code
 * runs.
 *
 * @since 0.1
 */
public final class TransferAgent extends NativeResource
{
    private static final Logger LOG = LoggerFactory.getLogger(TransferAgent.class);

    private final TransferEngine engine;
    private final P2pTransport p2p;
    private final String segmentName;
    private final List<RegisteredMemory> registered = new ArrayList<>();
    private final List<SegmentHandle> segments = new ArrayList<>();
    private final List<TransferBatch> batches = new ArrayList<>();
    private final List<TransferList> lists = new ArrayList<>();
    private final Map<String, byte[]> gathered = new HashMap<>();
    private long nextSegmentOffset;
    private int rank = -1;
    private SegmentDirectory directory;
    private RdmaTransport rdma;
    private Notifications notifications;   // created with the first descriptor or notifications() call
    private final NotificationOutbox outbox = new NotificationOutbox(this);
    private TransferEngine notificationEngine;  // CUDA: the host engine of notification areas, guarded by this

    TransferAgent(final TransferEngine engine, final P2pTransport p2p, final String segmentName)
    {
        super("TransferAgent '" + segmentName + "'");
        this.engine = engine;
        this.p2p = p2p;
        this.segmentName = segmentName;
    }

    /**
     * Routes batches over {@code rdma} (host platform, connected): this rank's descriptor from the
     * next publish on carries its rank there and each segment buffer's registered address and
     * remote key, and segments of other ranks whose descriptors carry them are opened over RDMA.
     * Every te4j buffer of the segment, and every local memory that requests to such segments use,
     * must be registered with {@code rdma} ({@link RdmaTransport#register(DeviceBuffer)}) first.
     *
     * @param rdma a connected host-platform RDMA transport
     * @throws IllegalArgumentException when {@code rdma} is null or not connected, or either side is not on
     *     the host platform
     * @throws ClosedException when this agent is closed
     * @since 0.1
     */
    public void useRdma(final RdmaTransport rdma)
    {
        Errors.checkArgument(rdma != null, "rdma is null");
        Errors.checkArgument(rdma.platform() == Platform.HOST && platform() == Platform.HOST,
            "useRdma: batches are posted from the host onto the queue pairs, which only a host-platform transport"
                + " keeps in host memory (this agent: " + platform() + ", the transport: " + rdma.platform() + ")");
        Errors.checkArgument(rdma.localRank() >= 0, "useRdma: " + rdma + " is not connected (call connect first)");
        final Lock l = enter();
        try
        {
            synchronized (this)
            {
                this.rdma = rdma;
            }
        }
        finally
        {
            l.unlock();
        }
    }

    /** The transport of {@link #useRdma(RdmaTransport)}, or null. */
    synchronized RdmaTransport rdma()
    {
        return rdma;
    }

    /**
     * This rank's segment name.
     *
     * @return the name under which this rank's segment is published
     * @since 0.1
     */
    public String segmentName()
    {
        return segmentName;
    }

    /**
     * The platform of this agent: its engine's.
     *
     * @return the platform its batches run on
     * @since 0.1
     */
    public Platform platform()
    {
        return engine.platform();
    }

    /**
     * Registers a te4j buffer of this agent's transport: the local side of requests, and part of
     * this rank's segment from the next publish on.
     *
     * @param buffer a buffer of this agent's transport, not yet registered
     * @return the registration; pass it to {@link #unregisterLocalMemory(RegisteredMemory)} to end it
     * @throws IllegalArgumentException when {@code buffer} is null, of another transport or already registered
     * @throws ClosedException when this agent or {@code buffer} is closed
     * @since 0.1
     */
    public RegisteredMemory registerLocalMemory(final DeviceBuffer buffer)
    {
        Errors.checkArgument(buffer != null, "buffer is null");
        Errors.checkArgument(buffer.owner() == p2p, buffer + " belongs to another transport than this agent's");
        final Lock l = enter();
        try
        {
            final Lock lb = buffer.enter();
            try
            {
                synchronized (this)
                {
                    for (final RegisteredMemory m : registered)
                    {
                        Errors.checkArgument(m.buffer() != buffer, buffer + " is already registered");
                    }
                    final RegisteredMemory m = LiveMemory.registerLocal(buffer, buffer.address(), buffer.size(),
                        within -> new RegisteredMemory(this, buffer, within, buffer.address(), buffer.size(),
                            nextSegmentOffset));
                    nextSegmentOffset += buffer.size();
                    registered.add(m);
                    return m;
                }
            }
            finally
            {
                lb.unlock();
            }
        }
        finally
        {
            l.unlock();
        }
    }

    /**
     * Registers memory allocated elsewhere (a direct ByteBuffer's, another library's) or a range
     * of a te4j buffer as the local side of requests; it is not part of the segment.
     *
     * <p>What te4j checks, before anything is recorded ({@link IllegalArgumentException} with the
     * reason otherwise):
     * <ul>
     *   <li>its kind ({@link MemoryKind}) suits the route: on the host platform, memory host
     *       threads can reach (not {@link MemoryKind#DEVICE}); on CUDA, memory the batch's copy
     *       kernel can reach: device memory of this agent's device, pinned host or managed memory
     *       (not {@link MemoryKind#PAGEABLE_HOST});</li>
     *   <li>host memory the CUDA driver does not know is mapped in this process over the whole
     *       range;</li>
     *   <li>a range that shares a byte with a live te4j buffer lies inside it: it is then tied to
     *       that buffer, whose close withdraws it and waits (bounded) for the batches that use
     *       it, so no batch ever copies into the freed buffer;</li>
     *   <li>it is no te4j buffer or mapping freed lately, and no te4j mapping of another
     *       process's memory. te4j cannot tell a stale address of a freed buffer from memory that
     *       another allocator later placed in the same range: such memory is refused too while
     *       te4j remembers the free (allocate another block).</li>
     * </ul>
     *
     * <p>The caller's duty, for memory te4j did not allocate: keep it allocated until it is
     * unregistered or this agent is closed, and do not free it while a batch that uses it runs.
     * te4j cannot see another library's free, and a batch that copies into memory freed that way
     * writes into whatever the allocator put there next.
     *
     * @param address the start of the memory, not 0
     * @param bytes its size, positive
     * @return the registration; pass it to {@link #unregisterLocalMemory(RegisteredMemory)} to end it
     * @throws IllegalArgumentException for a bad range, a kind the route cannot carry, unmapped
     *     memory, or memory that overlaps other registered memory or freed te4j memory
     * @throws ClosedException when this agent is closed
     * @since 0.1
     */
    public RegisteredMemory registerLocalMemory(final long address, final long bytes)
    {
        Errors.checkArgument(address != 0, "address is null");
        Errors.checkArgument(bytes > 0, "bytes=" + bytes + " must be positive");
        Errors.checkArgument(address > 0 && bytes <= Long.MAX_VALUE - address,
            "address 0x" + Long.toHexString(address) + " + " + bytes + " B wraps around");
        final Lock l = enter();
        try
        {
            checkRoute(address, bytes, "registerLocalMemory");
            synchronized (this)
            {
                for (final RegisteredMemory m : registered)
                {
                    Errors.checkArgument(m.buffer() != null || address >= m.address() + m.size()
                        || m.address() >= address + bytes, "[0x" + Long.toHexString(address) + ", +" + bytes
                        + ") overlaps " + m);
                }
                final RegisteredMemory m = LiveMemory.registerLocal(null, address, bytes,
                    within -> new RegisteredMemory(this, null, within, address, bytes, -1));
                registered.add(m);
                return m;
            }
        }
        finally
        {
            l.unlock();
        }
    }

    /**
     * {@link #registerLocalMemory(long, long)} of the memory a JavaCPP pointer designates (for
     * example from the JavaCPP Presets for CUDA's {@code cudaMalloc} or {@code cudaMallocHost},
     * or a {@code BytePointer}): from the element at its position to its limit, or to its
     * capacity when no limit is set, {@link MemoryKind#pointerAddress} and
     * {@link MemoryKind#pointerBytes}. The pointer object need not stay reachable; the memory
     * must stay allocated as {@link #registerLocalMemory(long, long)} says (a JavaCPP pointer
     * with a deallocator frees its memory when it is closed or garbage collected: keep it).
     *
     * @param pointer the pointer whose memory to register
     * @return the registration; pass it to {@link #unregisterLocalMemory(RegisteredMemory)} to end it
     * @throws IllegalArgumentException as {@link #registerLocalMemory(long, long)}, and for a
     *     null pointer or one that designates no bytes
     * @throws ClosedException when this agent is closed
     * @since 0.1
     */
    public RegisteredMemory registerLocalMemory(final Pointer pointer)
    {
        return registerLocalMemory(MemoryKind.pointerAddress(pointer), MemoryKind.pointerBytes(pointer));
    }

    /** Refuses memory of a kind this agent's batches cannot copy, with the reason and the fix. */
    private void checkRoute(final long address, final long bytes, final String what)
    {
        // te4j's own memory first: freed te4j memory is named as such, not as unmapped memory.
        LiveMemory.checkLocalRegistration(address, bytes);
        final int[] device = new int[1];
        final MemoryKind kind = MemoryKind.probe(address, bytes, device);
        final String range = what + "(0x" + Long.toHexString(address) + ", " + bytes + "): ";
        if (platform() == Platform.HOST)
        {
            Errors.checkArgument(kind.isHostAccessible(), range + kind + " memory of CUDA device " + device[0]
                + ": a host-platform batch copies with host threads, which cannot reach it (fix: use a"
                + " CUDA-platform engine, or register host memory)");
            Errors.checkArgument(rdma() == null || kind == MemoryKind.PAGEABLE_HOST || kind == MemoryKind.PINNED_HOST,
                range + kind + " memory: RDMA requests need memory that stays in host RAM (fix: register pinned or"
                    + " ordinary host memory)");
            return;
        }
        Errors.checkArgument(kind.isDeviceAccessible(), range + kind + " memory: a CUDA-platform batch copies"
            + " with a kernel, which cannot read pageable host memory (fix: allocate it with cudaMallocHost, pin it"
            + " with cudaHostRegister, or use a host-platform engine)");
        Errors.checkArgument(kind != MemoryKind.DEVICE || device[0] == engine.device(), range
            + "device memory of CUDA device " + device[0] + ", this agent copies on device " + engine.device()
            + " (fix: register it with an engine of device " + device[0] + ")");
    }

    /**
     * Unregisters memory, after the batches that use it have finished (bounded: a batch that
     * does not finish in time is cancelled first). Peers see it gone from the next publish on.
     *
     * @param memory a registration of this agent
     * @throws IllegalArgumentException when {@code memory} is null, of another agent, or not registered (any
     *     more)
     * @throws ClosedException when this agent is closed
     * @since 0.1
     */
    public void unregisterLocalMemory(final RegisteredMemory memory)
    {
        Errors.checkArgument(memory != null, "memory is null");
        Errors.checkArgument(memory.agent() == this, memory + " is registered with another agent");
        final Lock l = enter();
        try
        {
            synchronized (this)
            {
                Errors.checkArgument(registered.contains(memory), memory + " is not registered");
                registered.remove(memory);
            }
            memory.unregistered();
            LiveMemory.unregisteredLocal(memory);
            InFlightWork.drainBatchesUsing(memory);
        }
        finally
        {
            l.unlock();
        }
    }

    /**
     * This rank's segment descriptor as peers will see it (the te4j buffers registered now).
     *
     * @return the encoded descriptor: this rank's name, rank, buffers' handles, RDMA keys and notification
     *     area
     * @throws IllegalArgumentException when the RDMA transport of {@link #useRdma} is no longer connected
     * @throws ClosedException when this agent is closed
     * @since 0.1
     */
    public byte[] segmentDescriptor()
    {
        final Lock l = enter();
        try
        {
            final List<SegmentDescriptor.Part> parts = new ArrayList<>();
            final List<RegisteredMemory> now;
            final RdmaTransport r;
            synchronized (this)
            {
                now = new ArrayList<>(registered);
                r = rdma;
            }
            final List<RegisteredMemory> inSegment = new ArrayList<>();
            for (final RegisteredMemory m : now)
            {
                if (m.buffer() != null && m.isRegistered())
                {
                    parts.add(new SegmentDescriptor.Part(m.segmentOffset(), p2p.exportHandle(m.buffer())));
                    inSegment.add(m);
                }
            }
            SegmentDescriptor.Rdma route = null;
            if (r != null)
            {
                final long[] addresses = new long[inSegment.size()];
                final int[] rkeys = new int[inSegment.size()];
                for (int i = 0; i < addresses.length; i++)
                {
                    final RegisteredMemory m = inSegment.get(i);
                    addresses[i] = m.address();
                    rkeys[i] = (int) r.regionKey(m.address(), m.size(), "segment buffer " + m);
                }
                final int rdmaRank = r.localRank();
                Errors.checkArgument(rdmaRank >= 0, "segmentDescriptor: " + r + " is no longer connected");
                route = new SegmentDescriptor.Rdma(rdmaRank, addresses, rkeys);
            }
            final Notifications n = notificationsForDescriptor();
            final SegmentDescriptor.Notify notify = n == null ? null
                : new SegmentDescriptor.Notify(notificationTransport().exportHandle(n.memory()), n.rings(), n.depth(),
                    route == null ? 0 : n.memory().address(), route == null ? 0 : (int) r.registerAside(n.memory()));
            return new SegmentDescriptor(segmentName, rank, parts, route, notify).toBytes();
        }
        finally
        {
            l.unlock();
        }
    }

    /**
     * Publishes this rank's segment and learns every other rank's: an all-gather of descriptors
     * through {@code exchange}, then a barrier (nobody frees a buffer before every peer could map
     * it), both within {@code timeout} as a whole. Every rank of the exchange calls it.
     *
     * @param exchange the handle exchange of the job
     * @param timeout the bound of the whole call; positive
     * @throws IllegalArgumentException when {@code exchange} is null or {@code timeout} is null or not
     *     positive
     * @throws BadHandleException when a rank's descriptor is damaged or names another rank
     * @throws IllegalStateException when two ranks publish the same segment name
     * @throws io.github.te4j.rendezvous.RendezvousTimeoutException when the ranks do not all gather and meet
     *     at the barrier in time
     * @throws PeerLostException when a rank leaves the exchange
     * @throws ClosedException when this agent is closed
     * @since 0.1
     */
    public void publishSegment(final HandleExchange exchange, final Duration timeout)
    {
        Errors.checkArgument(exchange != null, "exchange is null");
        checkTimeout(timeout);
        final Deadline deadline = Deadline.after(timeout);
        synchronized (this)
        {
            rank = exchange.rank();
        }
        final byte[] mine = segmentDescriptor();
        final List<byte[]> all = exchange.allGather(mine, deadline.left());
        final Map<String, byte[]> byName = new HashMap<>();
        for (int r = 0; r < all.size(); r++)
        {
            final SegmentDescriptor d = SegmentDescriptor.fromBytes(all.get(r));
            if (d.rank() != r)
            {
                throw new BadHandleException("rank " + r + " published a segment descriptor that names rank " + d.rank());
            }
            if (byName.put(d.name(), all.get(r)) != null)
            {
                throw new IllegalStateException("two ranks publish segment '" + d.name() + "': names must be unique");
            }
        }
        synchronized (this)
        {
            gathered.putAll(byName);
        }
        exchange.barrier(deadline.left());
    }

    /**
     * Publishes this rank's segment in {@code directory} under its name (replacing an earlier
     * publish); {@link #openSegment(String, SegmentDirectory, Duration)} of other agents that use the same
     * directory finds it there.
     *
     * @param directory where to publish
     * @throws IllegalArgumentException when {@code directory} is null
     * @throws ClosedException when this agent is closed
     * @since 0.1
     */
    public void publishSegment(final SegmentDirectory directory)
    {
        Errors.checkArgument(directory != null, "directory is null");
        final byte[] mine = segmentDescriptor();
        synchronized (this)
        {
            this.directory = directory;
        }
        directory.publish(segmentName, mine);
    }

    /**
     * Opens a segment published through the handle exchange ({@link #publishSegment(HandleExchange, Duration)})
     * or present in the directory this agent published to: maps its buffers here.
     *
     * @param name the segment name
     * @return the opened segment: the target side of requests until it is closed
     * @throws IllegalArgumentException when no segment of that name is known
     * @throws BadHandleException when its descriptor is damaged, of another platform, or from another host
     *     without RDMA
     * @throws ClosedException when this agent is closed
     * @since 0.1
     */
    public SegmentHandle openSegment(final String name)
    {
        SegmentDirectory.checkName(name);
        final byte[] d;
        final SegmentDirectory dir;
        synchronized (this)
        {
            d = gathered.get(name);
            dir = directory;
        }
        if (d != null)
        {
            return open(d);
        }
        final Optional<byte[]> found = dir == null ? Optional.empty() : dir.lookup(name);
        if (found.isEmpty())
        {
            throw new IllegalArgumentException("unknown segment '" + name + "': no rank published it"
                + (dir == null ? " through the handle exchange" : " here or in the directory"));
        }
        return open(found.get());
    }

    /**
     * {@link #openSegment(String)} that waits up to {@code timeout} for the name to appear in {@code directory}.
     *
     * @param name the segment name
     * @param directory the directory to look in
     * @param timeout how long to wait for the name; positive
     * @return the opened segment: the target side of requests until it is closed
     * @throws IllegalArgumentException when the name is not a valid segment name, {@code directory} is null or
     *     {@code timeout} is null or not positive
     * @throws Te4jTimeoutException when no segment of that name appears in time
     * @throws BadHandleException when its descriptor is damaged, of another platform, or from another host
     *     without RDMA
     * @throws ClosedException when this agent is closed
     * @since 0.1
     */
    public SegmentHandle openSegment(final String name, final SegmentDirectory directory, final Duration timeout)
    {
        SegmentDirectory.checkName(name);
        Errors.checkArgument(directory != null, "directory is null");
        checkTimeout(timeout);
        return open(directory.await(name, timeout));
    }

    private SegmentHandle open(final byte[] bytes)
    {
        final SegmentDescriptor d = SegmentDescriptor.fromBytes(bytes);
        final RdmaTransport r = rdma();
        if (r != null && d.rdma() != null && d.rdma().rank != r.localRank())
        {
            return openOverRdma(d, r);
        }
        for (final SegmentDescriptor.Part p : d.parts())
        {
            if (p.handle.platform() != platform())
            {
                throw new BadHandleException("segment '" + d.name() + "' holds a " + p.handle.platform()
                    + " buffer, this agent is " + platform());
            }
            if (!p.handle.isFromThisHost())
            {
                throw new BadHandleException("segment '" + d.name() + "' comes from another host: opening it needs"
                    + " every rank on one host");
            }
        }
        final Lock l = enter();
        try
        {
            final long[] bases = new long[d.parts().size()];
            try
            {
                for (int i = 0; i < bases.length; i++)
                {
                    bases[i] = map(d, i);
                }
            }
            catch (final RuntimeException e)
            {
                for (final long b : bases)
                {
                    if (b != 0)
                    {
                        unmap(b);
                    }
                }
                throw e;
            }
            final SegmentHandle h = new SegmentHandle(this, d, bases);
            synchronized (this)
            {
                segments.add(h);
            }
            return h;
        }
        finally
        {
            l.unlock();
        }
    }

    private SegmentHandle openOverRdma(final SegmentDescriptor d, final RdmaTransport r)
    {
        if (d.rdma().rank >= r.numRanks())
        {
            throw new BadHandleException("segment '" + d.name() + "' is on RDMA rank " + d.rdma().rank + ", " + r
                + " has " + r.numRanks() + " ranks");
        }
        final Lock l = enter();
        try
        {
            final SegmentHandle h = new SegmentHandle(this, d, r);
            synchronized (this)
            {
                segments.add(h);
            }
            return h;
        }
        finally
        {
            l.unlock();
        }
    }

    private long map(final SegmentDescriptor d, final int part)
    {
        return mapHandle(d.parts().get(part).handle, "segment '" + d.name() + "' buffer " + part);
    }

    /** Maps the buffer of handle {@code h} here (its size checked against the handle's); unmap with {@link #unmap}. */
    long mapHandle(final IpcHandle h, final String what)
    {
        return mapHandle(p2p, h, what);
    }

    /** {@link #mapHandle(IpcHandle, String)} through {@code p2p}, this agent's transport or its notification one. */
    long mapHandle(final P2pTransport p2p, final IpcHandle h, final String what)
    {
        final byte[] handleBytes = h.toBytes();
        final long[] base = new long[1];
        final long[] bytes = new long[1];
        final Lock l = p2p.enter();
        try
        {
            Errors.check(p2p.nativePeer().mapSegmentBytes(handleBytes, handleBytes.length, base, bytes),
                "map " + what, p2p.nativePeer()::lastError);
        }
        finally
        {
            l.unlock();
        }
        if (bytes[0] != h.bufferSize())
        {
            unmap(p2p, base[0]);
            throw new BadHandleException(what + ": mapped " + bytes[0] + " B, its handle says " + h.bufferSize() + " B");
        }
        return base[0];
    }

    /** Unmaps one mapping of this agent's transport. */
    void unmap(final long base)
    {
        unmap(p2p, base);
    }

    /**
     * Unmaps a mapping {@code p2p} made. Never waits for the transport's close: that close may be
     * the caller's own (a batch it drains releases the segment's last use) or another thread's
     * that waits for the caller's batch, and a closing transport's native side unmaps everything
     * itself.
     */
    void unmap(final P2pTransport p2p, final long base)
    {
        final Lock l = p2p.tryEnter();
        if (l == null)
        {
            return;
        }
        try
        {
            p2p.nativePeer().unmapSegment(base);
        }
        finally
        {
            l.unlock();
        }
    }

    /**
     * The notifications other agents send to this one: the receiving side. Senders find this
     * agent's notification area (host memory, on every platform) in its segment descriptor, so
     * publish after the first call (every publish includes it).
     *
     * @return the receiver of this agent (made on the first call)
     * @throws ClosedException when this agent is closed
     * @throws Te4jException when the notification area cannot be allocated
     * @since 0.1
     */
    public Notifications notifications()
    {
        final Lock l = enter();
        try
        {
            return notificationsLocked();
        }
        finally
        {
            l.unlock();
        }
    }

    /**
     * The receiver whose area the descriptor announces. Off the host platform the area needs a
     * host engine beside this agent's: should that fail, the segment is still published (its
     * transfers need no area), without one, and senders are told it has none.
     */
    private Notifications notificationsForDescriptor()
    {
        if (platform() == Platform.HOST)
        {
            return notificationsLocked();
        }
        try
        {
            return notificationsLocked();
        }
        catch (final RuntimeException e)
        {
            LOG.warn("segment '{}' is published without a notification area: {}", segmentName, e.toString());
            return null;
        }
    }

    /** The receiver, its area allocated on first use; the caller entered this agent. */
    private Notifications notificationsLocked()
    {
        synchronized (this)
        {
            if (notifications != null)
            {
                return notifications;
            }
        }
        final DeviceBuffer area = notificationTransport().allocateBuffer(Notifications.areaBytes());
        final Notifications existing;
        synchronized (this)
        {
            if (notifications == null)
            {
                notifications = new Notifications(this, area);
                return notifications;
            }
            existing = notifications;
        }
        area.close();
        return existing;
    }

    /**
     * The host-platform transport of notification areas: this agent's own on the host platform;
     * elsewhere (CUDA) one of a host engine of this agent's, so that areas are host memory that
     * the receiving thread reads and senders on this host map, whatever memory the data is in.
     */
    P2pTransport notificationTransport()
    {
        if (p2p.platform() == Platform.HOST)
        {
            return p2p;
        }
        synchronized (this)
        {
            if (notificationEngine == null)
            {
                notificationEngine = TransferEngine.builder().platform(Platform.HOST).build();
            }
            return notificationEngine.getOrCreateP2pTransport(2);
        }
    }

    /**
     * Sends {@code message} on its own to the agent of segment {@code segmentName} (known here as
     * for {@link #openSegment(String)}), after this agent's earlier notifications to it. Waits up
     * to {@code timeout} for room when that agent's queue from this one is full, then throws
     * {@link Te4jTimeoutException}. The receiver delivers it only once it knows this agent's
     * segment by name: publish this agent's segment where the receiver looks.
     *
     * @param message at most {@link Notification#MAX_BYTES} bytes (copied)
     * @param segmentName the receiving agent's segment name
     * @param timeout how long to wait for room in the receiver's queue; positive
     * @throws IllegalArgumentException when an argument is null or too long, or no rank published that segment
     *     where this agent looks
     * @throws Te4jTimeoutException when the receiver's queue from this agent stays full for {@code timeout}
     * @throws Te4jException when the receiver has no notification area
     * @throws ClosedException when this agent is closed
     * @since 0.1
     */
    public void sendNotification(final String segmentName, final byte[] message, final Duration timeout)
    {
        Notification.check(message);
        Errors.checkArgument(segmentName != null, "segmentName is null");
        SegmentDirectory.checkName(segmentName);
        checkTimeout(timeout);
        final Lock l = enter();
        try
        {
            final byte[] bytes = descriptorNamed(segmentName);
            if (bytes == null)
            {
                throw new IllegalArgumentException("sendNotification: unknown segment '" + segmentName
                    + "': no rank published it where this agent looks (handle exchange or directory)");
            }
            outbox.send(SegmentDescriptor.fromBytes(bytes), message, timeout);
        }
        finally
        {
            l.unlock();
        }
    }

    /** The descriptor published under {@code name} where openSegment looks (exchange, then directory), or null. */
    byte[] descriptorNamed(final String name)
    {
        final byte[] d;
        final SegmentDirectory dir;
        synchronized (this)
        {
            d = gathered.get(name);
            dir = directory;
        }
        if (d != null)
        {
            return d;
        }
        return dir == null ? null : dir.lookup(name).orElse(null);
    }

    NotificationOutbox notificationOutbox()
    {
        return outbox;
    }

    /**
     * A batch of at most {@code capacity} requests (1 to 2^20).
     *
     * @param capacity the most requests one submit holds, in [1, 2^20]
     * @return a new batch of this agent; close it, or the agent, when done
     * @throws IllegalArgumentException when {@code capacity} is out of range
     * @throws ClosedException when this agent is closed
     * @since 0.1
     */
    public TransferBatch allocateBatch(final int capacity)
    {
        Errors.checkArgument(capacity >= 1 && capacity <= TransferBatch.MAX_CAPACITY,
            "capacity=" + capacity + " must be in [1, " + TransferBatch.MAX_CAPACITY + "]");
        final Lock l = enter();
        try
        {
            final TransferBatch b = new TransferBatch(this, engine.platform(), engine.device(), capacity);
            synchronized (this)
            {
                batches.add(b);
            }
            return b;
        }
        finally
        {
            l.unlock();
        }
    }

    /**
     * Prepares {@code requests} as a reusable {@link TransferList}: every request checked as a
     * batch submit checks it (errors name its index in the list), its addresses resolved and
     * handed to native code once (CUDA: copied to device memory). {@code requests} may be
     * cleared and reused once this returns. Segments reached over RDMA are refused.
     *
     * @param requests the requests, at least one
     * @return the prepared list; close it, or the agent, when done
     * @throws IllegalArgumentException when {@code requests} is null or empty, or a request is invalid (named
     *     by index)
     * @throws IndexOutOfBoundsException when a request's range falls outside its memory or segment
     * @throws ClosedException when this agent, or memory or a segment a request names, is closed
     * @since 0.1
     */
    public TransferList prepareList(final TransferDescriptors requests)
    {
        Errors.checkArgument(requests != null, "requests is null");
        Errors.checkArgument(requests.size() >= 1, "a list needs at least one request");
        final Lock l = enter();
        try
        {
            final TransferList list = TransferList.prepare(this, requests);
            synchronized (this)
            {
                lists.add(list);
            }
            return list;
        }
        finally
        {
            l.unlock();
        }
    }

    /**
     * {@link #prepareList(TransferDescriptors)} of a list of requests (a null one is refused by index).
     *
     * @param requests the requests, at least one and at most 2^20
     * @return the prepared list; close it, or the agent, when done
     * @throws IllegalArgumentException when {@code requests} is null, empty, too long, or holds a null or
     *     invalid request
     * @throws ClosedException when this agent is closed
     * @since 0.1
     */
    public TransferList prepareList(final List<TransferRequest> requests)
    {
        Errors.checkArgument(requests != null, "requests is null");
        Errors.checkArgument(!requests.isEmpty(), "a list needs at least one request");
        Errors.checkArgument(requests.size() <= TransferBatch.MAX_CAPACITY, "a list holds at most "
            + TransferBatch.MAX_CAPACITY + " requests, not " + requests.size());
        final TransferDescriptors d = new TransferDescriptors(requests.size());
        for (final TransferRequest r : requests)
        {
            d.add(r);
        }
        return prepareList(d);
    }

    int device()
    {
        return engine.device();
    }

    synchronized void listClosed(final TransferList l)
    {
        lists.remove(l);
    }

    P2pTransport transport()
    {
        return p2p;
    }

    /** Lock for a batch's submit: throws {@link ClosedException} when this agent is closed. */
    Lock enterForSubmit()
    {
        return enter();
    }

    /** Unregistering clears the memory's own flag, so this needs no look-up (it runs per request). */
    boolean isRegistered(final RegisteredMemory m)
    {
        return m.isRegistered();
    }

    /**
     * The te4j buffer {@code m} is or lies in is being freed (LiveMemory): it leaves this agent's
     * memory, as an unregister does; the batches that use it were drained by the free.
     */
    void withdraw(final RegisteredMemory m)
    {
        m.unregistered();
        synchronized (this)
        {
            registered.remove(m);
        }
    }

    synchronized void batchClosed(final TransferBatch b)
    {
        batches.remove(b);
    }

    synchronized void segmentClosed(final SegmentHandle s)
    {
        segments.remove(s);
    }

    private static void checkTimeout(final Duration timeout)
    {
        Errors.checkArgument(timeout != null && !timeout.isNegative(), "timeout must be non-negative: " + timeout);
    }

    @Override
    void release()
    {
        // Notifications of submits that finish in time first (they need their batches), then
        // batches and lists (they use the segments' mappings and the local memory), then segments.
        outbox.close(TransferBatch.GRACE_NANOS);
        final List<TransferBatch> bs;
        final List<TransferList> ls;
        final List<SegmentHandle> ss;
        synchronized (this)
        {
            bs = new ArrayList<>(batches);
            ls = new ArrayList<>(lists);
            ss = new ArrayList<>(segments);
        }
        bs.forEach(TransferBatch::close);
        ls.forEach(TransferList::close);
        ss.forEach(SegmentHandle::close);
        synchronized (this)
        {
            registered.forEach(RegisteredMemory::unregistered);
            registered.forEach(LiveMemory::unregisteredLocal);
            registered.clear();
        }
        final Notifications n;
        synchronized (this)
        {
            n = notifications;
        }
        if (n != null)
        {
            n.close();
            n.memory().close();
        }
        final TransferEngine hostEngine;
        synchronized (this)
        {
            hostEngine = notificationEngine;
            notificationEngine = null;
        }
        if (hostEngine != null)
        {
            hostEngine.close();
        }
        engine.agentClosed(this);
    }
}
