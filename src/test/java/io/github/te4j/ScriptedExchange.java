package io.github.te4j;

import io.github.te4j.exchange.HandleExchange;
import java.time.Duration;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

/**
 * A HandleExchange that lies: whatever a rank contributes, {@link #allGather} returns the blobs
 * it was made with (forged, null, too few or too many), and it claims any rank and world size.
 * Lets the fuzzer drive {@link RdmaTransport#connect} with damaged metadata lists in one process.
 */
final class ScriptedExchange implements HandleExchange
{
    private final int rank;
    private final int worldSize;
    private final List<byte[]> gathered;

    ScriptedExchange(final int rank, final int worldSize, final byte[]... gathered)
    {
        this.rank = rank;
        this.worldSize = worldSize;
        this.gathered = Collections.unmodifiableList(Arrays.asList(gathered));
    }

    @Override
    public int rank()
    {
        return rank;
    }

    @Override
    public int worldSize()
    {
        return worldSize;
    }

    @Override
    public Duration defaultTimeout()
    {
        return Duration.ofSeconds(5);
    }

    @Override
    public List<byte[]> allGather(final byte[] mine, final Duration timeout)
    {
        return gathered;
    }

    @Override
    public void barrier(final Duration timeout)
    {
        // every rank is "there": the lie is in the data
    }

    @Override
    public void close()
    {
    }
}
