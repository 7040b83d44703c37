package io.github.te4j;

import io.github.te4j.exchange.Deadline;
import io.github.te4j.internal.NativeApi;
import io.github.te4j.internal.NativeRdmaTransport;
import io.github.te4j.internal.NativeTransferBatch;
import io.github.te4j.exchange.HandleExchange;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.Lock;
import org.bytedeco.javacpp.Pointer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The device API's RdmaTransport: a registered buffer, RC queue pairs whose send rings device code
 * writes (GPU-initiated RDMA, IBGDA) and their connections to every rank. One per
 * {@link TransferEngine} ({@link TransferEngine#getOrCreateRdmaTransport(String)}).
 *
 * <p>Backends, chosen by the device filter: {@code "soft"}, {@code "soft@<IPv4>"} or
 * {@code "soft@<IPv4>:<port>"} — the software mlx5 NIC (the same work requests, executed by a
 * progress thread and carried over TCP from the given address; default 127.0.0.1);
 * {@code ""} or {@code "auto"} — an mlx5 device when one exists, else the software NIC; any
 * other text — the mlx5 device whose name starts with it.
 *
 * <p>The usual sequence on every rank:
 * <pre>{@code
 * RdmaTransport rdma = engine.getOrCreateRdmaTransport("soft@10.0.0.1");
 * rdma.initialize(worldSize, 1);
 * rdma.register(window);                 // the CommContext's buffer
 * rdma.connect(exchange, timeout);       // QPs, all-gather metadata, connect, barrier
 * ctx.withRdma(rdma);                    // ranks without P2P now go over RDMA
 * }</pre>
 * Software NIC connections are authenticated: each NIC makes a random key at
 * {@link #initialize}, carried in its {@link RdmaMetadata}, and serves only connections that
 * prove it (HMAC-SHA256 challenge/response), so reaching its port and knowing the other fields
 * of the metadata (address, key, QP numbers) is not enough to write into a window. Pending
 * handshakes are bounded (64, 16 per source address, 5 s each, the oldest dropped first).
 *
 * <p>After an error CQE the queue pairs are in the error state: every rank calls
 * {@link #reconnect(HandleExchange, Duration)}. Close the streams that used this transport
 * before closing it (the engine does so when it closes).
 *
 * @since 0.1
 */
public final class RdmaTransport extends NativeResource
{
    private static final Logger LOG = LoggerFactory.getLogger(RdmaTransport.class);
    /** Native backend ids (te4j/rdma_api.h). */
    static final int BACKEND_AUTO = 0;
    static final int BACKEND_SOFT = 1;
    static final int BACKEND_MLX5 = 2;
    /**
     * Ring sizes the native side accepts.
     *
     * @since 0.1
     */
    public static final int MIN_RING = 2;
    /**
     * The largest send ring in 64-byte slots (WQEBBs) that {@link #initialize(int, int, int)} accepts.
     * @since 0.1
     */
    public static final int MAX_RING = 32768;
    /**
     * te4j's send ring when {@link #initialize(int, int, int)} is given 0.
     *
     * @since 0.1
     */
    public static final int DEFAULT_RING = 256;
    /**
     * Most send-ring slots (64-byte WQEBBs) of all queue pairs together, numRanks x qpsPerRank x
     * ring: each slot costs about 128 bytes of NIC control memory (the slot and its CQE), so the
     * default of 2^22 slots bounds it near 512 MiB per transport. {@code -Dte4j.rdma.maxRingSlots}.
     *
     * @since 0.1
     */
    public static final long MAX_RING_SLOTS = Math.max(1024, Long.getLong("te4j.rdma.maxRingSlots", 1L << 22));
    /**
     * How long a connected peer's host may stay silent before it counts as lost
     * ({@link #peerTimeout(Duration)}); {@code -Dte4j.peerTimeoutMillis}, default 10 s.
     *
     * @since 0.1
     */
    public static final long DEFAULT_PEER_TIMEOUT_MILLIS = Math.max(1000, Long.getLong("te4j.peerTimeoutMillis",
        10_000));
    /**
     * Bound of the whole of {@link #connectPeers(int, List, long)} without a timeout: every
     * peer's TCP connect, handshake and every read of it together.
     *
     * @since 0.1
     */
    public static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofSeconds(30);

    private final TransferEngine engine;
    private final NativeRdmaTransport peer;
    private final String deviceFilter;
    // Lock order: this object's monitor (mutators), then enter()'s read lock, then the contexts' lock.
    private final AttachedContexts contexts = new AttachedContexts();
    private volatile int numRanks;
    private volatile int qpsPerRank;
    private volatile long registeredAddress;
    private volatile long registeredBytes;
    private volatile boolean queuePairs;
    private volatile int localRank = -1;
    /** Where each connected rank's NIC is (for messages), from the metadata of the last connect. */
    private volatile String[] endpoints = new String[0];
    private volatile long peerTimeoutMillis = DEFAULT_PEER_TIMEOUT_MILLIS;

    RdmaTransport(final TransferEngine engine, final String deviceFilter)
    {
        super("RdmaTransport(" + deviceFilter + ")");
        this.engine = engine;
        this.deviceFilter = deviceFilter;
        final NativeRdmaTransport p = NativeRdmaTransport.create(engine.platform().nativeId(), engine.device(),
            backendOf(deviceFilter));
        if (p == null || p.isNull())
        {
            throw new Te4jException(Te4jException.Code.OUT_OF_MEMORY, "RdmaTransport.create returned null");
        }
        if (p.status() != 0)
        {
            final Te4jException e = Errors.toException(p.status(), "RdmaTransport.create(" + engine.platform()
                + ", device " + engine.device() + ", '" + deviceFilter + "')", p.lastError());
            NativeApi.destroyObject(p);
            throw e;
        }
        this.peer = p;
        LiveMemory.transportOpened(this);
    }

    static int backendOf(final String filter)
    {
        if (filter.isEmpty() || filter.equals("auto"))
        {
            return BACKEND_AUTO;
        }
        return filter.equals("soft") || filter.startsWith("soft@") ? BACKEND_SOFT : BACKEND_MLX5;
    }

    /**
     * The filter this transport was made with.
     *
     * @return the device filter given to {@link TransferEngine#getOrCreateRdmaTransport(String)}
     * @since 0.1
     */
    public String deviceFilter()
    {
        return deviceFilter;
    }

    /**
     * "soft" or "mlx5": the backend in use (the requested one before {@link #initialize}).
     *
     * @return {@code "soft"} or {@code "mlx5"}
     * @throws ClosedException when this transport is closed
     * @since 0.1
     */
    public String backend()
    {
        final Lock l = enter();
        try
        {
            return peer.backend() == BACKEND_MLX5 ? "mlx5" : "soft";
        }
        finally
        {
            l.unlock();
        }
    }

    /**
     * Same as {@link #initialize(int, int, int)} with te4j's default ring (256 WQEBBs).
     *
     * @param numRanks ranks of the job, in [1, 64]
     * @param qpsPerRank queue pairs to each rank, in [1, 1024]
     * @throws IllegalArgumentException when an argument is out of range
     * @throws IllegalStateException when this transport is already initialized
     * @throws ClosedException when this transport is closed
     * @throws UnavailableException when no matching RDMA device is present
     * @throws Te4jException when the native call fails (its {@link Te4jException#code()} says why)
     * @since 0.1
     */
    public void initialize(final int numRanks, final int qpsPerRank)
    {
        initialize(numRanks, qpsPerRank, 0);
    }

    /**
     * Opens the device (software NIC: starts its listener) for {@code numRanks} ranks with
     * {@code qpsPerRank} queue pairs to each rank (channels), each with a send ring of
     * {@code ringWqebbs} 64-byte slots (a power of two in [2, 32768]; 0 = te4j's default).
     *
     * @param numRanks ranks of the job, in [1, 64]
     * @param qpsPerRank queue pairs to each rank, in [1, 1024]
     * @param ringWqebbs send ring slots per queue pair: 0, or a power of two in [{@link #MIN_RING}, {@link
     *     #MAX_RING}]
     * @throws IllegalArgumentException when an argument is out of range, or all the rings together exceed
     *     {@link #MAX_RING_SLOTS}
     * @throws IllegalStateException when this transport is already initialized
     * @throws ClosedException when this transport is closed
     * @throws UnavailableException when no matching RDMA device is present
     * @throws Te4jException when the native call fails (its {@link Te4jException#code()} says why)
     * @since 0.1
     */
    public synchronized void initialize(final int numRanks, final int qpsPerRank, final int ringWqebbs)
    {
        RdmaArguments.checkInitialize(numRanks, qpsPerRank, ringWqebbs);
        final Lock l = enter();
        try
        {
            if (this.numRanks != 0)
            {
                throw new IllegalStateException(this + " is already initialized for " + this.numRanks + " ranks");
            }
            final String name = backendOf(deviceFilter) == BACKEND_AUTO ? "" : deviceFilter;
            Errors.check(peer.initialize(name, numRanks, numRanks * qpsPerRank),
                "RdmaTransport.initialize('" + deviceFilter + "', " + numRanks + " ranks)", peer::lastError);
            if (ringWqebbs != 0)
            {
                Errors.check(peer.setRingSize(ringWqebbs), "RdmaTransport.setRingSize", peer::lastError);
            }
            Errors.check(peer.setPeerTimeoutMs((int)peerTimeoutMillis), "RdmaTransport.setPeerTimeoutMs",
                peer::lastError);
            this.numRanks = numRanks;
            this.qpsPerRank = qpsPerRank;
        }
        finally
        {
            l.unlock();
        }
    }

    /**
     * Ranks, after {@link #initialize}; 0 before.
     *
     * @return the number of ranks, or 0 before {@link #initialize}
     * @since 0.1
     */
    public int numRanks()
    {
        return numRanks;
    }

    /**
     * Queue pairs (channels) to each rank, after {@link #initialize}.
     *
     * @return queue pairs per rank, or 0 before {@link #initialize}
     * @since 0.1
     */
    public int qpsPerRank()
    {
        return qpsPerRank;
    }

    /**
     * The rank this transport connected as, or -1 before {@link #connectPeers}.
     *
     * @return this rank, or -1 while not connected
     * @since 0.1
     */
    public int localRank()
    {
        return localRank;
    }

    /**
     * Registers {@code buffer} (whole) for remote writes and atomics: the symmetric buffer
     * offsets refer to. It may belong to any engine of this process on the same platform and
     * device: its free, whichever engine frees it, deregisters it first.
     *
     * @param buffer the buffer to register, on this transport's platform and device
     * @throws IllegalArgumentException when {@code buffer} is null or on another platform or device, or as
     *     {@link #register(long, long)} says
     * @throws ClosedException when this transport or {@code buffer} is closed
     * @throws Te4jException when the native call fails (its {@link Te4jException#code()} says why)
     * @since 0.1
     */
    public void register(final DeviceBuffer buffer)
    {
        Errors.checkArgument(buffer != null, "buffer is null");
        Errors.checkArgument(buffer.platform() == engine.platform() && buffer.device() == engine.device(),
            buffer + " is not on this transport's " + engine.platform() + " device " + engine.device());
        final Lock lb = buffer.enter();
        try
        {
            register(buffer.address(), buffer.size());
        }
        finally
        {
            lb.unlock();
        }
    }

    /**
     * Registers memory allocated elsewhere (CUDA: e.g. {@code cudaMalloc} through the JavaCPP
     * Presets; host platform: memory of this process): [address, address + bytes). It must stay
     * allocated until it is deregistered or this transport is closed. Replaces the previous
     * registration as the symmetric buffer; peers learn it at the next connect.
     *
     * <p>A range that shares a byte with a te4j buffer of any engine of this process must lie
     * inside that buffer, and is withdrawn from this NIC when the buffer is freed (remote
     * accesses then fail as error CQEs at the writer); the memory of a te4j buffer already freed
     * and te4j's mapping of an opened segment are refused ({@link IllegalArgumentException}).
     * On the host platform the memory must be host memory ({@link MemoryKind}), mapped in this
     * process over the whole range. Memory te4j did not allocate stays the caller's to keep
     * allocated: te4j cannot see another library's free.
     *
     * @param address the start of the memory, not 0
     * @param bytes its size, positive
     * @throws IllegalArgumentException when the range is empty or null, overlaps a te4j buffer without lying
     *     inside it, is a freed te4j buffer or an opened segment's mapping, or (host platform) is not host
     *     memory
     * @throws ClosedException when this transport is closed
     * @throws Te4jException when the native call fails (its {@link Te4jException#code()} says why)
     * @since 0.1
     */
    public synchronized void register(final long address, final long bytes)
    {
        RdmaArguments.checkMemoryRange(address, bytes);
        // Past the end of a te4j buffer (of any engine) the peers would write into whatever lies
        // behind it; a te4j buffer already freed is no memory at all. A range inside a live te4j
        // buffer is withdrawn from this NIC when that buffer is freed (LiveMemory.bufferFreeing).
        LiveMemory.checkRegistration(address, bytes);
        if (engine.platform() == Platform.HOST)
        {
            // The host platform's NIC (the software NIC's progress thread, or an mlx5 device
            // through host page tables) reaches host memory only; unmapped memory would crash it.
            final MemoryKind kind = MemoryKind.of(address, bytes);
            Errors.checkArgument(kind.isHostAccessible(), "RdmaTransport.register(0x" + Long.toHexString(address)
                + ", " + bytes + "): " + kind + " memory, which a host-platform transport cannot register (fix: use"
                + " a CUDA-platform engine's transport)");
        }
        final Lock l = enter();
        try
        {
            Errors.check(peer.registerMemory(address, bytes), "RdmaTransport.registerMemory", peer::lastError);
            registeredAddress = address;
            registeredBytes = bytes;
        }
        finally
        {
            l.unlock();
        }
    }

    /**
     * {@link #register(long, long)} of the memory a JavaCPP pointer designates (for example from
     * the JavaCPP Presets for CUDA's {@code cudaMalloc}): {@link MemoryKind#pointerAddress} for
     * {@link MemoryKind#pointerBytes} bytes. The memory must stay allocated as
     * {@link #register(long, long)} says.
     *
     * @param pointer the pointer whose memory to register
     * @throws IllegalArgumentException as {@link #register(long, long)}, and for a null pointer or
     *     one that designates no bytes
     * @since 0.1
     */
    public void register(final Pointer pointer)
    {
        register(MemoryKind.pointerAddress(pointer), MemoryKind.pointerBytes(pointer));
    }

    /**
     * Deregisters the buffer starting at {@code address}; remote accesses to it then fail with an error CQE.
     *
     * @param address the start address given to {@link #register(long, long)}
     * @throws IllegalArgumentException when {@code address} is 0
     * @throws ClosedException when this transport is closed
     * @throws Te4jException when nothing is registered at {@code address}
     * @since 0.1
     */
    public synchronized void deregister(final long address)
    {
        Errors.checkArgument(address != 0, "address is null");
        final Lock l = enter();
        try
        {
            Errors.check(peer.deregisterMemory(address), "RdmaTransport.deregisterMemory", peer::lastError);
            if (address == registeredAddress)
            {
                registeredAddress = 0;
                registeredBytes = 0;
            }
        }
        finally
        {
            l.unlock();
        }
    }

    /**
     * Called before [address, address + bytes) is freed: every registration reaching into it is
     * dropped (a buffer may have been registered more than once, or from inside), and remote
     * writes into it that already passed their key check finish first.
     */
    synchronized void forget(final long address, final long bytes)
    {
        final Lock l = enterForDrain();
        if (l == null)
        {
            return;  // closed: the NIC is stopped and accesses nothing
        }
        try
        {
            peer.deregisterRange(address, bytes);
            if (Long.compareUnsigned(registeredAddress - address, bytes) < 0)
            {
                registeredAddress = 0;
                registeredBytes = 0;
            }
        }
        finally
        {
            l.unlock();
        }
    }

    /**
     * Deregisters {@code buffer}.
     *
     * @param buffer a buffer registered with {@link #register(DeviceBuffer)}
     * @throws IllegalArgumentException when {@code buffer} is null
     * @throws ClosedException when this transport is closed
     * @throws Te4jException when {@code buffer} is not registered
     * @since 0.1
     */
    public void deregister(final DeviceBuffer buffer)
    {
        Errors.checkArgument(buffer != null, "buffer is null");
        deregister(buffer.address());
    }

    /**
     * Start address of the current symmetric registration (0: none).
     *
     * @return the address, or 0 when nothing is registered
     * @since 0.1
     */
    public long registeredAddress()
    {
        return registeredAddress;
    }

    /**
     * Size of the current symmetric registration (0: none).
     *
     * @return the size in bytes, or 0 when nothing is registered
     * @since 0.1
     */
    public long registeredBytes()
    {
        return registeredBytes;
    }

    /**
     * Allocates the rings and creates the queue pairs (new QP numbers); called again, it
     * recreates them ({@link #recreateQueuePairs}).
     *
     * @since 0.1
     */
    public synchronized void createQueuePairs()
    {
        checkInitialized("createQueuePairs");
        if (queuePairs)
        {
            InFlightWork.drainBatchesUsing(this);
            drainAttached("recreating the queue pairs anyway");
        }
        final Lock l = enter();
        try
        {
            // Creating over live QPs would free them under the NIC's connections: recreate instead.
            Errors.check(queuePairs ? peer.recreateQueuePairs(0) : peer.createQueuePairs(0),
                "RdmaTransport.createQueuePairs", peer::lastError);
            queuePairs = true;
            localRank = -1;
        }
        finally
        {
            l.unlock();
        }
    }

    /**
     * Destroys and re-creates every queue pair (after an error CQE), once the operations queued
     * on the contexts using this transport are done (bounded). The new QP numbers must be
     * exchanged and {@link #connectPeers} called again at every rank: see
     * {@link #reconnect(HandleExchange, Duration)}.
     *
     * @since 0.1
     */
    public synchronized void recreateQueuePairs()
    {
        checkInitialized("recreateQueuePairs");
        Errors.checkArgument(queuePairs, "recreateQueuePairs: createQueuePairs was never called");
        // Transfer batches post on these rings from their own threads: they finish (or are cancelled) first.
        InFlightWork.drainBatchesUsing(this);
        drainAttached("recreating the queue pairs anyway");
        final Lock l = enter();
        try
        {
            Errors.check(peer.recreateQueuePairs(0), "RdmaTransport.recreateQueuePairs", peer::lastError);
            localRank = -1;
        }
        finally
        {
            l.unlock();
        }
    }

    /**
     * This rank's metadata (after {@link #createQueuePairs} and {@link #register}).
     *
     * @return this rank's metadata, to hand to the other ranks' {@link #connectPeers}
     * @throws IllegalStateException when {@link #initialize} or {@link #createQueuePairs} was not called, or
     *     no memory is registered
     * @throws ClosedException when this transport is closed
     * @since 0.1
     */
    public synchronized RdmaMetadata localMetadata()
    {
        checkInitialized("localMetadata");
        if (!queuePairs)
        {
            throw new IllegalStateException("localMetadata: call createQueuePairs first");
        }
        if (registeredBytes == 0)
        {
            throw new IllegalStateException("localMetadata: register a buffer first");
        }
        return currentMetadata();
    }

    /**
     * Connects this rank's queue pairs to every rank in {@code activeRanksMask} (own rank
     * included) from their metadata bytes ({@code all.get(r)}: rank r's
     * {@link RdmaMetadata#toBytes()}, as {@link #connect} all-gathers them; inactive entries may be
     * null). The native library decodes and checks every active entry: a damaged, foreign or
     * disagreeing one is a {@link BadHandleException} naming the rank and the field.
     * Registrations are meant to be symmetric (same size everywhere); a write or atomic outside a
     * peer's registration is refused by that peer's NIC and surfaces as an error CQE
     * ({@link Te4jException.Code#REMOTE_ERROR}), never as an access outside it. Bounded by
     * {@link #DEFAULT_CONNECT_TIMEOUT} as a whole.
     *
     * @param localRank this rank, in [0, numRanks)
     * @param all every rank's {@link RdmaMetadata#toBytes()}, indexed by rank; inactive entries may be null
     * @param activeRanksMask bit r set when rank r takes part; includes this rank
     * @throws IllegalArgumentException when {@code localRank} is out of range, {@code all} does not hold one
     *     entry per rank, the mask leaves out this rank, or this rank's own entry is null
     * @throws IllegalStateException when {@link #initialize} or {@link #createQueuePairs} was not called
     * @throws BadHandleException when an active rank's entry is null, damaged, foreign or disagrees with this
     *     rank
     * @throws Te4jTimeoutException when the peers are not all connected by the deadline
     * @throws ClosedException when this transport is closed
     * @throws Te4jException when the native call fails (its {@link Te4jException#code()} says why)
     * @since 0.1
     */
    public void connectPeers(final int localRank, final List<byte[]> all, final long activeRanksMask)
    {
        connectPeers(localRank, all, activeRanksMask, DEFAULT_CONNECT_TIMEOUT);
    }

    /**
     * {@link #connectPeers(int, List, long)} that returns, connected or with an exception, by
     * {@code timeout}: one deadline for every peer's TCP connect, handshake and every read of
     * them, so a peer (or a stranger at its address) answering one byte at a time cannot stretch
     * it. Every software NIC connection proves the listening NIC's key from its metadata.
     *
     * @param localRank this rank, in [0, numRanks)
     * @param all every rank's {@link RdmaMetadata#toBytes()}, indexed by rank; inactive entries may be null
     * @param activeRanksMask bit r set when rank r takes part; includes this rank
     * @param timeout the bound of the whole call; positive
     * @throws IllegalArgumentException when {@code localRank} is out of range, {@code all} does not hold one
     *     entry per rank, the mask leaves out this rank, or this rank's own entry is null
     * @throws IllegalStateException when {@link #initialize} or {@link #createQueuePairs} was not called
     * @throws BadHandleException when an active rank's entry is null, damaged, foreign or disagrees with this
     *     rank
     * @throws Te4jTimeoutException when the peers are not all connected by the deadline
     * @throws ClosedException when this transport is closed
     * @throws Te4jException when the native call fails (its {@link Te4jException#code()} says why)
     * @since 0.1
     */
    public synchronized void connectPeers(final int localRank, final List<byte[]> all, final long activeRanksMask,
        final Duration timeout)
    {
        RdmaArguments.checkTimeout(timeout);
        checkInitialized("connectPeers");
        RdmaArguments.checkPeerList(localRank, all, activeRanksMask, numRanks);
        if (!queuePairs)
        {
            throw new IllegalStateException("connectPeers: call createQueuePairs first");
        }
        Errors.checkArgument(all.get(localRank) != null, "own metadata (rank " + localRank + ") is null");
        final int n = numRanks;
        final int[] lengths = new int[n];
        long total = 0;
        for (int r = 0; r < n; r++)
        {
            final byte[] b = (activeRanksMask & (1L << r)) == 0 ? null : all.get(r);
            if ((activeRanksMask & (1L << r)) != 0 && b == null)
            {
                throw new BadHandleException("RDMA metadata of active rank " + r + " is null");
            }
            lengths[r] = b == null ? 0 : b.length;
            total += lengths[r];
        }
        Errors.checkArgument(total <= Integer.MAX_VALUE - 8, "metadata entries of " + total + " bytes in all");
        final byte[] flat = new byte[(int)total];
        final String[] where = new String[n];
        int at = 0;
        for (int r = 0; r < n; r++)
        {
            if (lengths[r] != 0)
            {
                System.arraycopy(all.get(r), 0, flat, at, lengths[r]);
                at += lengths[r];
            }
        }
        final int timeoutMs = (int)Math.max(1, Math.min(Integer.MAX_VALUE,
            Deadline.toMillis(timeout)));
        final Lock l = enter();
        try
        {
            Errors.check(peer.setConnectTimeoutMs(timeoutMs), "RdmaTransport.setConnectTimeoutMs", peer::lastError);
            Errors.check(peer.connectMetadata(localRank, flat, lengths, n, activeRanksMask),
                "RdmaTransport.connectPeers(rank " + localRank + ")", peer::lastError);
            for (int r = 0; r < n; r++)
            {
                // Accepted by the native decoder just now: the views only name the endpoints for messages.
                where[r] = lengths[r] == 0 ? null : RdmaMetadata.fromBytes(all.get(r)).endpoint();
            }
            this.endpoints = where;
            this.localRank = localRank;
            // The device tables keep their addresses across reconnects; filling again keeps the
            // rank, raddr and rkey of the contexts current all the same.
            contexts.refill(peer);
        }
        finally
        {
            l.unlock();
        }
    }

    /** This rank's metadata as the NIC has it now (queue pairs and a registration exist). */
    private RdmaMetadata currentMetadata()
    {
        final Lock l = enter();
        try
        {
            final int length = Errors.check(peer.encodedMetadataLength(), "RdmaTransport.localMetadata",
                peer::lastError);
            final byte[] b = new byte[length];
            final int got = Errors.check(peer.encodedMetadata(b, b.length), "RdmaTransport.localMetadata",
                peer::lastError);
            return RdmaMetadata.fromBytes(Arrays.copyOf(b, got));
        }
        finally
        {
            l.unlock();
        }
    }

    /**
     * How long the host of a connected peer may stay silent (data not acknowledged, keepalive
     * probes not answered) before the peer counts as lost: a bound on how late a peer whose host
     * vanished without closing its connections is noticed. For connections made afterwards; at
     * least 1 s; default {@link #DEFAULT_PEER_TIMEOUT_MILLIS}. A peer whose process exits or is
     * killed closes its connections and is noticed at once.
     *
     * @param timeout the peer timeout, in [1 s, 1 day]
     * @throws IllegalArgumentException when {@code timeout} is null or outside [1 s, 1 day]
     * @throws ClosedException when this transport is closed
     * @since 0.1
     */
    public synchronized void peerTimeout(final Duration timeout)
    {
        RdmaArguments.checkPeerTimeout(timeout);
        final Lock l = enter();
        try
        {
            if (numRanks != 0)
            {
                Errors.check(peer.setPeerTimeoutMs((int)Deadline.toMillis(timeout)), "RdmaTransport.setPeerTimeoutMs",
                    peer::lastError);
            }
            peerTimeoutMillis = Deadline.toMillis(timeout);
        }
        finally
        {
            l.unlock();
        }
    }

    /**
     * The peer timeout in use ({@link #peerTimeout(Duration)}).
     *
     * @return the peer timeout
     * @since 0.1
     */
    public Duration peerTimeout()
    {
        return Duration.ofMillis(peerTimeoutMillis);
    }

    /**
     * Ranks (bit r) whose connection from this rank broke since the last connect: the peer's
     * process exited or was killed, or its host stopped answering within the peer timeout.
     * Waits on contexts that reach such a rank over RDMA fail with {@link PeerLostException}.
     *
     * @return the mask of lost ranks (bit r: rank r); 0 when none, or when this transport is closed
     * @since 0.1
     */
    public long lostPeers()
    {
        return RdmaPeerLoss.mask(lostCauses(enter()));
    }

    /**
     * Throws {@link PeerLostException} naming the first rank that {@code ctx} reaches over this
     * transport and whose connection broke. Never blocks behind a close, never throws otherwise.
     */
    void checkPeers(final CommContext ctx, final String waitingFor)
    {
        final int[] causes = lostCauses(enterForDrain());
        final String[] where = endpoints;
        for (int r = 0; r < causes.length; r++)
        {
            if (causes[r] != 0 && ctx.routesOverRdma(r))
            {
                throw RdmaPeerLoss.lost(r, causes[r], where, waitingFor, peerTimeoutMillis);
            }
        }
    }

    /** Causes per rank (te4j/rdma_api.h lostPeers), taken under {@code lock} (null: closed, none). */
    private int[] lostCauses(final Lock lock)
    {
        if (lock == null)
        {
            return new int[0];
        }
        try
        {
            final int n = numRanks;
            final int[] causes = new int[n];
            if (n == 0 || peer.lostPeers(causes, n) < 0)
            {
                return new int[0];
            }
            return causes;
        }
        finally
        {
            lock.unlock();
        }
    }

    /**
     * The whole handshake: creates the queue pairs if needed, all-gathers metadata through
     * {@code exchange}, connects to every rank, and waits at a barrier so that nobody posts
     * before every peer is connected. Every rank calls it. {@code timeout} bounds the whole call
     * (gather, connect and barrier share one deadline).
     *
     * @param exchange the handle exchange of the job: its world size is {@link #numRanks()}
     * @param timeout the bound of the whole call; positive
     * @throws IllegalArgumentException when {@code exchange} is null or of another world size, or {@code
     *     timeout} is null or not positive
     * @throws IllegalStateException when {@link #initialize} was not called
     * @throws BadHandleException when a peer's metadata is damaged, foreign or disagrees with this rank's
     * @throws Te4jTimeoutException when the ranks do not all gather, connect and meet at the barrier in time
     * @throws PeerLostException when a rank leaves the exchange
     * @throws ClosedException when this transport is closed
     * @throws Te4jException when the native call fails (its {@link Te4jException#code()} says why)
     * @since 0.1
     */
    public void connect(final HandleExchange exchange, final Duration timeout)
    {
        Errors.checkArgument(exchange != null, "exchange is null");
        RdmaArguments.checkTimeout(timeout);
        checkInitialized("connect");
        Errors.checkArgument(exchange.worldSize() == numRanks(),
            "exchange has " + exchange.worldSize() + " ranks, this transport " + numRanks());
        synchronized (this)
        {
            if (!queuePairs)
            {
                createQueuePairs();
            }
        }
        final ConnectDeadline deadline = ConnectDeadline.after(timeout);
        final List<byte[]> gathered = exchange.allGather(localMetadata().toBytes(), deadline.left("allGather"));
        final int n = numRanks();
        connectPeers(exchange.rank(), gathered, n == 64 ? -1L : (1L << n) - 1, deadline.left("connectPeers"));
        exchange.barrier(deadline.left("the barrier"));
    }

    /**
     * Recovery after an error CQE, at every rank: waits for every rank (so nobody still posts
     * on the old queue pairs), recreates the queue pairs and connects them again. Contexts
     * made with {@link CommContext#withRdma(RdmaTransport)} keep working.
     *
     * @param exchange the handle exchange of the job: its world size is {@link #numRanks()}
     * @param timeout the bound of the whole call; positive
     * @throws IllegalArgumentException when {@code exchange} is null or of another world size, or {@code
     *     timeout} is null or not positive
     * @throws IllegalStateException when {@link #initialize} was not called
     * @throws BadHandleException when a peer's metadata is damaged, foreign or disagrees with this rank's
     * @throws Te4jTimeoutException when the ranks do not all gather, connect and meet at the barrier in time
     * @throws PeerLostException when a rank leaves the exchange
     * @throws ClosedException when this transport is closed
     * @throws Te4jException when the native call fails (its {@link Te4jException#code()} says why)
     * @since 0.1
     */
    public void reconnect(final HandleExchange exchange, final Duration timeout)
    {
        Errors.checkArgument(exchange != null, "exchange is null");
        RdmaArguments.checkTimeout(timeout);
        // One deadline for the barrier, the recreation and the connect.
        final ConnectDeadline deadline = ConnectDeadline.after(timeout);
        exchange.barrier(timeout);
        recreateQueuePairs();
        connect(exchange, deadline.left("connect"));
    }

    /**
     * Bound of every device-side wait (QP lock, ring slot, quiet); default 10 s.
     *
     * @param timeout the bound; positive
     * @throws IllegalArgumentException when {@code timeout} is null or not positive
     * @throws ClosedException when this transport is closed
     * @throws Te4jException when the native call fails (its {@link Te4jException#code()} says why)
     * @since 0.1
     */
    public void deviceTimeout(final Duration timeout)
    {
        RdmaArguments.checkTimeout(timeout);
        final Lock l = enter();
        try
        {
            Errors.check(peer.setDeviceTimeoutNs(Deadline.toNanos(timeout)), "RdmaTransport.setDeviceTimeoutNs",
                peer::lastError);
        }
        finally
        {
            l.unlock();
        }
    }

    /**
     * Error state of queue pair {@code qpIndex} = dstRank * qpsPerRank + channel.
     *
     * @param qpIndex the queue pair, in [0, numRanks x qpsPerRank)
     * @return the queue pair's error state as the NIC reports it
     * @throws IllegalArgumentException when {@code qpIndex} is out of range
     * @throws ClosedException when this transport is closed
     * @throws Te4jException when the native call fails (its {@link Te4jException#code()} says why)
     * @since 0.1
     */
    public RdmaQpState qpState(final int qpIndex)
    {
        final int total = numRanks() * qpsPerRank();
        RdmaArguments.checkQpIndex(qpIndex, total);
        final Lock l = enter();
        try
        {
            final long[] v = new long[8];
            Errors.check(peer.queryQpError(qpIndex, v, v.length), "RdmaTransport.queryQpError", peer::lastError);
            return new RdmaQpState(v[0], (int)v[1], (int)v[2], (int)v[3], v[4], v[5], v[6], v[7]);
        }
        finally
        {
            l.unlock();
        }
    }

    /**
     * The NIC's counters by name (software NIC: doorbells, wqes, remote_errors, bytes_written, ...).
     *
     * @return the counters in the NIC's order, by name
     * @throws IllegalStateException when {@link #initialize} was not called
     * @throws ClosedException when this transport is closed
     * @throws Te4jException when the native call fails (its {@link Te4jException#code()} says why)
     * @since 0.1
     */
    public Map<String, Long> statistics()
    {
        checkInitialized("statistics");
        final Lock l = enter();
        try
        {
            final String[] names = peer.statisticsNames().split(",");
            final long[] v = new long[names.length];
            final int n = Errors.check(peer.statistics(v, v.length), "RdmaTransport.statistics", peer::lastError);
            final Map<String, Long> m = new LinkedHashMap<>();
            for (int i = 0; i < Math.min(n, names.length); i++)
            {
                m.put(names[i], v[i]);
            }
            return m;
        }
        finally
        {
            l.unlock();
        }
    }

    /**
     * Contract violations the NIC saw (software NIC: doorbell record / UAR mismatches), or "".
     *
     * @return the violations, or {@code ""} when there were none
     * @throws ClosedException when this transport is closed
     * @since 0.1
     */
    public String diagnostics()
    {
        final Lock l = enter();
        try
        {
            final String d = peer.diagnostics();
            return d == null ? "" : d;
        }
        finally
        {
            l.unlock();
        }
    }

    /**
     * The platform of this transport: its engine's.
     *
     * @return the platform of the memory this transport registers
     * @since 0.1
     */
    public Platform platform()
    {
        return engine.platform();
    }

    /**
     * The CUDA device of this transport (0 on the host platform).
     *
     * @return the device ordinal of its engine
     * @since 0.1
     */
    public int device()
    {
        return engine.device();
    }

    TransferEngine engine()
    {
        return engine;
    }

    /**
     * The key of the registration of this transport that starts at {@code address} and holds
     * {@code bytes}: what a transfer batch's requests name the memory by.
     *
     * @throws IllegalArgumentException when no such registration exists (register the memory first)
     */
    long regionKey(final long address, final long bytes, final String what)
    {
        final Lock l = enter();
        try
        {
            final long key = peer.regionKey(address, bytes);
            if (key <= 0)
            {
                final String why = peer.lastError();
                throw new IllegalArgumentException(what + " [0x" + Long.toHexString(address) + ", +" + bytes
                    + ") is not registered with " + this + " (" + why + "): call register(buffer) on it first,"
                    + " before connect");
            }
            return key;
        }
        finally
        {
            l.unlock();
        }
    }

    /**
     * Registers {@code buffer} for remote access without making it the symmetric buffer (a
     * registration replaces that one: the earlier symmetric buffer is registered again after it,
     * so the windows of contexts and peers' metadata stay as they were); registered once. Returns
     * its key. For te4j's own memory that peers reach by address and key (a notification area).
     */
    long registerAside(final DeviceBuffer buffer)
    {
        synchronized (this)
        {
            final long have = tryRegionKey(buffer.address(), buffer.size());
            if (have > 0)
            {
                return have;
            }
            final long symmetric = registeredAddress;
            final long symmetricBytes = registeredBytes;
            register(buffer);
            if (symmetric != 0)
            {
                register(symmetric, symmetricBytes);
            }
        }
        return regionKey(buffer.address(), buffer.size(), buffer.toString());
    }

    /** The key of a registration starting at {@code address} and holding {@code bytes}, or 0. */
    private long tryRegionKey(final long address, final long bytes)
    {
        final Lock l = enter();
        try
        {
            return Math.max(0, peer.regionKey(address, bytes));
        }
        finally
        {
            l.unlock();
        }
    }

    /** Gives native batch {@code b} its RDMA route: its requests to a rank post on this transport's queue pairs. */
    void attachTo(final NativeTransferBatch b)
    {
        final Lock l = enter();
        try
        {
            if (localRank < 0)
            {
                throw new IllegalStateException(this + " is not connected (call connect first)");
            }
            final int st = b.attachRdma(peer);
            if (st != 0)
            {
                throw Errors.toException(st, "TransferBatch.attachRdma", b.lastError());
            }
        }
        finally
        {
            l.unlock();
        }
    }

    /** Whether rank {@code r}'s connection from this rank broke since the last connect. */
    boolean peerLost(final int r)
    {
        final int[] causes = lostCauses(enterForDrain());
        return r >= 0 && r < causes.length && causes[r] != 0;
    }

    /** Fills ctx's RDMA tables; called by {@link CommContext#withRdma(RdmaTransport)}. */
    void attach(final CommContext ctx)
    {
        final Lock l = enter();
        try
        {
            if (localRank < 0)
            {
                throw new IllegalStateException("withRdma: " + this + " is not connected (call connect first)");
            }
            contexts.attach(ctx, this, peer);
        }
        finally
        {
            l.unlock();
        }
    }

    void detach(final CommContext ctx)
    {
        contexts.detach(ctx);
    }

    private void checkInitialized(final String what)
    {
        if (numRanks == 0)
        {
            throw new IllegalStateException(what + ": call initialize(numRanks, qpsPerRank) first");
        }
    }

    /** {@link AttachedContexts#drain()}, with a warning saying what follows when it ran out of time. */
    private boolean drainAttached(final String then)
    {
        final boolean idle = contexts.drain();
        if (!idle)
        {
            LOG.warn("{}: a stream with work on its contexts did not drain in time; {}", this, then);
        }
        return idle;
    }

    @Override
    void release()
    {
        // Freeing the tables under queued operations would be a use after free: if they do not
        // finish in time, the transport's native memory is kept instead (a logged leak).
        final boolean batchesIdle = InFlightWork.drainBatchesUsing(this);
        final boolean idle = drainAttached("its native memory and NIC are kept, not freed") && batchesIdle;
        contexts.clear();
        if (idle)
        {
            NativeApi.destroyObject(peer);
        }
        LiveMemory.transportClosed(this);
        engine.rdmaTransportClosed(this);
    }

    @Override
    public String toString()
    {
        return "RdmaTransport[" + deviceFilter + ", " + numRanks + " ranks x " + qpsPerRank + " QPs]";
    }
}
