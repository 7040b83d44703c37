package io.github.te4j.exchange;

import io.github.te4j.rendezvous.FileExchange;
import io.github.te4j.rendezvous.Rendezvous;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;

/**
 * Opens a handle exchange or a segment directory from an address ({@link ExchangeAddress}):
 * <ul>
 *   <li>{@code tcp://host:port} is the embedded {@link Rendezvous}: rank 0 listens on host:port.
 *       Options: {@code timeout} (collectives, default 60s), {@code connectTimeout} (default 60s),
 *       {@code bind} (rank 0's listening address, default the host), {@code session},
 *       {@code secret} (better given in the options map).</li>
 *   <li>{@code file:///directory} is the {@link FileExchange}. Options: {@code timeout},
 *       {@code session}, {@code poll} (longest pause between looks).</li>
 *   <li>{@code etcd://host:2379[,host:2379]/job} is etcd v3, implemented by the module
 *       {@code io.github.te4j:te4j-etcd}, found on the class path through {@link ServiceLoader};
 *       its options are listed there.</li>
 *   <li>{@code mem://name} is a segment directory inside this JVM ({@link InMemorySegmentDirectory});
 *       it has no handle exchange.</li>
 * </ul>
 *
 * @since 0.1
 */
public final class Exchanges
{
    /**
     * The artifact that brings the etcd scheme.
     *
     * @since 0.1
     */
    public static final String ETCD_ARTIFACT = "io.github.te4j:te4j-etcd";

    private static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(60);

    private Exchanges()
    {
    }

    /**
     * Joins a job as one rank.
     *
     * @param uri where the ranks meet
     * @param rank this process's rank
     * @param worldSize the number of ranks
     * @return the exchange, joined (tcp: rank 0 listening, the others connected)
     * @throws IllegalArgumentException on a malformed address or an unknown option
     * @throws io.github.te4j.UnavailableException when the scheme's module is not on the class path
     * @since 0.1
     */
    public static HandleExchange open(final String uri, final int rank, final int worldSize)
    {
        return open(uri, rank, worldSize, Map.of());
    }

    /**
     * Joins a job as one rank, with options that override the URI's.
     *
     * @param uri where the ranks meet
     * @param rank this process's rank
     * @param worldSize the number of ranks
     * @param options extra options (e.g. {@code password}, {@code secret}), overriding the URI's
     * @return the exchange, joined
     * @throws IllegalArgumentException when the URI is malformed, its options are unknown or bad, its scheme
     *     has no provider, or it is {@code mem://} (a directory only)
     * @since 0.1
     */
    public static HandleExchange open(final String uri, final int rank, final int worldSize,
        final Map<String, String> options)
    {
        final ExchangeAddress a = ExchangeAddress.parse(uri).withOptions(options);
        switch (a.scheme())
        {
            case "tcp":
                return openTcp(a, rank, worldSize);
            case "file":
                return openFile(a, rank, worldSize);
            case "mem":
                throw new IllegalArgumentException("mem:// is a segment directory only; a handle exchange needs "
                    + "tcp://, etcd:// or file://");
            default:
                return provider(a.scheme()).openExchange(a, rank, worldSize);
        }
    }

    /**
     * Joins the job that the launcher's environment describes ({@link LaunchEnvironment#rendezvous()}).
     *
     * @param env the ranks as the launcher set them
     * @return the exchange, joined
     * @throws IllegalArgumentException when the environment names no rendezvous
     * @since 0.1
     */
    public static HandleExchange open(final LaunchEnvironment env)
    {
        Checks.notNull(env, "env");
        final String uri = env.rendezvous().orElseThrow(() -> new IllegalArgumentException(
            "the environment names no rendezvous (launcher " + env.launcher() + "): set "
                + LaunchEnvironment.TE4J_RENDEZVOUS + " to tcp://host:port, etcd://host:2379/job or file:///dir"));
        return open(uri, env.rank(), env.worldSize());
    }

    /**
     * Opens a segment directory.
     *
     * @param uri {@code etcd://host:2379/job} (te4j-etcd) or {@code mem://name}
     * @param options extra options, overriding the URI's
     * @return the directory
     * @throws IllegalArgumentException when the URI is malformed, its options are unknown or bad, its scheme
     *     has no provider, or it is {@code tcp://} or {@code file://} (exchanges only)
     * @since 0.1
     */
    public static SegmentDirectory openDirectory(final String uri, final Map<String, String> options)
    {
        final ExchangeAddress a = ExchangeAddress.parse(uri).withOptions(options);
        switch (a.scheme())
        {
            case "mem":
                a.checkOptions("maxDescriptorBytes");
                return InMemorySegmentDirectory.open(a.path(),
                    a.intNumber("maxDescriptorBytes", InMemorySegmentDirectory.DEFAULT_MAX_DESCRIPTOR_BYTES, 0));
            case "tcp":
            case "file":
                throw new IllegalArgumentException(a.scheme() + ":// has no segment directory; use etcd://host:2379/job "
                    + "across hosts or mem://name inside one JVM");
            default:
                return provider(a.scheme()).openDirectory(a);
        }
    }

    /**
     * {@link #openDirectory(String, Map)} without extra options.
     *
     * @param uri see {@link #openDirectory(String, Map)}
     * @return the directory
     * @since 0.1
     */
    public static SegmentDirectory openDirectory(final String uri)
    {
        return openDirectory(uri, Map.of());
    }

    /**
     * @param scheme a URI scheme
     * @return the provider of that scheme on the class path
     * @throws io.github.te4j.UnavailableException naming the artifact to add when there is none
     */
    static ExchangeProvider provider(final String scheme)
    {
        final List<String> found = new ArrayList<>();
        for (final ExchangeProvider p : ServiceLoader.load(ExchangeProvider.class, Exchanges.class.getClassLoader()))
        {
            if (p.scheme().equals(scheme))
            {
                return p;
            }
            found.add(p.scheme());
        }
        final String add = scheme.equals("etcd") ? "add " + ETCD_ARTIFACT + " to the class path"
            : "add the module that implements it to the class path";
        throw new io.github.te4j.UnavailableException("exchange scheme " + scheme + "://: no implementation on the "
            + "class path (providers found: " + found + "); " + add);
    }

    private static HandleExchange openTcp(final ExchangeAddress a, final int rank, final int worldSize)
    {
        a.checkOptions("timeout", "connectTimeout", "bind", "session", "secret");
        final Rendezvous.Builder b = Rendezvous.builder().rank(rank).worldSize(worldSize)
            .endpoint(a.endpoints().get(0))
            .defaultTimeout(a.duration("timeout", DEFAULT_TIMEOUT))
            .connectTimeout(a.duration("connectTimeout", DEFAULT_TIMEOUT));
        final String host = a.endpoints().get(0).substring(0, a.endpoints().get(0).lastIndexOf(':'));
        b.bindAddress(a.options().getOrDefault("bind", host.startsWith("[") ? host.substring(1, host.length() - 1) : host));
        if (a.options().containsKey("session"))
        {
            b.session(a.options().get("session"));
        }
        if (a.options().containsKey("secret"))
        {
            b.secret(a.options().get("secret"));
        }
        return b.build();
    }

    private static HandleExchange openFile(final ExchangeAddress a, final int rank, final int worldSize)
    {
        a.checkOptions("timeout", "session", "poll");
        final FileExchange.Builder b = FileExchange.builder().directory(Path.of(a.path())).rank(rank)
            .worldSize(worldSize).defaultTimeout(a.duration("timeout", DEFAULT_TIMEOUT));
        if (a.options().containsKey("session"))
        {
            b.session(a.options().get("session"));
        }
        if (a.options().containsKey("poll"))
        {
            b.pollInterval(a.duration("poll", Duration.ofMillis(50)));
        }
        return b.build();
    }
}
