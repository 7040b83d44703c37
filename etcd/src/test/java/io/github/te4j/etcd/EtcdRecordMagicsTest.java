package io.github.te4j.etcd;

import static org.testng.Assert.assertEquals;

import io.github.te4j.IpcHandle;
import io.github.te4j.RdmaMetadata;
import java.util.HashSet;
import java.util.List;
import org.testng.annotations.Test;

/** Every record's first word is its own: no etcd value can be mistaken for another te4j encoding. */
public class EtcdRecordMagicsTest
{
    @Test
    public void recordMagicsAreDistinctFromEveryOtherTe4jMagic()
    {
        final int frame = 0x54453452;  // "TE4R", rendezvous frames
        final int descriptor = 0x54453453;  // "TE4S", segment descriptors (what a segment record carries)
        final List<Integer> magics = List.of(EtcdRecords.MEMBER_MAGIC, EtcdRecords.ENTRY_MAGIC, EtcdRecords.SEGMENT_MAGIC,
            RdmaMetadata.MAGIC, IpcHandle.MAGIC, frame, descriptor);
        assertEquals(new HashSet<>(magics).size(), magics.size(), "two encodings share a magic: " + magics);
    }
}
