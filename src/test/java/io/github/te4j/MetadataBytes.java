package io.github.te4j;

import java.util.ArrayList;
import java.util.List;

/** The bytes RdmaTransport.connectPeers takes, from metadata views (a null list or entry stays null). */
final class MetadataBytes
{
    private MetadataBytes()
    {
    }

    static List<byte[]> of(final List<RdmaMetadata> all)
    {
        if (all == null)
        {
            return null;
        }
        final List<byte[]> bytes = new ArrayList<>(all.size());
        for (final RdmaMetadata m : all)
        {
            bytes.add(m == null ? null : m.toBytes());
        }
        return bytes;
    }
}
