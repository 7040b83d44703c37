package io.github.te4j.exchange;

import java.time.Duration;

/**
 * te4j's one rule for turning a timeout into time, for the library and for
 * {@link ExchangeProvider}s alike: conversions saturate instead of throwing (a timeout of
 * {@code Duration.ofSeconds(Long.MAX_VALUE)} means "practically forever", {@link #FOREVER}), and a
 * call that takes several steps takes one deadline and gives each step only the time left.
 *
 * <pre>{@code
 * Deadline d = Deadline.after(timeout);
 * List<byte[]> all = exchange.allGather(mine, d.left());
 * exchange.barrier(d.left());              // what the gather left, not the whole timeout again
 * }</pre>
 *
 * <p>Immutable and thread-safe. Measured on {@link System#nanoTime()}.
 *
 * @since 0.1
 */
public final class Deadline
{
    /**
     * The longest time te4j measures, about 73 years: any longer timeout is this. A quarter of
     * the nanoTime range, so {@code nanoTime() + FOREVER} and differences of such deadlines
     * cannot overflow.
     *
     * @since 0.1
     */
    public static final Duration FOREVER = Duration.ofNanos(Long.MAX_VALUE / 4);

    private static final long FOREVER_NANOS = Long.MAX_VALUE / 4;

    private final long at;

    private Deadline(final long at)
    {
        this.at = at;
    }

    /**
     * The deadline {@code timeout} from now.
     *
     * @param timeout non-negative (checked by the caller, whose parameter it is); longer than
     *                {@link #FOREVER} counts as {@link #FOREVER}
     * @return the deadline {@code timeout} from now
     * @since 0.1
     */
    public static Deadline after(final Duration timeout)
    {
        return new Deadline(System.nanoTime() + toNanos(timeout));
    }

    /**
     * A timeout in nanoseconds, capped at {@link #FOREVER} so that no arithmetic on it overflows.
     *
     * @param timeout the duration; negative counts as 0
     * @return {@code timeout} in nanoseconds, in [0, FOREVER]: never throws for a long timeout
     *
     * @throws IllegalArgumentException when {@code timeout} is null
     * @since 0.1
     */
    public static long toNanos(final Duration timeout)
    {
        if (Checks.notNull(timeout, "timeout").isNegative())
        {
            return 0;
        }
        if (timeout.compareTo(FOREVER) >= 0)
        {
            return FOREVER_NANOS;
        }
        return timeout.toNanos();
    }

    /**
     * A timeout in milliseconds, rounded up so that a wait is never shorter than asked for.
     *
     * @param timeout the duration; negative counts as 0
     * @return {@code timeout} in milliseconds, rounded up, in [0, FOREVER]: never throws
     *
     * @throws IllegalArgumentException when {@code timeout} is null
     * @since 0.1
     */
    public static long toMillis(final Duration timeout)
    {
        final long nanos = toNanos(timeout);
        return nanos / 1_000_000 + (nanos % 1_000_000 == 0 ? 0 : 1);
    }

    /**
     * The time left until this deadline.
     *
     * @return the nanoseconds left, 0 or less once passed
     * @since 0.1
     */
    public long nanosLeft()
    {
        return at - System.nanoTime();
    }

    /**
     * Whether this deadline has passed.
     *
     * @return whether the deadline has passed
     * @since 0.1
     */
    public boolean passed()
    {
        return nanosLeft() <= 0;
    }

    /**
     * The timeout to give the next step: the time left, and at least one nanosecond once it has
     * passed, so that the step fails at once with its own timeout exception (which names what it
     * waited for) rather than with an argument error for a zero timeout.
     *
     * @return the time left, at least 1 ns
     * @since 0.1
     */
    public Duration left()
    {
        return Duration.ofNanos(Math.max(1, nanosLeft()));
    }

    /**
     * This deadline as a {@link System#nanoTime()} value.
     *
     * @return the deadline on {@link System#nanoTime()}
     * @since 0.1
     */
    public long nanoTime()
    {
        return at;
    }

    @Override
    public String toString()
    {
        final long left = nanosLeft();
        return left <= 0 ? "Deadline[passed " + (-left / 1_000_000) + " ms ago]" : "Deadline[" + left / 1_000_000
            + " ms left]";
    }
}
