package io.github.te4j;

import java.nio.IntBuffer;
import java.nio.LongBuffer;
import org.bytedeco.javacpp.IntPointer;
import org.bytedeco.javacpp.LongPointer;
import org.bytedeco.javacpp.Pointer;

/**
 * A transfer list's descriptor arrays in native memory, in the layout
 * {@code te4j::TransferList::create} takes (opcode, local address, remote address, length per
 * request): Java fills them through buffer views and native code reads them where they are, so
 * preparing a list copies no Java arrays through JNI. Also state words, one per request.
 */
final class DescriptorStaging
{
    final IntPointer opcodes;
    final LongPointer local;
    final LongPointer remote;
    final LongPointer lengths;
    final IntPointer states;
    final IntBuffer opcodeView;
    final LongBuffer localView;
    final LongBuffer remoteView;
    final LongBuffer lengthView;
    final IntBuffer stateView;

    DescriptorStaging(final int capacity)
    {
        opcodes = new IntPointer(capacity);
        local = new LongPointer(capacity);
        remote = new LongPointer(capacity);
        lengths = new LongPointer(capacity);
        states = new IntPointer(capacity);
        if (opcodes.isNull() || local.isNull() || remote.isNull() || lengths.isNull() || states.isNull())
        {
            close();
            throw new Te4jException(Te4jException.Code.OUT_OF_MEMORY, "TransferBatch: no native memory for the"
                + " descriptors of " + capacity + " requests");
        }
        opcodeView = opcodes.asBuffer();
        localView = local.asBuffer();
        remoteView = remote.asBuffer();
        lengthView = lengths.asBuffer();
        stateView = states.asBuffer();
    }

    void put(final int i, final int opcode, final long localAddress, final long remoteAddress, final long length)
    {
        opcodeView.put(i, opcode);
        localView.put(i, localAddress);
        remoteView.put(i, remoteAddress);
        lengthView.put(i, length);
    }

    void close()
    {
        for (final Pointer p : new Pointer[] {opcodes, local, remote, lengths, states})
        {
            if (p != null)
            {
                p.close();
            }
        }
    }
}
