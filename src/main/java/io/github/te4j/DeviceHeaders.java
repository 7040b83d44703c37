package io.github.te4j;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.JarURLConnection;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.HexFormat;
import java.util.List;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.stream.Stream;

/**
 * te4j's shipped device headers ({@code include/transport/device/...}) as a folder NVRTC can
 * read: the classpath folder itself, or, from a jar, a copy extracted once into a cache folder
 * named by the headers' hash (so jars of different versions never share a copy). The hash also
 * keys compiled images, so an image is recompiled when the headers change.
 */
final class DeviceHeaders
{
    /** Overrides where the headers are read from (a folder holding transport/device/). */
    static final String DIR_PROPERTY = "te4j.include.dir";
    /** Where headers extracted from a jar go; default: java.io.tmpdir/te4j-include-HASH. */
    static final String CACHE_PROPERTY = "te4j.include.cache";
    private static final String MARKER = "include/transport/device/comm_device.cuh";

    private static volatile DeviceHeaders instance;

    private final Path dir;
    private final String hash;

    private DeviceHeaders(final Path dir, final String hash)
    {
        this.dir = dir;
        this.hash = hash;
    }

    /** The headers, located (and extracted) on first use. */
    static DeviceHeaders get()
    {
        DeviceHeaders h = instance;
        if (h == null)
        {
            synchronized (DeviceHeaders.class)
            {
                h = instance;
                if (h == null)
                {
                    h = locate();
                    instance = h;
                }
            }
        }
        return h;
    }

    /** The folder to pass as {@code -I}. */
    Path dir()
    {
        return dir;
    }

    /** SHA-256 of every header's relative path and content. */
    String hash()
    {
        return hash;
    }

    private static DeviceHeaders locate()
    {
        try
        {
            final String configured = System.getProperty(DIR_PROPERTY);
            if (configured != null && !configured.isEmpty())
            {
                final Path d = Paths.get(configured);
                if (!Files.isRegularFile(d.resolve("transport/device/comm_device.cuh")))
                {
                    throw new UnavailableException("-D" + DIR_PROPERTY + "=" + configured
                        + " holds no transport/device/comm_device.cuh (fix: point it at te4j's include folder)");
                }
                return new DeviceHeaders(d, hashOf(d));
            }
            final URL url = DeviceHeaders.class.getClassLoader().getResource(MARKER);
            if (url == null)
            {
                throw new UnavailableException("te4j's device headers (" + MARKER + ") are not on the classpath "
                    + "(fix: use the te4j jar, or set -D" + DIR_PROPERTY + "=/path/to/include)");
            }
            if ("file".equals(url.getProtocol()))
            {
                final Path d = Paths.get(url.toURI()).getParent().getParent().getParent();
                return new DeviceHeaders(d, hashOf(d));
            }
            if ("jar".equals(url.getProtocol()))
            {
                return extract(((JarURLConnection) url.openConnection()).getJarFileURL());
            }
            throw new UnavailableException("te4j's device headers are at " + url + ", which NVRTC cannot read "
                + "(fix: set -D" + DIR_PROPERTY + "=/path/to/include)");
        }
        catch (final IOException e)
        {
            throw new UncheckedIOException("reading te4j's device headers: " + e.getMessage(), e);
        }
        catch (final URISyntaxException e)
        {
            throw new IllegalStateException(e);
        }
    }

    private static DeviceHeaders extract(final URL jarUrl) throws IOException
    {
        final Path jar;
        try
        {
            jar = Paths.get(jarUrl.toURI());
        }
        catch (final URISyntaxException e)
        {
            throw new IOException(e);
        }
        final MessageDigest md = sha256();
        final List<JarEntry> headers = new ArrayList<>();
        try (JarFile jf = new JarFile(jar.toFile()))
        {
            final Enumeration<JarEntry> entries = jf.entries();
            while (entries.hasMoreElements())
            {
                final JarEntry e = entries.nextElement();
                if (e.getName().startsWith("include/") && !e.isDirectory())
                {
                    headers.add(e);
                }
            }
            headers.sort((a, b) -> a.getName().compareTo(b.getName()));
            for (final JarEntry e : headers)
            {
                md.update(e.getName().substring("include/".length()).getBytes(java.nio.charset.StandardCharsets.UTF_8));
                try (InputStream in = jf.getInputStream(e))
                {
                    md.update(in.readAllBytes());
                }
            }
            final String hash = HexFormat.of().formatHex(md.digest());
            final String base = System.getProperty(CACHE_PROPERTY, System.getProperty("java.io.tmpdir"));
            final Path dir = Paths.get(base).resolve("te4j-include-" + hash.substring(0, 16));
            if (!Files.isRegularFile(dir.resolve(".complete")))
            {
                // Extracted to a private folder first and moved in whole, so that concurrent JVMs
                // never read a half-written copy.
                Files.createDirectories(dir.getParent());
                final Path tmp = Files.createTempDirectory(dir.getParent(), "te4j-include-tmp");
                for (final JarEntry e : headers)
                {
                    final Path out = tmp.resolve(e.getName().substring("include/".length())).normalize();
                    if (!out.startsWith(tmp))
                    {
                        throw new IOException("jar entry " + e.getName() + " escapes the include folder");
                    }
                    Files.createDirectories(out.getParent());
                    try (InputStream in = jf.getInputStream(e))
                    {
                        Files.copy(in, out, StandardCopyOption.REPLACE_EXISTING);
                    }
                }
                Files.writeString(tmp.resolve(".complete"), hash);
                try
                {
                    Files.move(tmp, dir, StandardCopyOption.ATOMIC_MOVE);
                }
                catch (final IOException raced)
                {
                    if (!Files.isRegularFile(dir.resolve(".complete")))
                    {
                        throw raced;
                    }
                    deleteTree(tmp);
                }
            }
            return new DeviceHeaders(dir, hash);
        }
    }

    private static String hashOf(final Path dir) throws IOException
    {
        final MessageDigest md = sha256();
        final List<Path> files = new ArrayList<>();
        try (Stream<Path> s = Files.walk(dir))
        {
            s.filter(Files::isRegularFile).filter(p -> !p.getFileName().toString().startsWith(".")).forEach(files::add);
        }
        files.sort(null);
        for (final Path p : files)
        {
            md.update(dir.relativize(p).toString().getBytes(java.nio.charset.StandardCharsets.UTF_8));
            md.update(Files.readAllBytes(p));
        }
        return HexFormat.of().formatHex(md.digest());
    }

    static MessageDigest sha256()
    {
        try
        {
            return MessageDigest.getInstance("SHA-256");
        }
        catch (final NoSuchAlgorithmException e)
        {
            throw new IllegalStateException("SHA-256 is missing from this JVM", e);
        }
    }

    private static void deleteTree(final Path root) throws IOException
    {
        try (Stream<Path> s = Files.walk(root))
        {
            for (final Path p : s.sorted((a, b) -> b.compareTo(a)).toList())
            {
                Files.deleteIfExists(p);
            }
        }
    }
}
