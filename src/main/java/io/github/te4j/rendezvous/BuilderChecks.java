package io.github.te4j.rendezvous;

import java.time.Duration;

/** The argument checks the classes of this package share, with the same messages in each. */
final class BuilderChecks
{
    private BuilderChecks()
    {
    }

    /**
     * @param d    a timeout or interval
     * @param what the builder method's name, for the messages
     * @return d, checked to be positive
     */
    static Duration positive(final Duration d, final String what)
    {
        notNull(d, what);
        if (d.isNegative() || d.isZero())
        {
            throw new IllegalArgumentException(what + " must be positive: " + d);
        }
        return d;
    }

    /**
     * The null rule of this package (package-info): a null argument is an IllegalArgumentException naming it.
     *
     * @return {@code value}, when it is not null
     */
    static <T> T notNull(final T value, final String name)
    {
        if (value == null)
        {
            throw new IllegalArgumentException(name + " is null");
        }
        return value;
    }

    /**
     * Checks a world of 1..{@value Rendezvous#MAX_WORLD_SIZE} ranks and a rank inside it.
     *
     * @param rank      this process's rank
     * @param worldSize number of ranks
     */
    static void rankInWorld(final int rank, final int worldSize)
    {
        if (worldSize < 1 || worldSize > Rendezvous.MAX_WORLD_SIZE)
        {
            throw new IllegalArgumentException("worldSize must be 1.." + Rendezvous.MAX_WORLD_SIZE + ": " + worldSize);
        }
        if (rank < 0 || rank >= worldSize)
        {
            throw new IllegalArgumentException("rank " + rank + " out of range 0.." + (worldSize - 1));
        }
    }
}
