package io.github.te4j;

import java.util.ArrayList;
import java.util.List;

/**
 * The objects one fuzz batch aims its calls at: two host-platform ranks in this JVM (engine,
 * transport, window, context, stream each), a third engine whose buffer has another size, a
 * bounded pile of closed objects kept for use-after-close calls, and the RDMA objects
 * ({@link FuzzRdma}, whose lifetime is its own).
 */
final class FuzzFixture implements AutoCloseable
{
    static final int RANKS = 2;
    private static final int GRAVEYARD = 24;

    final long size;
    final TransferEngine[] engines = new TransferEngine[RANKS];
    final P2pTransport[] transports = new P2pTransport[RANKS];
    final DeviceBuffer[] windows = new DeviceBuffer[RANKS];
    final IpcHandle[] handles = new IpcHandle[RANKS];
    final CommContext[] contexts = new CommContext[RANKS];
    final OpStream[] streams = new OpStream[RANKS];
    final TransferEngine otherEngine;
    final DeviceBuffer otherBuffer;
    /** Set by the fuzzer before every call (it outlives this fixture). */
    volatile FuzzRdma rdma;
    /** Closed objects of earlier fixtures (use after close); shared across rebuilds. */
    final List<Object> graveyard;

    FuzzFixture(final long size, final List<Object> graveyard)
    {
        this.size = size;
        this.graveyard = graveyard;
        final List<IpcHandle> list = new ArrayList<>();
        for (int r = 0; r < RANKS; r++)
        {
            engines[r] = TransferEngine.builder().platform(Platform.HOST).build();
            transports[r] = engines[r].getOrCreateP2pTransport(RANKS);
            windows[r] = transports[r].allocateBuffer(size);
            handles[r] = transports[r].exportHandle(windows[r]);
            streams[r] = engines[r].createStream();
            list.add(handles[r]);
        }
        for (int r = 0; r < RANKS; r++)
        {
            contexts[r] = transports[r].importPeerHandles(windows[r], r, list, (1L << RANKS) - 1);
        }
        otherEngine = TransferEngine.builder().platform(Platform.HOST).build();
        otherBuffer = otherEngine.getOrCreateP2pTransport(RANKS).allocateBuffer(size + 4096);
    }

    /** Whether a call closed one of the fixture's objects. */
    boolean broken()
    {
        for (int r = 0; r < RANKS; r++)
        {
            if (engines[r].isClosed() || transports[r].isClosed() || windows[r].isClosed()
                || contexts[r].isClosed() || streams[r].isClosed())
            {
                return true;
            }
        }
        return otherEngine.isClosed() || otherBuffer.isClosed();
    }

    /** Every object of the fixture, for calls that pick one at random. */
    List<NativeResource> resources()
    {
        final List<NativeResource> all = new ArrayList<>();
        for (int r = 0; r < RANKS; r++)
        {
            all.add(engines[r]);
            all.add(transports[r]);
            all.add(windows[r]);
            all.add(contexts[r]);
            all.add(streams[r]);
        }
        all.add(otherEngine);
        all.add(otherBuffer);
        return all;
    }

    /** Closes everything and keeps a few of the closed objects for later use-after-close calls. */
    @Override
    public void close()
    {
        for (final TransferEngine e : engines)
        {
            e.close();
        }
        otherEngine.close();
        synchronized (graveyard)
        {
            graveyard.addAll(resources());
            while (graveyard.size() > GRAVEYARD)
            {
                graveyard.remove(0);
            }
        }
    }
}
