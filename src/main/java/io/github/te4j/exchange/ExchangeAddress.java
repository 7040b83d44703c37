package io.github.te4j.exchange;

import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Where a job's ranks meet, parsed from a URI:
 * <pre>
 *   tcp://host:port[?options]                    the embedded rendezvous, rank 0 listens on host:port
 *   etcd://host:2379[,host2:2379...]/job[?options] etcd v3 (the te4j-etcd module), keys under the job
 *   file:///directory[?options]                  a directory all ranks share
 *   mem://name                                   a segment directory inside this JVM
 * </pre>
 * Options are {@code key=value} pairs after {@code ?}, joined by {@code &} and percent-decoded;
 * the scheme's implementation says which it knows and refuses the others. Secrets (passwords,
 * shared secrets) are better given through {@link Exchanges}' options map than in a URI that
 * ends up in logs; {@link #toString()} leaves the options out for that reason.
 *
 * @param scheme the scheme, lower case
 * @param endpoints the {@code host:port} endpoints (tcp, etcd); empty for the others
 * @param path the path without its leading slash (the etcd job, the file directory as absolute
 *             path, the mem name)
 * @param options the options, sorted by key
 * @since 0.1
 */
public record ExchangeAddress(String scheme, List<String> endpoints, String path, Map<String, String> options)
{
    private static final Pattern FORM = Pattern.compile("([A-Za-z][A-Za-z0-9+.-]*)://([^/?]*)(/[^?]*)?(?:\\?(.*))?");
    private static final Pattern HOST_PORT = Pattern.compile("(\\[[0-9A-Fa-f:.]+]|[A-Za-z0-9.-]+):([0-9]{1,5})");

    /**
     * Copies the lists and maps.
     *
     * @param scheme the scheme, lower case
     * @param endpoints the {@code host:port} endpoints (tcp, etcd); empty for the others
     * @param path the path without its leading slash (the etcd job, the file directory as absolute
     *     path, the mem name)
     * @param options the options, sorted by key
     * @since 0.1
     */
    public ExchangeAddress
    {
        Checks.notNull(scheme, "scheme");
        endpoints = List.copyOf(checkNoNulls(Checks.notNull(endpoints, "endpoints"), "endpoints"));
        path = path == null ? "" : path;
        options = Collections.unmodifiableMap(new TreeMap<>(checkNoNulls(Checks.notNull(options, "options"))));
    }

    /**
     * Parses an address.
     *
     * @param uri the address, e.g. {@code etcd://10.0.0.1:2379,10.0.0.2:2379/train-42?ttl=5s}
     * @return the parsed address
     * @throws IllegalArgumentException naming what is wrong with it
     * @since 0.1
     */
    public static ExchangeAddress parse(final String uri)
    {
        Checks.notNull(uri, "uri");
        final Matcher m = FORM.matcher(uri.trim());
        if (!m.matches())
        {
            throw new IllegalArgumentException("not an exchange address: '" + uri
                + "' (expected tcp://host:port, etcd://host:port[,host:port]/job, file:///directory or mem://name)");
        }
        final String scheme = m.group(1).toLowerCase(Locale.ROOT);
        final String authority = m.group(2);
        final String rawPath = m.group(3) == null ? "" : m.group(3);
        final Map<String, String> options = parseOptions(m.group(4), uri);
        final List<String> endpoints = new ArrayList<>();
        final String path;
        switch (scheme)
        {
            case "tcp":
                endpoints.add(checkHostPort(authority, uri));
                if (!rawPath.isEmpty() && !rawPath.equals("/"))
                {
                    throw new IllegalArgumentException("tcp address takes no path: '" + uri + "'");
                }
                path = "";
                break;
            case "etcd":
                if (authority.isEmpty())
                {
                    throw new IllegalArgumentException("etcd address needs at least one host:port: '" + uri + "'");
                }
                for (final String e : authority.split(",", -1))
                {
                    endpoints.add(checkHostPort(e, uri));
                }
                path = decode(rawPath.startsWith("/") ? rawPath.substring(1) : rawPath);
                if (path.isEmpty())
                {
                    throw new IllegalArgumentException("etcd address needs a job name after the endpoints: '" + uri
                        + "' (etcd://host:2379/job)");
                }
                break;
            case "file":
                if (!authority.isEmpty() && !authority.equals("localhost"))
                {
                    throw new IllegalArgumentException("file address names a host ('" + authority
                        + "'); use file:///absolute/directory: '" + uri + "'");
                }
                path = decode(rawPath);
                if (path.isEmpty() || path.equals("/"))
                {
                    throw new IllegalArgumentException("file address needs a directory: '" + uri + "'");
                }
                break;
            case "mem":
                path = authority;
                if (!rawPath.isEmpty())
                {
                    throw new IllegalArgumentException("mem address is mem://name: '" + uri + "'");
                }
                SegmentDirectory.checkName(path);
                break;
            default:
                throw new IllegalArgumentException("unknown exchange scheme '" + scheme + "' in '" + uri
                    + "' (known: tcp, etcd, file, mem)");
        }
        return new ExchangeAddress(scheme, endpoints, path, options);
    }

    /**
     * This address with more options, which win over the URI's.
     *
     * @param extra options that override the URI's (e.g. a password kept out of the URI)
     * @return this address with {@code extra} merged into its options
     * @since 0.1
     */
    public ExchangeAddress withOptions(final Map<String, String> extra)
    {
        final Map<String, String> merged = new TreeMap<>(options);
        merged.putAll(checkNoNulls(Checks.notNull(extra, "options")));
        return new ExchangeAddress(scheme, endpoints, path, merged);
    }

    /**
     * Refuses options that the scheme does not know: a misspelt option must not be ignored.
     *
     * @param known the option names the scheme accepts
     * @throws IllegalArgumentException naming the unknown options and the known ones
     * @since 0.1
     */
    public void checkOptions(final String... known)
    {
        checkNoNulls(Arrays.asList(Checks.notNull(known, "known")), "known");
        final List<String> unknown = new ArrayList<>(options.keySet());
        unknown.removeAll(List.of(known));
        if (!unknown.isEmpty())
        {
            throw new IllegalArgumentException("unknown " + scheme + " option(s) " + unknown + "; known: "
                + List.of(known));
        }
    }

    /**
     * A duration option.
     *
     * @param key an option name
     * @param fallback the value when the option is absent
     * @return the option as a duration: {@code 500ms}, {@code 10s}, {@code 2m} or ISO-8601 ({@code PT10S})
     * @since 0.1
     */
    public Duration duration(final String key, final Duration fallback)
    {
        Checks.notNull(key, "key");
        final String v = options.get(key);
        if (v == null)
        {
            return fallback;
        }
        final Matcher m = Pattern.compile("([0-9]{1,9})(ms|s|m)").matcher(v);
        try
        {
            final Duration d;
            if (m.matches())
            {
                final long n = Long.parseLong(m.group(1));
                d = m.group(2).equals("ms") ? Duration.ofMillis(n) : m.group(2).equals("s") ? Duration.ofSeconds(n)
                    : Duration.ofMinutes(n);
            }
            else
            {
                d = Duration.parse(v);
            }
            if (d.isNegative() || d.isZero())
            {
                throw new IllegalArgumentException("option " + key + " must be positive: '" + v + "'");
            }
            return d;
        }
        catch (final DateTimeParseException e)
        {
            throw new IllegalArgumentException("option " + key + " is not a duration (500ms, 10s, 2m): '" + v + "'", e);
        }
    }

    /**
     * A numeric option.
     *
     * @param key an option name
     * @param fallback the value when the option is absent
     * @return the option as a long
     * @since 0.1
     */
    public long number(final String key, final long fallback)
    {
        Checks.notNull(key, "key");
        final String v = options.get(key);
        if (v == null)
        {
            return fallback;
        }
        try
        {
            return Long.parseLong(v);
        }
        catch (final NumberFormatException e)
        {
            throw new IllegalArgumentException("option " + key + " is not a number: '" + v + "'", e);
        }
    }

    /**
     * An option that sizes something in memory or counts: refused, not wrapped, when it is outside
     * what the int it configures can hold.
     *
     * @param key an option name
     * @param fallback the value when the option is absent
     * @param min the smallest value accepted
     * @return the option as an int in [min, Integer.MAX_VALUE]
     * @throws IllegalArgumentException when it is not a number or outside that range
     * @since 0.1
     */
    public int intNumber(final String key, final int fallback, final int min)
    {
        final long n = number(key, fallback);
        if (n < min || n > Integer.MAX_VALUE)
        {
            throw new IllegalArgumentException("option " + key + "=" + n + " is outside [" + min + ", "
                + Integer.MAX_VALUE + "]");
        }
        return (int) n;
    }

    @Override
    public String toString()
    {
        final String auth = String.join(",", endpoints);
        switch (scheme)
        {
            case "tcp":
                return "tcp://" + auth;
            case "etcd":
                return "etcd://" + auth + "/" + path;
            case "file":
                return "file://" + path;
            default:
                return scheme + "://" + path;
        }
    }

    private static Map<String, String> checkNoNulls(final Map<String, String> options)
    {
        for (final Map.Entry<String, String> e : options.entrySet())
        {
            Checks.notNull(e.getKey(), "an option's key");
            Checks.notNull(e.getValue(), "option " + e.getKey() + "'s value");
        }
        return options;
    }

    private static <T> List<T> checkNoNulls(final List<T> xs, final String name)
    {
        for (final T x : xs)
        {
            Checks.notNull(x, "an element of " + name);
        }
        return xs;
    }

    private static String checkHostPort(final String hostPort, final String uri)
    {
        final Matcher m = HOST_PORT.matcher(hostPort);
        if (!m.matches())
        {
            throw new IllegalArgumentException("endpoint '" + hostPort + "' is not host:port in '" + uri + "'");
        }
        final int port = Integer.parseInt(m.group(2));
        if (port < 1 || port > 65535)
        {
            throw new IllegalArgumentException("port " + port + " out of range 1..65535 in '" + uri + "'");
        }
        return hostPort;
    }

    private static Map<String, String> parseOptions(final String query, final String uri)
    {
        final Map<String, String> out = new TreeMap<>();
        if (query == null || query.isEmpty())
        {
            return out;
        }
        for (final String pair : query.split("&"))
        {
            final int eq = pair.indexOf('=');
            if (eq <= 0)
            {
                throw new IllegalArgumentException("option '" + pair + "' is not key=value in '" + uri + "'");
            }
            final String key = decode(pair.substring(0, eq));
            if (out.put(key, decode(pair.substring(eq + 1))) != null)
            {
                throw new IllegalArgumentException("option " + key + " given twice in '" + uri + "'");
            }
        }
        return out;
    }

    private static String decode(final String s)
    {
        return URLDecoder.decode(s.replace("+", "%2B"), StandardCharsets.UTF_8);
    }
}
