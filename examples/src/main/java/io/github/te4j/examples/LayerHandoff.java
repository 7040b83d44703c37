package io.github.te4j.examples;

import io.github.te4j.Notification;
import io.github.te4j.Notifications;
import io.github.te4j.RegisteredMemory;
import io.github.te4j.SegmentHandle;
import io.github.te4j.Te4jTimeoutException;
import io.github.te4j.TransferAgent;
import io.github.te4j.TransferBatch;
import io.github.te4j.TransferDescriptors;
import io.github.te4j.TransferList;
import io.github.te4j.TransferState;
import io.github.te4j.TransferStatus;
import io.github.te4j.workload.KvCacheLayout;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;

/**
 * How one layer of the KV cache goes from the prefill rank to the decode rank, and how the decode
 * rank learns that it landed: a notification naming the layer ({@link #message}), which te4j
 * delivers only after the layer's bytes are in the decode rank's memory.
 *
 * <p>The prefill rank knows its block tables before it computes the layers, so each layer's
 * requests are prepared once. Where the decode segment is mapped here (the host platform, CUDA)
 * they become a {@link TransferList}: a post costs the same host work for 4 blocks or 4,000, and
 * once it is done the notification follows on its own. Over the software NIC, where lists do not
 * go, each layer is one batch submitted with its notification, published after every WRITE of
 * the batch has completed.
 */
final class LayerHandoff
{
    private LayerHandoff()
    {
    }

    /** The notification that says layer {@code layer} has landed. */
    static byte[] message(final int layer)
    {
        return ("kv layer " + layer).getBytes(StandardCharsets.UTF_8);
    }

    /** The prefill side: sends layers of {@code layout} from {@code local} to the decode rank's {@code segment}. */
    static final class Sender implements AutoCloseable
    {
        private final TransferAgent agent;
        private final SegmentHandle decode;
        private final KvCacheLayout layout;
        private final TransferDescriptors[] requests;
        /** Per layer, where the route takes lists; else null. */
        private final TransferList[] lists;

        Sender(final TransferAgent agent, final RegisteredMemory local, final SegmentHandle decode,
            final KvCacheLayout layout)
        {
            this.agent = agent;
            this.decode = decode;
            this.layout = layout;
            this.requests = new TransferDescriptors[layout.layers()];
            this.lists = new TransferList[layout.layers()];
            for (int l = 0; l < layout.layers(); l++)
            {
                final TransferDescriptors d = new TransferDescriptors(layout.blocksPerLayer());
                for (int b = 0; b < layout.blocksPerLayer(); b++)
                {
                    d.write(local, layout.prefillOffset(l, b), decode, layout.decodeOffset(l, b), layout.blockBytes());
                }
                requests[l] = d;
                lists[l] = decode.isRdma() ? null : agent.prepareList(d);
            }
        }

        /** Whether the layers go as prepared lists (else as batches). */
        boolean usesLists()
        {
            return lists[0] != null;
        }

        /**
         * Hands layer {@code layer} over; returns once its bytes have landed and its notification
         * is on its way (the decode rank takes it).
         */
        void send(final int layer, final Duration timeout)
        {
            if (lists[layer] != null)
            {
                requireCompleted(lists[layer].post(timeout).await(timeout), "layer " + layer);
                agent.sendNotification(decode.segmentName(), message(layer), timeout);
                return;
            }
            try (TransferBatch batch = agent.allocateBatch(layout.blocksPerLayer()))
            {
                batch.submit(requests[layer], message(layer), timeout);
                requireCompleted(batch.await(timeout), "layer " + layer);
            }
        }

        private static void requireCompleted(final List<TransferStatus> states, final String what)
        {
            for (int i = 0; i < states.size(); i++)
            {
                if (states.get(i).state() != TransferState.COMPLETED)
                {
                    throw new IllegalStateException(what + ", request " + i + ": " + states.get(i));
                }
            }
        }

        @Override
        public void close()
        {
            for (final TransferList list : lists)
            {
                if (list != null)
                {
                    list.close();
                }
            }
        }
    }

    /** The decode side: takes the prefill rank's notifications, one per layer, in order. */
    static final class Receiver
    {
        private final Notifications notifications;
        private final String prefill;

        /**
         * @param notifications the decode agent's ({@link TransferAgent#notifications()}, asked for
         *                      before it publishes its segment, which then tells senders where they go)
         * @param prefill       the prefill rank's segment name
         */
        Receiver(final Notifications notifications, final String prefill)
        {
            this.notifications = notifications;
            this.prefill = prefill;
        }

        /**
         * Waits until layer {@code layer} has landed.
         *
         * @throws IllegalStateException when it has not within {@code timeout}, or the next
         *                               notification is another layer's or another sender's
         */
        void await(final int layer, final Duration timeout)
        {
            final Notification n;
            try
            {
                n = notifications.take(timeout);
            }
            catch (final Te4jTimeoutException e)
            {
                throw new IllegalStateException("layer " + layer + " did not land within " + timeout.toMillis() + " ms",
                    e);
            }
            if (!n.sender().equals(prefill) || !Arrays.equals(n.message(), message(layer)))
            {
                throw new IllegalStateException("waiting for layer " + layer + " from '" + prefill + "', got '"
                    + new String(n.message(), StandardCharsets.UTF_8) + "' from '" + n.sender() + "'");
            }
        }
    }
}
