package com.example;

import io.github.te4j.DeviceBuffer;
import io.github.te4j.Notification;
import io.github.te4j.Notifications;
import io.github.te4j.P2pTransport;
import io.github.te4j.Platform;
import io.github.te4j.RegisteredMemory;
import io.github.te4j.SegmentHandle;
import io.github.te4j.TransferAgent;
import io.github.te4j.TransferDescriptors;
import io.github.te4j.TransferEngine;
import io.github.te4j.TransferList;
import io.github.te4j.TransferState;
import io.github.te4j.TransferStatus;
import io.github.te4j.exchange.InMemorySegmentDirectory;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

/**
 * The README's serving snippet, run: a "prefill" agent hands scattered blocks to a "decode" agent
 * as a prepared transfer list, posted twice, and tells it with a notification that comes only
 * after the data. Both agents live in this process (two host-platform engines and an in-memory
 * segment directory), so it needs no arguments. The lines between the README markers are the
 * README's snippet, word for word (scripts/consumer-test.sh checks that).
 */
public final class ServingQuickStart
{
    static final int BLOCKS = 64;
    static final int BLOCK_BYTES = 4096;
    static final long POOL_BYTES = 4L * BLOCKS * BLOCK_BYTES;
    static final Duration TIMEOUT = Duration.ofSeconds(30);

    private ServingQuickStart()
    {
    }

    public static void main(final String[] args) throws Exception
    {
        final Random random = new Random(7);
        final long[] srcOffset = new long[BLOCKS];
        final long[] dstOffset = new long[BLOCKS];
        for (int b = 0; b < BLOCKS; b++)
        {
            // Scattered slots of each pool, a different slot on each side.
            srcOffset[b] = (long) (4 * b + random.nextInt(4)) * BLOCK_BYTES;
            dstOffset[b] = (long) (4 * (BLOCKS - 1 - b) + random.nextInt(4)) * BLOCK_BYTES;
        }
        final String space = "serving-quick-start-" + ProcessHandle.current().pid();
        try (TransferEngine prefillEngine = TransferEngine.builder().platform(Platform.HOST).build();
             TransferEngine decodeEngine = TransferEngine.builder().platform(Platform.HOST).build();
             InMemorySegmentDirectory directory = InMemorySegmentDirectory.open(space))
        {
            final P2pTransport decodeP2p = decodeEngine.getOrCreateP2pTransport(2);
            final TransferAgent decodeAgent = decodeEngine.createTransferAgent(decodeP2p, "decode");
            final DeviceBuffer decodePool = decodeP2p.allocateBuffer(POOL_BYTES);
            final byte[] poison = new byte[(int) POOL_BYTES];
            Arrays.fill(poison, (byte) 0xA5);
            decodePool.write(0, poison);
            decodeAgent.registerLocalMemory(decodePool);
            final Notifications inbox = decodeAgent.notifications();   // before publishing: tells senders where
            decodeAgent.publishSegment(directory);

            final P2pTransport p2p = prefillEngine.getOrCreateP2pTransport(2);
            final DeviceBuffer pool = p2p.allocateBuffer(POOL_BYTES);
            final byte[] data = new byte[(int) POOL_BYTES];
            random.nextBytes(data);
            pool.write(0, data);
            final TransferAgent agent = prefillEngine.createTransferAgent(p2p, "prefill");
            final RegisteredMemory kv = agent.registerLocalMemory(pool);
            agent.publishSegment(directory);
            final SegmentHandle decode = agent.openSegment("decode", directory, TIMEOUT);

            // README:begin prefill
            TransferDescriptors layer = new TransferDescriptors(BLOCKS);
            for (int b = 0; b < BLOCKS; b++)
            {
                layer.write(kv, srcOffset[b], decode, dstOffset[b], BLOCK_BYTES);
            }
            try (TransferList list = agent.prepareList(layer))         // checked and staged once
            {
                for (int step = 0; step < 2; step++)                      // reposted at every step
                {
                    List<TransferStatus> done = list.post(TIMEOUT).await(TIMEOUT);
                    if (done.stream().anyMatch(s -> s.state() != TransferState.COMPLETED))
                    {
                        throw new IllegalStateException("step " + step + ": " + done);
                    }
                    agent.sendNotification("decode", ("step " + step).getBytes(StandardCharsets.UTF_8), TIMEOUT);
                }
            }
            // README:end prefill

            for (int step = 0; step < 2; step++)
            {
                // README:begin decode
                Notification n = inbox.take(TIMEOUT);   // in order, after the data it follows
                String what = new String(n.message(), StandardCharsets.UTF_8); // "step 0" from "prefill"
                // README:end decode
                if (!n.sender().equals("prefill") || !what.equals("step " + step))
                {
                    throw new IllegalStateException("expected 'step " + step + "' from prefill, got '" + what + "' from '"
                        + n.sender() + "'");
                }
            }
            int bad = 0;
            for (int b = 0; b < BLOCKS; b++)
            {
                final byte[] got = decodePool.read(dstOffset[b], BLOCK_BYTES);
                final byte[] want = Arrays.copyOfRange(data, (int) srcOffset[b], (int) srcOffset[b] + BLOCK_BYTES);
                bad += Arrays.equals(got, want) ? 0 : 1;
            }
            if (bad != 0)
            {
                throw new IllegalStateException(bad + " of " + BLOCKS + " blocks differ");
            }
            System.out.println("serving quick start: " + BLOCKS + " blocks posted twice as a list, 2 notifications,"
                + " every block verified; example passed");
        }
    }
}
