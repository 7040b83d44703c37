package io.github.te4j;

import io.github.te4j.internal.NativeOpStream;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.Lock;
import org.bytedeco.javacpp.Pointer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The facade: one engine per rank and device. It owns the transports and streams it hands out
 * and closes them, in the right order, when closed.
 *
 * <pre>{@code
 * try (TransferEngine engine = TransferEngine.builder().platform(Platform.CUDA).device(0).build()) {
 *     P2pTransport p2p = engine.getOrCreateP2pTransport(2);
 *     DeviceBuffer buf = p2p.allocateBuffer(1 << 20);
 *     CommContext ctx = p2p.connect(buf, exchange, Duration.ofSeconds(30));
 *     OpStream stream = engine.createStream();
 *     stream.putWithSignal(ctx, 1, 0, buf, 0, 4096, SIGNAL_OFFSET, 1);
 *     stream.synchronize(Duration.ofSeconds(10));
 * }
 * }</pre>
 *
 * @since 0.1
 */
public final class TransferEngine extends NativeResource
{
    private static final Logger LOG = LoggerFactory.getLogger(TransferEngine.class);

    private final Platform platform;
    private final int device;
    private final List<OpStream> streams = new ArrayList<>();
    private final List<TransferAgent> agents = new ArrayList<>();
    private P2pTransport p2p;
    private RdmaTransport rdma;

    private TransferEngine(final Platform platform, final int device)
    {
        super("TransferEngine");
        this.platform = platform;
        this.device = device;
    }

    /**
     * A builder; defaults: {@link Platform#HOST}, device 0.
     *
     * @return a new builder
     * @since 0.1
     */
    public static Builder builder()
    {
        return new Builder();
    }

    /**
     * The platform this engine was built for.
     *
     * @return {@link Platform#HOST} or {@link Platform#CUDA}
     * @since 0.1
     */
    public Platform platform()
    {
        return platform;
    }

    /**
     * CUDA device ordinal (0 on the host platform).
     *
     * @return the device ordinal
     * @since 0.1
     */
    public int device()
    {
        return device;
    }

    /**
     * The engine's P2P transport for {@code numRanks} ranks, made on first call.
     *
     * @param numRanks ranks of the job, in [1, 64]
     * @return the transport; the same one until it is closed
     * @throws IllegalArgumentException when {@code numRanks} is out of range or differs from the open
     *     transport's
     * @throws ClosedException when this engine is closed
     * @throws Te4jException when the native transport cannot be made
     * @since 0.1
     */
    public P2pTransport getOrCreateP2pTransport(final int numRanks)
    {
        Errors.checkArgument(numRanks >= 1 && numRanks <= 64, "numRanks=" + numRanks + " must be in [1, 64]");
        final Lock l = enter();
        try
        {
            synchronized (this)
            {
                if (p2p != null && !p2p.isClosed())
                {
                    Errors.checkArgument(p2p.numRanks() == numRanks,
                        "this engine's P2pTransport has " + p2p.numRanks() + " ranks, asked for " + numRanks);
                    return p2p;
                }
                p2p = new P2pTransport(this, numRanks);
                LOG.debug("P2pTransport for {} ranks on {}:{}", numRanks, platform, device);
                return p2p;
            }
        }
        finally
        {
            l.unlock();
        }
    }

    /**
     * The engine's RDMA transport, made on first call (a second call must name the same filter).
     * {@code deviceFilter}: {@code "soft"}, {@code "soft@<IPv4>[:<port>]"} (the software NIC),
     * {@code ""}/{@code "auto"} (mlx5 if present, else the software NIC) or an mlx5 device name
     * prefix. Throws {@link UnavailableException} naming the cause when the backend cannot work here.
     *
     * @param deviceFilter which NIC to use, as above
     * @return the transport; the same one until it is closed
     * @throws IllegalArgumentException when {@code deviceFilter} is null, not printable ASCII, longer than 256
     *     characters, or differs from the open transport's
     * @throws UnavailableException when the backend cannot work here
     * @throws ClosedException when this engine is closed
     * @since 0.1
     */
    public RdmaTransport getOrCreateRdmaTransport(final String deviceFilter)
    {
        Errors.checkArgument(deviceFilter != null, "deviceFilter is null");
        Errors.checkArgument(deviceFilter.length() <= 256 && deviceFilter.chars().allMatch(c -> c > 32 && c < 127),
            "deviceFilter '" + deviceFilter + "' must be printable ASCII without spaces, at most 256 characters");
        final Lock l = enter();
        try
        {
            synchronized (this)
            {
                if (rdma != null && !rdma.isClosed())
                {
                    Errors.checkArgument(rdma.deviceFilter().equals(deviceFilter),
                        "this engine's RdmaTransport uses '" + rdma.deviceFilter() + "', asked for '" + deviceFilter + "'");
                    return rdma;
                }
                rdma = new RdmaTransport(this, deviceFilter);
                LOG.debug("RdmaTransport '{}' on {}:{}", deviceFilter, platform, device);
                return rdma;
            }
        }
        finally
        {
            l.unlock();
        }
    }

    /**
     * A transfer agent ({@link TransferAgent}) for this rank's segment {@code segmentName}, over the
     * buffers of {@code p2p} (this engine's transport). Host platform.
     *
     * @param p2p this engine's P2P transport
     * @param segmentName the name other ranks open this segment by
     * @return a new agent; close it, or the engine, when done
     * @throws IllegalArgumentException when an argument is null, {@code p2p} is another engine's, or the name
     *     is not a valid segment name
     * @throws ClosedException when this engine or {@code p2p} is closed
     * @since 0.1
     */
    public TransferAgent createTransferAgent(final P2pTransport p2p, final String segmentName)
    {
        Errors.checkArgument(p2p != null, "p2p is null");
        Errors.checkArgument(p2p.engine() == this, "p2p belongs to another engine");
        Errors.checkArgument(segmentName != null, "segmentName is null");
        io.github.te4j.exchange.SegmentDirectory.checkName(segmentName);
        final Lock l = enter();
        try
        {
            final Lock lp = p2p.enter();
            try
            {
                final TransferAgent a = new TransferAgent(this, p2p, segmentName);
                synchronized (agents)
                {
                    agents.add(a);
                }
                return a;
            }
            finally
            {
                lp.unlock();
            }
        }
        finally
        {
            l.unlock();
        }
    }

    void agentClosed(final TransferAgent a)
    {
        synchronized (agents)
        {
            agents.remove(a);
        }
    }

    /**
     * A new stream owned by te4j (CUDA: {@code cudaStreamNonBlocking}; host: an executor thread).
     *
     * @return the new stream; close it, or the engine, when done
     * @throws ClosedException when this engine is closed
     * @throws Te4jException when the stream cannot be made
     * @since 0.1
     */
    public OpStream createStream()
    {
        final Lock l = enter();
        try
        {
            return register(new OpStream(this, NativeOpStream.create(platform.nativeId(), device)));
        }
        finally
        {
            l.unlock();
        }
    }

    /**
     * Wraps a CUDA stream created elsewhere, e.g. {@code org.bytedeco.cuda.cudart.CUstream_st} from
     * the JavaCPP Presets for CUDA. The stream stays the caller's; it must not be the legacy
     * default stream, where a spinning wait could deadlock.
     *
     * @param cudaStream the stream, not null and not the legacy default stream
     * @return a stream over it; closing it does not destroy the CUDA stream
     * @throws IllegalArgumentException when {@code cudaStream} is null or a default stream, or this engine is
     *     not CUDA
     * @throws ClosedException when this engine is closed
     * @since 0.1
     */
    public OpStream wrapStream(final Pointer cudaStream)
    {
        Errors.checkArgument(cudaStream != null && !cudaStream.isNull(),
            "cudaStream is null: the legacy default stream is refused (fix: cudaStreamCreateWithFlags(..., cudaStreamNonBlocking))");
        return wrapStream(cudaStream.address());
    }

    /**
     * Same as {@link #wrapStream(Pointer)} with the raw {@code cudaStream_t} value.
     *
     * @param cudaStreamHandle the {@code cudaStream_t}, not 0, 1 or 2 (the default streams)
     * @return a stream over it; closing it does not destroy the CUDA stream
     * @throws IllegalArgumentException when the handle is a default stream or this engine is not CUDA
     * @throws ClosedException when this engine is closed
     * @since 0.1
     */
    public OpStream wrapStream(final long cudaStreamHandle)
    {
        Errors.checkArgument(platform == Platform.CUDA, "wrapStream needs the CUDA platform, this engine is " + platform);
        Errors.checkArgument(cudaStreamHandle != 0 && cudaStreamHandle != 1 && cudaStreamHandle != 2,
            "cudaStream 0x" + Long.toHexString(cudaStreamHandle) + " is a default stream: refused"
                + " (fix: cudaStreamCreateWithFlags(..., cudaStreamNonBlocking))");
        final Lock l = enter();
        try
        {
            return register(new OpStream(this, NativeOpStream.wrapCuda(device, cudaStreamHandle)));
        }
        finally
        {
            l.unlock();
        }
    }

    private OpStream register(final OpStream s)
    {
        synchronized (streams)
        {
            streams.add(s);
        }
        return s;
    }

    void streamClosed(final OpStream s)
    {
        synchronized (streams)
        {
            streams.remove(s);
        }
    }

    synchronized void rdmaTransportClosed(final RdmaTransport t)
    {
        if (rdma == t)
        {
            rdma = null;
        }
    }

    synchronized void transportClosed(final P2pTransport t)
    {
        if (p2p == t)
        {
            p2p = null;
        }
    }

    @Override
    void release()
    {
        // Agents first (their batches copy between buffers and mappings), then streams drain
        // (kernels may still read peer tables), then transports unmap and free.
        final List<TransferAgent> as;
        synchronized (agents)
        {
            as = new ArrayList<>(agents);
        }
        as.forEach(TransferAgent::close);
        final List<OpStream> ss;
        synchronized (streams)
        {
            ss = new ArrayList<>(streams);
        }
        ss.forEach(OpStream::close);
        // RDMA next: its NIC threads write into buffers that the P2P transport frees.
        final RdmaTransport r;
        synchronized (this)
        {
            r = rdma;
        }
        if (r != null)
        {
            r.close();
        }
        final P2pTransport t;
        synchronized (this)
        {
            t = p2p;
        }
        if (t != null)
        {
            t.close();
        }
    }

    /**
     * Builds a {@link TransferEngine}.
     *
     * @since 0.1
     */
    public static final class Builder
    {
        private Platform platform = Platform.HOST;
        private int device;

        private Builder()
        {
        }

        /**
         * The platform; {@link Platform#HOST} by default.
         *
         * @param platform the platform, not null
         * @return this builder
         * @throws IllegalArgumentException when {@code platform} is null
         * @since 0.1
         */
        public Builder platform(final Platform platform)
        {
            Errors.checkArgument(platform != null, "platform is null");
            this.platform = platform;
            return this;
        }

        /**
         * The CUDA device ordinal (ignored on the host platform).
         *
         * @param device the device ordinal, not negative
         * @return this builder
         * @throws IllegalArgumentException when {@code device} is negative
         * @since 0.1
         */
        public Builder device(final int device)
        {
            Errors.checkArgument(device >= 0, "device=" + device + " is negative");
            this.device = device;
            return this;
        }

        /**
         * Checks availability and builds; throws {@link UnavailableException} naming the cause.
         *
         * @return a new engine; close it when done
         * @throws UnavailableException when the platform cannot run here (no GPU, driver or native library)
         * @throws IllegalArgumentException when the device ordinal is not below the number of CUDA devices
         * @since 0.1
         */
        public TransferEngine build()
        {
            Availability.ensureAvailability(platform);
            if (platform == Platform.CUDA)
            {
                final int n = Availability.cudaDeviceCount();
                Errors.checkArgument(device < n, "device=" + device + " but this machine has " + n + " CUDA devices");
            }
            return new TransferEngine(platform, platform == Platform.HOST ? 0 : device);
        }
    }
}
