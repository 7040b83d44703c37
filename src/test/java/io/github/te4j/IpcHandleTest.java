package io.github.te4j;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.Random;
import org.testng.Assert;
import org.testng.annotations.AfterClass;
import org.testng.annotations.BeforeClass;
import org.testng.annotations.Test;

/**
 * The wire bytes of handles (p2p/handle_blob.h: blob words little-endian, then a CRC-32): round
 * trip, and every corruption refused by the native decoder with the field named.
 */
public class IpcHandleTest
{
    private static final long SIZE = 4096;

    private TransferEngine engine;
    private IpcHandle real;

    @BeforeClass(alwaysRun = true)
    public void export()
    {
        engine = TransferEngine.builder().build();
        final P2pTransport t = engine.getOrCreateP2pTransport(2);
        real = t.exportHandle(t.allocateBuffer(SIZE));
    }

    @AfterClass(alwaysRun = true)
    public void close()
    {
        engine.close();
    }

    private static String refusal(final byte[] bytes)
    {
        return Assert.expectThrows(BadHandleException.class, () -> IpcHandle.fromBytes(bytes)).getMessage();
    }

    private static void assertNames(final String message, final String field)
    {
        Assert.assertTrue(message.contains(field), "expected a refusal naming '" + field + "': " + message);
    }

    /** The real handle's bytes with word {@code word} replaced and the CRC fixed. */
    private byte[] withWord(final int word, final int value)
    {
        final byte[] b = real.toBytes();
        ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).putInt(4 * word, value);
        return ForgedHandles.withCrc(b);
    }

    @Test
    public void roundTrip()
    {
        final byte[] bytes = real.toBytes();
        Assert.assertEquals(bytes.length, 4 * ForgedHandles.INTS + 4, "host blob words and the CRC");
        Assert.assertEquals(ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).getInt(0), IpcHandle.MAGIC);
        final IpcHandle back = IpcHandle.fromBytes(bytes);
        Assert.assertEquals(back.toBytes(), bytes);
        Assert.assertEquals(back.platform(), Platform.HOST);
        Assert.assertEquals(back.bufferSize(), SIZE);
        Assert.assertEquals(back.ownerPid(), (int)ProcessHandle.current().pid());
        Assert.assertEquals(back.blob(), real.blob());
        Assert.assertTrue(back.isFromThisHost());
        Assert.assertEquals(IpcHandle.ofBlob(real.blob()).toBytes(), bytes, "one encoder");
    }

    @Test
    public void rejectsNullAndTruncated()
    {
        Assert.expectThrows(BadHandleException.class, () -> IpcHandle.fromBytes(null));
        final byte[] b = real.toBytes();
        for (int len = 0; len < b.length; len++)
        {
            assertNames(refusal(Arrays.copyOf(b, len)), len < IpcHandle.MIN_BYTES ? "truncated" : "length");
        }
    }

    @Test
    public void bitFlipsAreCaughtByTheCrc()
    {
        final byte[] b = real.toBytes();
        for (int bit = 0; bit < b.length * 8; bit++)
        {
            final byte[] c = b.clone();
            c[bit / 8] ^= (byte)(1 << (bit % 8));
            final String why = refusal(c);
            assertNames(why, bit < 32 ? "magic" : bit < 64 ? "version" : bit < 96 ? "platform" : "crc32");
        }
    }

    @Test
    public void rejectsWrongMagicAndVersion()
    {
        final byte[] b = real.toBytes();
        b[0] = 'X';
        assertNames(refusal(ForgedHandles.withCrc(b)), "magic");
        assertNames(refusal(withWord(ForgedHandles.MAGIC, 0x54453448)), "magic");  // the former Java envelope's
        assertNames(refusal(withWord(ForgedHandles.VERSION, 2)), "version");
        assertNames(refusal(withWord(ForgedHandles.VERSION, 0)), "version");
    }

    @Test
    public void rejectsBadFieldsUnderAValidCrc()
    {
        assertNames(refusal(withWord(ForgedHandles.PLATFORM, 7)), "platform");
        // A CUDA platform word on a host-length blob.
        assertNames(refusal(withWord(ForgedHandles.PLATFORM, 1)), "length");
        assertNames(refusal(withWord(ForgedHandles.PID, 0)), "pid");
        assertNames(refusal(withWord(ForgedHandles.PID, -1)), "pid");
        final byte[] zero = real.toBytes();
        ByteBuffer.wrap(zero).order(ByteOrder.LITTLE_ENDIAN).putLong(4 * ForgedHandles.SIZE_LO, 0);
        assertNames(refusal(ForgedHandles.withCrc(zero)), "size");
        assertNames(refusal(withWord(ForgedHandles.SIZE_HI, -1)), "size");
    }

    @Test
    public void rejectsOversizeAndExtended()
    {
        assertNames(refusal(new byte[IpcHandle.MAX_BYTES + 1]), "oversize");
        assertNames(refusal(new byte[1 << 20]), "oversize");
        // One word more than a host blob, CRC valid: the length does not fit the platform.
        final byte[] longer = IpcHandle.encodeBlob(Arrays.copyOf(real.blob(), ForgedHandles.INTS + 1));
        assertNames(refusal(longer), "length");
        // Not whole words.
        assertNames(refusal(Arrays.copyOf(real.toBytes(), real.toBytes().length + 1)), "length");
    }

    @Test
    public void foreignHostDecodesButIsNotImported()
    {
        final int[] blob = real.blob();
        blob[ForgedHandles.HOST_ID] ^= 1;
        final IpcHandle foreign = IpcHandle.ofBlob(blob);
        Assert.assertFalse(foreign.isFromThisHost());
        Assert.assertEquals(foreign.bufferSize(), SIZE);
        try (TransferEngine other = TransferEngine.builder().build())
        {
            final P2pTransport t = other.getOrCreateP2pTransport(2);
            final DeviceBuffer local = t.allocateBuffer(SIZE);
            assertNames(Assert.expectThrows(BadHandleException.class,
                () -> t.importPeerHandles(local, 1, Arrays.asList(foreign, null), 3)).getMessage(), "another host");
            // The bytes path refuses what the decoder refuses, naming the rank.
            final byte[] flipped = real.toBytes();
            flipped[20] ^= 1;
            final String why = Assert.expectThrows(BadHandleException.class,
                () -> t.importPeerHandleBytes(local, 1, Arrays.asList(flipped, null), 3)).getMessage();
            assertNames(why, "rank 0");
            assertNames(why, "crc32");
            t.importPeerHandleBytes(local, 1, Arrays.asList(real.toBytes(), null), 3).close();
        }
    }

    @Test
    public void randomBytesNeverDecode()
    {
        final Random rnd = new Random(7);
        for (int i = 0; i < 10_000; i++)
        {
            final byte[] junk = new byte[rnd.nextInt(200)];
            rnd.nextBytes(junk);
            if (junk.length >= 8 && rnd.nextBoolean())
            {
                // Right magic and version, so the decoder gets past its first checks.
                ByteBuffer.wrap(junk).order(ByteOrder.LITTLE_ENDIAN).putInt(IpcHandle.MAGIC).putInt(IpcHandle.VERSION);
            }
            Assert.expectThrows(BadHandleException.class, () -> IpcHandle.fromBytes(junk));
        }
    }
}
