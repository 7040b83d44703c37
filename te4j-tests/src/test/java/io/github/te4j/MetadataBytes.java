package io.github.te4j;

import java.util.ArrayList;
import java.util.List;

/** The bytes RdmaTransport.connectPeers takes, from metadata views (null entries stay null). */
final class MetadataBytes
{
    private MetadataBytes()
    {
    }

    static List<byte[]> of(final List<RdmaMetadata> all)
    {
        final List<byte[]> bytes = new ArrayList<>(all.size());
        for (final RdmaMetadata m : all)
        {
            bytes.add(m == null ? null : m.toBytes());
        }
        return bytes;
    }
}
