package io.github.te4j.examples;

import io.github.te4j.DeviceBuffer;
import io.github.te4j.RegisteredMemory;
import io.github.te4j.SegmentHandle;
import io.github.te4j.TransferAgent;
import io.github.te4j.TransferBatch;
import io.github.te4j.TransferDescriptors;
import io.github.te4j.TransferRequest;
import io.github.te4j.TransferState;
import io.github.te4j.TransferStatus;
import io.github.te4j.workload.KvCacheLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.List;

/**
 * How one layer of the KV cache goes from the prefill rank to the decode rank, and how the decode
 * rank learns that it landed: the layer's blocks as one batch of WRITEs into the decode rank's
 * segment, and once every one of them has completed, an 8-byte WRITE of the layer's word
 * ({@link #landedWord}) into the word the decode rank polls. A request completes at the initiator
 * only after its bytes are at the target, so the word never arrives before the data.
 */
final class LayerHandoff
{
    private LayerHandoff()
    {
    }

    /** The value of layer {@code layer}'s word once it has landed; the decode rank's words start at 0. */
    static long landedWord(final int layer)
    {
        return 0x4b56_0000_0000_0000L | (layer + 1);
    }

    /** The prefill side: sends layers of {@code layout} from {@code local} to the decode rank's {@code segment}. */
    static final class Sender
    {
        private final TransferAgent agent;
        private final RegisteredMemory local;
        private final SegmentHandle decode;
        private final KvCacheLayout layout;
        private final TransferDescriptors[] layers;

        /**
         * Builds every layer's requests once (a serving system's block tables are known before
         * the layers are computed) and writes the layers' words into {@code local}'s buffer.
         */
        Sender(final TransferAgent agent, final RegisteredMemory local, final SegmentHandle decode,
            final KvCacheLayout layout)
        {
            this.agent = agent;
            this.local = local;
            this.decode = decode;
            this.layout = layout;
            this.layers = new TransferDescriptors[layout.layers()];
            for (int l = 0; l < layout.layers(); l++)
            {
                final TransferDescriptors d = new TransferDescriptors(layout.blocksPerLayer());
                for (int b = 0; b < layout.blocksPerLayer(); b++)
                {
                    d.write(local, layout.prefillOffset(l, b), decode, layout.decodeOffset(l, b), layout.blockBytes());
                }
                layers[l] = d;
                local.buffer().write(layout.layerWordOffset(l), word(landedWord(l)));
            }
        }

        /** Hands layer {@code layer} over; returns once the decode rank's word for it is set. */
        void send(final int layer, final Duration timeout)
        {
            try (TransferBatch data = agent.allocateBatch(layout.blocksPerLayer()))
            {
                data.submit(layers[layer], timeout);
                requireCompleted(data, timeout, "layer " + layer);
            }
            try (TransferBatch word = agent.allocateBatch(1))
            {
                final long at = layout.layerWordOffset(layer);
                word.submit(List.of(TransferRequest.write(local, at, decode, at, 8)), timeout);
                requireCompleted(word, timeout, "layer " + layer + "'s landed word");
            }
        }

        private static void requireCompleted(final TransferBatch batch, final Duration timeout, final String what)
        {
            final List<TransferStatus> states = batch.await(timeout);
            for (int i = 0; i < states.size(); i++)
            {
                if (states.get(i).state() != TransferState.COMPLETED)
                {
                    throw new IllegalStateException(what + ", request " + i + ": " + states.get(i));
                }
            }
        }
    }

    /** The decode side: waits for layers to land in {@code pool}, a buffer laid out by {@code layout}. */
    static final class Receiver
    {
        /** How long a wait spins before it starts sleeping between looks. */
        private static final long SPIN_NANOS = 50_000;
        private final DeviceBuffer pool;
        private final KvCacheLayout layout;

        Receiver(final DeviceBuffer pool, final KvCacheLayout layout)
        {
            this.pool = pool;
            this.layout = layout;
        }

        /** Clears every layer's word; call before the prefill rank can send. */
        void reset()
        {
            pool.fill(layout.layerWordOffset(0), 8L * layout.layers(), (byte) 0);
        }

        /**
         * Waits until layer {@code layer} has landed.
         *
         * @throws IllegalStateException when it has not within {@code timeout}, or its word holds
         *                               a value no sender writes there
         */
        void await(final int layer, final Duration timeout)
        {
            final long start = System.nanoTime();
            final long want = landedWord(layer);
            final byte[] got = new byte[8];
            while (true)
            {
                pool.read(layout.layerWordOffset(layer), got, 0, 8);
                final long v = ByteBuffer.wrap(got).order(ByteOrder.LITTLE_ENDIAN).getLong();
                if (v == want)
                {
                    return;
                }
                if (v != 0)
                {
                    throw new IllegalStateException("layer " + layer + "'s word holds " + Long.toHexString(v)
                        + ", expected 0 or " + Long.toHexString(want));
                }
                final long waited = System.nanoTime() - start;
                if (waited > timeout.toNanos())
                {
                    throw new IllegalStateException("layer " + layer + " did not land within " + timeout.toMillis()
                        + " ms");
                }
                if (waited > SPIN_NANOS)
                {
                    sleepBriefly();
                }
                else
                {
                    Thread.onSpinWait();
                }
            }
        }

        private static void sleepBriefly()
        {
            try
            {
                Thread.sleep(0, 50_000);
            }
            catch (final InterruptedException e)
            {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while waiting for a layer", e);
            }
        }
    }

    private static byte[] word(final long v)
    {
        return ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(v).array();
    }
}
