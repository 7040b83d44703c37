package io.github.te4j.etcd;

import io.github.te4j.exchange.ExchangeAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.regex.Pattern;

/**
 * How to reach etcd and how a job lives there; read from an {@code etcd://} address's options:
 * <table>
 *   <caption>options</caption>
 *   <tr><td>ttl</td><td>lease TTL, 2s..300s (default 10s): a rank gone this long is lost</td></tr>
 *   <tr><td>timeout</td><td>default limit of a collective (default 60s)</td></tr>
 *   <tr><td>connectTimeout</td><td>limit of joining: reaching etcd, granting the lease, claiming the rank (default 30s)</td></tr>
 *   <tr><td>generation</td><td>restart count of the job; ranks of different generations refuse each other (default 0)</td></tr>
 *   <tr><td>poll</td><td>longest pause between two looks at etcd while waiting (default 20ms)</td></tr>
 *   <tr><td>maxBlobBytes</td><td>largest blob or descriptor (default 1 MiB; etcd's default request limit is 1.5 MiB)</td></tr>
 *   <tr><td>user, password</td><td>etcd authentication, passed to jetcd</td></tr>
 *   <tr><td>tls</td><td>{@code true}: connect with TLS (implied by cacert)</td></tr>
 *   <tr><td>cacert, cert, key</td><td>PEM files: the CA that signed etcd's certificate, and this client's
 *       certificate and PKCS#8 key</td></tr>
 *   <tr><td>authority</td><td>the TLS server name to expect, when it is not the endpoint's host</td></tr>
 * </table>
 *
 * @param endpoints host:port of etcd members
 * @param job the job's name, the last element of its key prefix
 * @param ttl the lease TTL
 * @param defaultTimeout the limit of collectives called without one
 * @param connectTimeout the limit of joining
 * @param generation the job's restart count
 * @param pollInterval the longest pause between looks while waiting
 * @param maxBlobBytes the largest blob accepted or sent
 * @param user the etcd user, or null
 * @param password the etcd password, or null
 * @param tls whether to use TLS
 * @param caCert the CA certificate file, or null for the JVM's trust store
 * @param cert the client certificate file, or null
 * @param key the client key file, or null
 * @param authority the expected TLS server name, or null
 */
public record EtcdSettings(List<String> endpoints, String job, Duration ttl, Duration defaultTimeout,
                           Duration connectTimeout, long generation, Duration pollInterval, int maxBlobBytes,
                           String user, String password, boolean tls, Path caCert, Path cert, Path key,
                           String authority)
{
    /** The root of every te4j key; a job's keys live under {@code /te4j/jobs/<job>/}. */
    public static final String ROOT = "/te4j/jobs/";

    /** What a job name may be. */
    public static final Pattern JOB = Pattern.compile("[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}");

    /** The options an etcd address accepts. */
    static final String[] OPTIONS = {"ttl", "timeout", "connectTimeout", "generation", "poll", "maxBlobBytes", "user",
        "password", "tls", "cacert", "cert", "key", "authority"};

    /** Checks every field. */
    public EtcdSettings
    {
        endpoints = List.copyOf(endpoints);
        if (endpoints.isEmpty())
        {
            throw new IllegalArgumentException("at least one etcd endpoint is required");
        }
        if (job == null)
        {
            throw new IllegalArgumentException("job is null");
        }
        if (!JOB.matcher(job).matches())
        {
            throw new IllegalArgumentException("etcd job name must match " + JOB + ": '" + job + "'");
        }
        if (ttl.compareTo(Duration.ofSeconds(2)) < 0 || ttl.compareTo(Duration.ofSeconds(300)) > 0
            || ttl.toMillis() % 1000 != 0)
        {
            // etcd grants whole seconds and refuses TTLs below about 2 s (its minimum is 1.5 election timeouts).
            throw new IllegalArgumentException("ttl must be whole seconds in 2s..300s: " + ttl);
        }
        positive(defaultTimeout, "timeout");
        positive(connectTimeout, "connectTimeout");
        positive(pollInterval, "poll");
        if (generation < 0)
        {
            throw new IllegalArgumentException("generation must not be negative: " + generation);
        }
        if (maxBlobBytes < 0 || maxBlobBytes > (2 << 20))
        {
            throw new IllegalArgumentException("maxBlobBytes must be 0..2 MiB (etcd refuses larger requests): "
                + maxBlobBytes);
        }
        if ((user == null) != (password == null))
        {
            throw new IllegalArgumentException("etcd user and password go together: give both or neither");
        }
        for (final Path p : new Path[] {caCert, cert, key})
        {
            if (p != null && !Files.isReadable(p))
            {
                throw new IllegalArgumentException("cannot read " + p);
            }
        }
        if ((cert == null) != (key == null))
        {
            throw new IllegalArgumentException("the client cert and key go together: give both or neither");
        }
        tls = tls || caCert != null || cert != null;
    }

    /**
     * @param a an {@code etcd://} address
     * @return its settings
     * @throws IllegalArgumentException on an unknown or malformed option
     */
    public static EtcdSettings of(final ExchangeAddress a)
    {
        if (!a.scheme().equals("etcd"))
        {
            throw new IllegalArgumentException("not an etcd address: " + a);
        }
        a.checkOptions(OPTIONS);
        final String tls = a.options().getOrDefault("tls", "false");
        if (!tls.equals("true") && !tls.equals("false"))
        {
            throw new IllegalArgumentException("option tls must be true or false: '" + tls + "'");
        }
        return new EtcdSettings(a.endpoints(), a.path(), a.duration("ttl", Duration.ofSeconds(10)),
            a.duration("timeout", Duration.ofSeconds(60)), a.duration("connectTimeout", Duration.ofSeconds(30)),
            a.number("generation", 0), a.duration("poll", Duration.ofMillis(20)),
            a.intNumber("maxBlobBytes", 1 << 20, 0), a.options().get("user"), a.options().get("password"),
            tls.equals("true"), path(a, "cacert"), path(a, "cert"), path(a, "key"), a.options().get("authority"));
    }

    /** @return the job's key prefix, ending in '/' */
    public String prefix()
    {
        return ROOT + job + "/";
    }

    /** @return the endpoints as jetcd wants them, with their scheme */
    String[] targets()
    {
        return endpoints.stream().map(e -> (tls ? "https://" : "http://") + e).toArray(String[]::new);
    }

    @Override
    public String toString()
    {
        // never the password
        return "etcd://" + String.join(",", endpoints) + "/" + job + " (ttl " + ttl.toSeconds() + "s, generation "
            + generation + (tls ? ", TLS" : "") + (user != null ? ", user " + user : "") + ")";
    }

    private static Path path(final ExchangeAddress a, final String key)
    {
        final String v = a.options().get(key);
        return v == null ? null : Path.of(v);
    }

    private static void positive(final Duration d, final String what)
    {
        if (d == null)
        {
            throw new IllegalArgumentException(what + " is null");
        }
        if (d.isNegative() || d.isZero())
        {
            throw new IllegalArgumentException(what + " must be positive: " + d);
        }
    }
}
