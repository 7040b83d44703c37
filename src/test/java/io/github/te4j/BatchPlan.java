package io.github.te4j;

import io.github.te4j.check.Patterns;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;

/**
 * A seeded random batch for the transfer-batch tests: requests whose remote ranges are disjoint
 * and whose local ranges are disjoint, placed inside areas of {@code areaBytes}, READ and WRITE
 * mixed, lengths from 1 B to {@code maxLength}. Both ends of a transfer can rebuild the same plan
 * from the seed, so a receiver knows what must have landed and where.
 */
final class BatchPlan
{
    /** One planned request: offsets are relative to the local and remote areas. */
    static final class Item
    {
        final TransferOpcode opcode;
        final long localOffset;
        final long remoteOffset;
        final long length;

        Item(final TransferOpcode opcode, final long localOffset, final long remoteOffset, final long length)
        {
            this.opcode = opcode;
            this.localOffset = localOffset;
            this.remoteOffset = remoteOffset;
            this.length = length;
        }
    }

    private BatchPlan()
    {
    }

    static List<Item> make(final long seed, final int count, final long areaBytes, final long maxLength)
    {
        final Random rnd = new Random(seed);
        final long[] lengths = new long[count];
        long total = 0;
        for (int i = 0; i < count; i++)
        {
            final int kind = rnd.nextInt(10);
            final long cap = Math.max(1, Math.min(maxLength, areaBytes / count));
            final long len = kind < 4 ? 1 + rnd.nextInt(4096)
                : kind < 8 ? 4096 + rnd.nextInt(256 * 1024 - 4096)
                : 256 * 1024 + (long) (rnd.nextDouble() * Math.max(1, maxLength - 256 * 1024));
            lengths[i] = Math.max(1, Math.min(len, i == 0 ? maxLength : cap));
            total += lengths[i];
        }
        if (total > areaBytes)
        {
            throw new IllegalArgumentException("plan of " + total + " B does not fit " + areaBytes + " B");
        }
        final long[] remote = place(rnd, lengths, areaBytes - total, identity(count));
        final List<Integer> order = identity(count);
        Collections.shuffle(order, rnd);
        final long[] local = place(rnd, lengths, areaBytes - total, order);
        final List<Item> items = new ArrayList<>();
        for (int i = 0; i < count; i++)
        {
            items.add(new Item(rnd.nextBoolean() ? TransferOpcode.READ : TransferOpcode.WRITE, local[i], remote[i],
                lengths[i]));
        }
        return items;
    }

    private static List<Integer> identity(final int n)
    {
        final List<Integer> l = new ArrayList<>();
        for (int i = 0; i < n; i++)
        {
            l.add(i);
        }
        return l;
    }

    /** Offsets of the pieces laid out in {@code order} with random gaps that add up to at most {@code slack}. */
    private static long[] place(final Random rnd, final long[] lengths, final long slack, final List<Integer> order)
    {
        final long[] at = new long[lengths.length];
        long pos = 0;
        long left = slack;
        for (final int i : order)
        {
            final long gap = left == 0 ? 0 : (long) (rnd.nextDouble() * Math.min(left, 2L * slack / lengths.length + 1));
            pos += gap;
            left -= gap;
            at[i] = pos;
            pos += lengths[i];
        }
        return at;
    }

    /** The bytes of pattern {@code seed} at positions [position, position + length). */
    static byte[] pattern(final long seed, final long position, final int length)
    {
        final byte[] b = new byte[length];
        Patterns.fill(b, length, seed, position);
        return b;
    }

    /**
     * Checks {@code image} (a copy of an area, from {@code base}) against what the requests of
     * {@code opcode} in {@code items} must have put there: pattern {@code seed} at each request's
     * source offset, poison everywhere else. Returns null or the first mismatch.
     */
    static String verifyArea(final byte[] image, final List<Item> items, final TransferOpcode opcode,
        final boolean destinationIsLocal, final long seed, final long sourceBase)
    {
        final byte[] want = new byte[image.length];
        java.util.Arrays.fill(want, Patterns.POISON);
        for (int i = 0; i < items.size(); i++)
        {
            final Item it = items.get(i);
            if (it.opcode != opcode)
            {
                continue;
            }
            final long dst = destinationIsLocal ? it.localOffset : it.remoteOffset;
            final long src = destinationIsLocal ? it.remoteOffset : it.localOffset;
            final byte[] p = pattern(seed, sourceBase + src, (int) it.length);
            System.arraycopy(p, 0, want, (int) dst, p.length);
        }
        for (int i = 0; i < image.length; i++)
        {
            if (image[i] != want[i])
            {
                return "byte " + i + " of the area: expected " + (want[i] & 0xff) + " got " + (image[i] & 0xff)
                    + (image[i] == Patterns.POISON ? " (poison: never written)" : "")
                    + (want[i] == Patterns.POISON ? " (should be untouched)" : "");
            }
        }
        return null;
    }
}
