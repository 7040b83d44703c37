package io.github.te4j;

/**
 * The tests' name for {@link io.github.te4j.launcher.VethPair}: two network namespaces joined by a
 * veth pair, made where this runs as root with iproute2 (else {@link #create()} skips the test).
 */
final class VethPair implements AutoCloseable
{
    private final io.github.te4j.launcher.VethPair pair;

    private VethPair(final io.github.te4j.launcher.VethPair pair)
    {
        this.pair = pair;
    }

    static VethPair create()
    {
        return new VethPair(io.github.te4j.launcher.VethPair.create());
    }

    String namespace(final int rank)
    {
        return pair.namespace(rank);
    }

    String address(final int rank)
    {
        return pair.address(rank);
    }

    /** Takes rank's end of the pair down: from then on nothing reaches or leaves its namespace. */
    boolean linkDown(final int rank)
    {
        return pair.linkDown(rank);
    }

    @Override
    public void close()
    {
        pair.close();
    }
}
