package io.github.te4j.etcd;

import io.github.te4j.rendezvous.RendezvousException;
import java.util.concurrent.TimeUnit;

/** Sleeps that turn an interrupt into a {@link RendezvousException} and keep the interrupt flag. */
final class TimeUnitSleep
{
    private TimeUnitSleep()
    {
    }

    static void nanos(final long nanos)
    {
        try
        {
            TimeUnit.NANOSECONDS.sleep(nanos);
        }
        catch (final InterruptedException e)
        {
            Thread.currentThread().interrupt();
            throw new RendezvousException("etcd", "interrupted while waiting", e);
        }
    }
}
