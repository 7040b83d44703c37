package io.github.te4j.bench;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;

/**
 * Message sizes: parsing ({@code 8}, {@code 4K}, {@code 64KiB}, {@code 1M}, {@code 1G}; powers of
 * 1024), sweeps ({@code min:max}, powers of two) and printing.
 */
public final class Sizes
{
    /** Smallest size a run accepts: one 8-byte word. */
    public static final long MIN_BYTES = 8;
    /** Largest size a run accepts: 1 GiB. */
    public static final long MAX_BYTES = 1L << 30;

    private Sizes()
    {
    }

    /** Parses one size: digits with an optional K, M or G suffix (optionally followed by B or iB). */
    public static long parse(final String text)
    {
        final String t = text.trim().toUpperCase(Locale.ROOT);
        if (t.isEmpty())
        {
            throw new IllegalArgumentException("empty size");
        }
        String digits = t;
        long unit = 1;
        for (final String suffix : new String[] {"KIB", "MIB", "GIB", "KB", "MB", "GB", "K", "M", "G", "B"})
        {
            if (t.endsWith(suffix))
            {
                digits = t.substring(0, t.length() - suffix.length());
                unit = suffix.startsWith("K") ? 1L << 10 : suffix.startsWith("M") ? 1L << 20
                    : suffix.startsWith("G") ? 1L << 30 : 1;
                break;
            }
        }
        final long value;
        try
        {
            value = Long.parseLong(digits.trim());
        }
        catch (final NumberFormatException e)
        {
            throw new IllegalArgumentException("bad size '" + text + "' (examples: 8, 4K, 1M, 1G)");
        }
        if (value <= 0 || value > MAX_BYTES / unit)
        {
            throw new IllegalArgumentException("size '" + text + "' outside " + format(MIN_BYTES) + " .. "
                + format(MAX_BYTES));
        }
        return check(value * unit, text);
    }

    /**
     * Parses one size as {@link #parse} does, but up to {@code max} (a pool may exceed a
     * message's 1 GiB): digits with an optional K, M or G suffix, a multiple of 8 bytes.
     */
    public static long parseLarge(final String text, final long max)
    {
        final String t = text.trim().toUpperCase(Locale.ROOT);
        final char last = t.isEmpty() ? ' ' : t.charAt(t.length() - 1);
        final int shift = last == 'K' ? 10 : last == 'M' ? 20 : last == 'G' ? 30 : 0;
        final long value;
        try
        {
            value = Long.parseLong(shift == 0 ? t : t.substring(0, t.length() - 1));
        }
        catch (final NumberFormatException e)
        {
            throw new IllegalArgumentException("bad size '" + text + "' (examples: 64M, 4G)");
        }
        if (value <= 0 || value > max >> shift || (value << shift) % 8 != 0)
        {
            throw new IllegalArgumentException("size '" + text + "' must be a multiple of 8 bytes from 8 B to "
                + format(max));
        }
        return value << shift;
    }

    /** Parses a comma-separated list of sizes; keeps the given order, drops duplicates. */
    public static List<Long> parseList(final String text)
    {
        final List<Long> out = new ArrayList<>();
        for (final String part : text.split(","))
        {
            final long v = parse(part);
            if (!out.contains(v))
            {
                out.add(v);
            }
        }
        return Collections.unmodifiableList(out);
    }

    /** Parses {@code min:max} into every power of two from min to max (both powers of two). */
    public static List<Long> parseSweep(final String text)
    {
        final int colon = text.indexOf(':');
        if (colon < 0)
        {
            throw new IllegalArgumentException("bad sweep '" + text + "' (expected min:max, e.g. 8:1G)");
        }
        final long min = parse(text.substring(0, colon));
        final long max = parse(text.substring(colon + 1));
        if (Long.bitCount(min) != 1 || Long.bitCount(max) != 1)
        {
            throw new IllegalArgumentException("sweep '" + text + "': min and max must be powers of two");
        }
        if (min > max)
        {
            throw new IllegalArgumentException("sweep '" + text + "': min is larger than max");
        }
        final List<Long> out = new ArrayList<>();
        for (long s = min; s <= max; s <<= 1)
        {
            out.add(s);
        }
        return Collections.unmodifiableList(out);
    }

    private static long check(final long bytes, final String text)
    {
        if (bytes < MIN_BYTES || bytes > MAX_BYTES)
        {
            throw new IllegalArgumentException("size '" + text + "' outside " + format(MIN_BYTES) + " .. "
                + format(MAX_BYTES));
        }
        if (bytes % 8 != 0)
        {
            throw new IllegalArgumentException("size '" + text + "' is not a multiple of 8 bytes");
        }
        return bytes;
    }

    /** Human form: {@code 8 B}, {@code 4 KiB}, {@code 1.5 MiB}, {@code 1 GiB}. */
    public static String format(final long bytes)
    {
        final String[] units = {"GiB", "MiB", "KiB"};
        for (int i = 0; i < units.length; i++)
        {
            final long unit = 1L << (10 * (3 - i));
            if (bytes >= unit)
            {
                return bytes % unit == 0 ? bytes / unit + " " + units[i]
                    : String.format(Locale.ROOT, "%.1f %s", (double)bytes / unit, units[i]);
            }
        }
        return bytes + " B";
    }

    /** Compact form for command lines: {@code 8}, {@code 4K}, {@code 1M}, {@code 1G}. */
    public static String compact(final long bytes)
    {
        if (bytes % (1L << 30) == 0)
        {
            return (bytes >> 30) + "G";
        }
        if (bytes % (1L << 20) == 0)
        {
            return (bytes >> 20) + "M";
        }
        if (bytes % (1L << 10) == 0)
        {
            return (bytes >> 10) + "K";
        }
        return String.valueOf(bytes);
    }
}
