package io.github.te4j.etcd;

import io.github.te4j.exchange.Deadline;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.ClientBuilder;
import io.etcd.jetcd.lease.LeaseKeepAliveResponse;
import io.github.te4j.rendezvous.RendezvousException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One process's connection to etcd and its lease: everything it writes is bound to the lease, which
 * a thread of its own keeps alive every third of the TTL. When this process dies, hangs or loses
 * etcd for longer than the TTL, etcd drops the lease and with it the process's keys; when it
 * comes back it learns that here ({@link #leaseLost()}) and fails instead of carrying on as a
 * rank the others have already given up.
 *
 * <p>Every call has a deadline; a call that fails because etcd is unreachable is retried until
 * then, so a restart of etcd within the deadline is ridden out.
 */
final class EtcdSession implements AutoCloseable
{
    private static final Logger LOG = LoggerFactory.getLogger(EtcdSession.class);

    private final EtcdSettings settings;
    private final Client client;
    private final long lease;
    private final Thread keepAlive;
    private volatile String leaseLost;
    private volatile boolean closed;

    private EtcdSession(final EtcdSettings settings, final Client client, final long lease)
    {
        this.settings = settings;
        this.client = client;
        this.lease = lease;
        this.keepAlive = new Thread(this::keepAliveLoop, "te4j-etcd-lease-" + Long.toHexString(lease));
        keepAlive.setDaemon(true);
        keepAlive.start();
    }

    /**
     * Connects and grants the lease, within {@code settings.connectTimeout()}.
     *
     * @param settings where etcd is
     * @return the session
     * @throws RendezvousException when etcd cannot be reached or refuses
     */
    static EtcdSession open(final EtcdSettings settings)
    {
        final ClientBuilder b = Client.builder().endpoints(settings.targets())
            .connectTimeout(settings.connectTimeout());
        if (settings.user() != null)
        {
            b.user(bytes(settings.user())).password(bytes(settings.password()));
        }
        if (settings.authority() != null)
        {
            b.authority(settings.authority());
        }
        if (settings.tls())
        {
            try
            {
                b.sslContext(ssl ->
                {
                    if (settings.caCert() != null)
                    {
                        ssl.trustManager(settings.caCert().toFile());
                    }
                    if (settings.cert() != null)
                    {
                        ssl.keyManager(settings.cert().toFile(), settings.key().toFile());
                    }
                });
            }
            catch (final Exception e)
            {
                throw new RendezvousException(settings.toString(), "cannot set up TLS: " + e, e);
            }
        }
        final Client client = b.build();
        final long deadline = Deadline.after(settings.connectTimeout()).nanoTime();
        try
        {
            final long id = call(settings, client, "granting a lease of " + settings.ttl().toSeconds() + " s",
                () -> client.getLeaseClient().grant(settings.ttl().toSeconds()), deadline).getID();
            LOG.debug("etcd session {} lease {}", settings, Long.toHexString(id));
            return new EtcdSession(settings, client, id);
        }
        catch (final RuntimeException e)
        {
            client.close();
            throw e;
        }
    }

    /** @return the jetcd client */
    Client client()
    {
        return client;
    }

    /** @return this process's lease */
    long lease()
    {
        return lease;
    }

    /** @return the settings */
    EtcdSettings settings()
    {
        return settings;
    }

    /** @return why the lease is gone, or null while it lives */
    String leaseLost()
    {
        return leaseLost;
    }

    /**
     * Runs one etcd call with retries until the deadline.
     *
     * @param what names the call in errors
     * @param op starts the call
     * @param deadline {@link System#nanoTime()} by which it must complete
     * @return its result
     * @throws RendezvousException when the deadline passes or etcd refuses the call
     */
    <T> T call(final String what, final Supplier<CompletableFuture<T>> op, final long deadline)
    {
        return call(settings, client, what, op, deadline);
    }

    private static <T> T call(final EtcdSettings settings, final Client client, final String what,
        final Supplier<CompletableFuture<T>> op, final long deadline)
    {
        final long start = System.nanoTime();
        Throwable last = null;
        long backoff = TimeUnit.MILLISECONDS.toNanos(50);
        while (true)
        {
            final long left = deadline - System.nanoTime();
            if (left <= 0)
            {
                throw new RendezvousException("etcd " + String.join(",", settings.endpoints()), what
                    + " did not complete within " + Duration.ofNanos(System.nanoTime() - start).toMillis() + " ms: etcd "
                    + (last == null ? "did not answer" : "failed: " + describe(last))
                    + "; check that etcd runs and is reachable at " + settings.endpoints(), last);
            }
            final CompletableFuture<T> f;
            try
            {
                f = op.get();
            }
            catch (final RuntimeException e)
            {
                throw new RendezvousException("etcd " + String.join(",", settings.endpoints()), what + " could not start: "
                    + describe(e), e);
            }
            try
            {
                return f.get(left, TimeUnit.NANOSECONDS);
            }
            catch (final TimeoutException e)
            {
                f.cancel(true);
            }
            catch (final InterruptedException e)
            {
                f.cancel(true);
                Thread.currentThread().interrupt();
                throw new RendezvousException("etcd", "interrupted while " + what, e);
            }
            catch (final ExecutionException e)
            {
                last = e.getCause();
                if (!retryable(last))
                {
                    throw new RendezvousException("etcd " + String.join(",", settings.endpoints()), what
                        + " refused: " + describe(last), last);
                }
                LOG.debug("etcd {}: {} (retrying)", what, describe(last));
                sleep(Math.min(backoff, Math.max(0, deadline - System.nanoTime())));
                backoff = Math.min(backoff * 2, TimeUnit.MILLISECONDS.toNanos(500));
            }
        }
    }

    /** Unavailable, deadline or connection failures are worth retrying; refusals (auth, lease gone) are not. */
    static boolean retryable(final Throwable t)
    {
        final String s = describe(t);
        return !(s.contains("PERMISSION_DENIED") || s.contains("UNAUTHENTICATED") || s.contains("lease not found")
            || s.contains("INVALID_ARGUMENT") || s.contains("authentication failed") || s.contains("FAILED_PRECONDITION"));
    }

    static String describe(final Throwable t)
    {
        final StringBuilder sb = new StringBuilder();
        for (Throwable c = t; c != null && sb.length() < 400; c = c.getCause())
        {
            if (sb.length() > 0)
            {
                sb.append(" <- ");
            }
            sb.append(c.getClass().getSimpleName()).append(": ").append(c.getMessage());
        }
        return sb.toString();
    }

    /**
     * Stops keeping the lease alive and, when {@code revoke}, revokes it at once (its keys go now);
     * otherwise the lease runs out within the TTL.
     *
     * @param revoke whether to revoke
     */
    void close(final boolean revoke)
    {
        if (closed)
        {
            return;
        }
        closed = true;
        keepAlive.interrupt();
        if (revoke && leaseLost == null)
        {
            try
            {
                client.getLeaseClient().revoke(lease).get(2, TimeUnit.SECONDS);
            }
            catch (final Exception e)
            {
                LOG.debug("etcd: revoking lease {} failed ({}); it expires within {} s", Long.toHexString(lease),
                    describe(e), settings.ttl().toSeconds());
            }
        }
        client.close();
    }

    @Override
    public void close()
    {
        close(true);
    }

    private void keepAliveLoop()
    {
        final long period = Math.max(TimeUnit.MILLISECONDS.toNanos(300), settings.ttl().toNanos() / 3);
        long lastRenewed = System.nanoTime();
        while (!closed)
        {
            try
            {
                TimeUnit.NANOSECONDS.sleep(period);
            }
            catch (final InterruptedException e)
            {
                return;
            }
            try
            {
                final LeaseKeepAliveResponse r = client.getLeaseClient().keepAliveOnce(lease)
                    .get(settings.ttl().toNanos(), TimeUnit.NANOSECONDS);
                if (r.getTTL() <= 0)
                {
                    lost("etcd answered that lease " + Long.toHexString(lease) + " has expired");
                    return;
                }
                lastRenewed = System.nanoTime();
            }
            catch (final InterruptedException e)
            {
                return;
            }
            catch (final Exception e)
            {
                if (closed)
                {
                    return;
                }
                if (!retryable(e))
                {
                    lost("etcd refused to renew lease " + Long.toHexString(lease) + ": " + describe(e));
                    return;
                }
                LOG.debug("etcd: renewing lease {} failed: {}", Long.toHexString(lease), describe(e));
            }
            if (System.nanoTime() - lastRenewed > settings.ttl().toNanos() * 2)
            {
                // etcd itself may be down and extend leases when it returns; only etcd can say the
                // lease is gone, so this is a warning and the next renewal decides.
                LOG.warn("etcd: lease {} not renewed for {} s (TTL {} s)", Long.toHexString(lease),
                    TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - lastRenewed), settings.ttl().toSeconds());
            }
        }
    }

    private void lost(final String why)
    {
        leaseLost = why + ": this process was paused, hung or cut off from etcd for longer than the TTL of "
            + settings.ttl().toSeconds() + " s, and the other processes consider it lost";
        LOG.warn("etcd: {}", leaseLost);
    }

    private static void sleep(final long nanos)
    {
        try
        {
            TimeUnit.NANOSECONDS.sleep(nanos);
        }
        catch (final InterruptedException e)
        {
            Thread.currentThread().interrupt();
            throw new RendezvousException("etcd", "interrupted", e);
        }
    }

    static ByteSequence bytes(final String s)
    {
        return ByteSequence.from(s, StandardCharsets.UTF_8);
    }
}
