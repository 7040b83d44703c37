package io.github.te4j;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The RDMA objects fuzz calls aim at: two host ranks in this JVM (engine, window, stream each),
 * each with a software-NIC RdmaTransport registered on its window and connected to the other,
 * and a context of the window that reaches the other rank only over RDMA (P2P to itself alone).
 * Kept apart from {@link FuzzFixture}'s engines, so that the frequent rebuilds of those do not
 * restart the NICs; rebuilt when one of its own objects was closed.
 *
 * <p>Calls that connect forged metadata, recreate queue pairs or re-register leave the pair
 * disturbed: valid operations may then fail with an error CQE. {@link #repair()} brings it back
 * (re-register, recreate, reconnect at both ranks), as an application would after an error.
 */
final class FuzzRdma implements AutoCloseable
{
    static final int RANKS = 2;
    /** Bounds a quiet that nobody answers (a peer whose QPs were recreated under it). */
    static final Duration DEVICE_TIMEOUT = Duration.ofSeconds(2);

    final long size;
    final TransferEngine[] engines = new TransferEngine[RANKS];
    final DeviceBuffer[] windows = new DeviceBuffer[RANKS];
    final OpStream[] streams = new OpStream[RANKS];
    final RdmaTransport[] transports = new RdmaTransport[RANKS];
    final CommContext[] contexts = new CommContext[RANKS];
    /** Metadata from the first connect: stale once queue pairs are recreated. */
    final RdmaMetadata[] first = new RdmaMetadata[RANKS];
    /** Closed transports and contexts of earlier instances (use after close); shared, bounded. */
    private final List<NativeResource> graveyard;
    private volatile boolean disturbed;
    private volatile boolean reranked;

    FuzzRdma(final long size, final List<NativeResource> graveyard)
    {
        this.size = size;
        this.graveyard = graveyard;
        for (int r = 0; r < RANKS; r++)
        {
            engines[r] = TransferEngine.builder().platform(Platform.HOST).build();
            final P2pTransport p2p = engines[r].getOrCreateP2pTransport(RANKS);
            windows[r] = p2p.allocateBuffer(size);
            streams[r] = engines[r].createStream();
            transports[r] = engines[r].getOrCreateRdmaTransport("soft");
            transports[r].initialize(RANKS, 1, 16);
            transports[r].deviceTimeout(DEVICE_TIMEOUT);
            transports[r].register(windows[r]);
            transports[r].createQueuePairs();
            first[r] = transports[r].localMetadata();
            // P2P to itself only: the handles of the others are not read.
            contexts[r] = p2p.importPeerHandles(windows[r], r, Arrays.asList(new IpcHandle[RANKS]), 3, 1L << r);
        }
        connect();
        for (int r = 0; r < RANKS; r++)
        {
            contexts[r].withRdma(transports[r]);
        }
    }

    /** Both ranks' current metadata, in rank order. */
    List<RdmaMetadata> metadata()
    {
        return List.of(transports[0].localMetadata(), transports[1].localMetadata());
    }

    private void connect()
    {
        final List<RdmaMetadata> all = metadata();
        // Each NIC first takes its own rank back if a call connected it as the other one (a NIC
        // refuses connections meant for another rank than its own).
        for (int r = 0; r < RANKS && reranked; r++)
        {
            transports[r].connectPeers(r, MetadataBytes.of(all), 1L << r);
        }
        reranked = false;
        for (int r = 0; r < RANKS; r++)
        {
            transports[r].connectPeers(r, MetadataBytes.of(all), 3);
        }
    }

    /** A call may have disconnected, misconnected or errored the queue pairs. */
    void disturb()
    {
        disturbed = true;
    }

    /** A call may have connected a transport as the other rank. */
    void rerank()
    {
        reranked = true;
        disturbed = true;
    }

    /** Whether valid operations must succeed now. */
    boolean clean()
    {
        return !disturbed;
    }

    /** The recovery an application makes after an error CQE, here on both ranks of one process. */
    synchronized void repair()
    {
        FuzzCalls.drain(streams[0]);
        FuzzCalls.drain(streams[1]);
        for (int r = 0; r < RANKS; r++)
        {
            if (transports[r].registeredAddress() != windows[r].address()
                || transports[r].registeredBytes() != windows[r].size())
            {
                transports[r].register(windows[r]);
            }
            transports[r].recreateQueuePairs();
        }
        connect();
        disturbed = false;
    }

    boolean broken()
    {
        return resources().stream().anyMatch(NativeResource::isClosed);
    }

    List<NativeResource> resources()
    {
        final List<NativeResource> all = new ArrayList<>();
        for (int r = 0; r < RANKS; r++)
        {
            all.addAll(List.of(engines[r], windows[r], streams[r], transports[r], contexts[r]));
        }
        return all;
    }

    /** A closed RdmaTransport or context of an earlier instance, or null. */
    <T> T dead(final Class<T> type, final java.util.Random rnd)
    {
        synchronized (graveyard)
        {
            final List<T> found = new ArrayList<>();
            graveyard.stream().filter(type::isInstance).forEach(x -> found.add(type.cast(x)));
            return found.isEmpty() ? null : found.get(rnd.nextInt(found.size()));
        }
    }

    /** Closes everything; the transports and contexts join the pile for use-after-close calls. */
    @Override
    public void close()
    {
        for (final TransferEngine e : engines)
        {
            e.close();
        }
        synchronized (graveyard)
        {
            graveyard.addAll(List.of(transports[0], transports[1], contexts[0], contexts[1]));
            while (graveyard.size() > 8)
            {
                graveyard.remove(0);
            }
        }
    }
}
