package io.github.te4j;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Device code ready to load into a {@link DeviceModule}: a cubin, a fatbin or PTX text, made by
 * {@link KernelCompiler} or read from a file, a classpath resource or bytes (e.g. from
 * {@code nvcc -cubin} or {@code -fatbin}). Immutable; the bytes are copied in and out.
 *
 * @since 0.1
 */
public final class KernelImage
{
    /**
     * What the bytes are; checked from their first bytes.
     *
     * @since 0.1
     */
    public enum Kind
    {
        /**
         * An ELF object for one real architecture (nvcc -cubin, NVRTC with sm_XY).
         *
         * @since 0.1
         */
        CUBIN,
        /**
         * A fat binary: cubins and/or PTX for several architectures (nvcc -fatbin).
         *
         * @since 0.1
         */
        FATBIN,
        /**
         * PTX assembly text, compiled by the driver for the GPU at load time.
         *
         * @since 0.1
         */
        PTX
    }

    private static final int FATBIN_MAGIC = 0xBA55ED50;

    private final byte[] bytes;
    private final Kind kind;
    private final String name;
    private final String log;
    private final Map<String, String> loweredNames;
    private final boolean fromCache;
    private final long compileNanos;

    KernelImage(final byte[] bytes, final Kind kind, final String name, final String log,
        final Map<String, String> loweredNames, final boolean fromCache, final long compileNanos)
    {
        this.bytes = bytes;
        this.kind = kind;
        this.name = name;
        this.log = log;
        this.loweredNames = Collections.unmodifiableMap(new LinkedHashMap<>(loweredNames));
        this.fromCache = fromCache;
        this.compileNanos = compileNanos;
    }

    /**
     * An image of {@code bytes} (copied): a cubin (ELF), a fatbin, or PTX text (a NUL is
     * appended when missing). Throws {@link IllegalArgumentException} for anything else.
     *
     * @param name the name used in messages
     * @param bytes the image
     * @return the image over a copy of {@code bytes}
     * @throws IllegalArgumentException when an argument is null or the bytes are no cubin, fatbin or PTX
     * @since 0.1
     */
    public static KernelImage of(final String name, final byte[] bytes)
    {
        Errors.checkArgument(name != null, "name is null");
        Errors.checkArgument(bytes != null, "bytes is null");
        final Kind kind = kindOf(bytes);
        Errors.checkArgument(kind != null, name + " (" + bytes.length + " bytes) is neither a cubin (ELF), a fatbin "
            + "nor PTX text (fix: pass the output of nvcc -cubin/-fatbin/-ptx or of KernelCompiler)");
        byte[] copy = bytes.clone();
        if (kind == Kind.PTX && copy[copy.length - 1] != 0)
        {
            copy = Arrays.copyOf(copy, copy.length + 1);
        }
        return new KernelImage(copy, kind, name, "", Map.of(), false, 0);
    }

    /**
     * The image in {@code file}.
     *
     * @param file a cubin, fatbin or PTX file
     * @return the image
     * @throws IOException when the file cannot be read
     * @throws IllegalArgumentException when {@code file} is null or holds no cubin, fatbin or PTX
     * @since 0.1
     */
    public static KernelImage fromFile(final Path file) throws IOException
    {
        Errors.checkArgument(file != null, "file is null");
        return of(file.toString(), Files.readAllBytes(file));
    }

    /**
     * The image in classpath resource {@code resource} (absolute: "/kernels/my.cubin"), found through {@code anchor}.
     *
     * @param anchor the class whose loader finds the resource
     * @param resource the resource name
     * @return the image
     * @throws IOException when the resource is missing or cannot be read
     * @throws IllegalArgumentException when an argument is null or the resource holds no cubin, fatbin or PTX
     * @since 0.1
     */
    public static KernelImage fromResource(final Class<?> anchor, final String resource) throws IOException
    {
        Errors.checkArgument(anchor != null && resource != null, "anchor or resource is null");
        try (InputStream in = anchor.getResourceAsStream(resource))
        {
            if (in == null)
            {
                throw new IOException("resource " + resource + " not found on the classpath of " + anchor.getName());
            }
            return of(resource, in.readAllBytes());
        }
    }

    /** The kind of {@code bytes}, or null when they are none of the three. */
    static Kind kindOf(final byte[] b)
    {
        if (b.length >= 4 && b[0] == 0x7f && b[1] == 'E' && b[2] == 'L' && b[3] == 'F')
        {
            return Kind.CUBIN;
        }
        if (b.length >= 4 && ((b[0] & 0xff) | (b[1] & 0xff) << 8 | (b[2] & 0xff) << 16 | (b[3] & 0xff) << 24)
            == FATBIN_MAGIC)
        {
            return Kind.FATBIN;
        }
        final String head = new String(b, 0, Math.min(b.length, 4096), StandardCharsets.ISO_8859_1);
        if (head.contains(".version") && head.contains(".target"))
        {
            return Kind.PTX;
        }
        return null;
    }

    /**
     * A copy of the bytes.
     *
     * @return a new array with the image
     * @since 0.1
     */
    public byte[] bytes()
    {
        return bytes.clone();
    }

    /** The bytes themselves, for loading (never handed out). */
    byte[] rawBytes()
    {
        return bytes;
    }

    /**
     * The size of the image.
     *
     * @return its length in bytes (with PTX's terminating NUL)
     * @since 0.1
     */
    public int size()
    {
        return bytes.length;
    }

    /**
     * What the bytes are.
     *
     * @return cubin, fatbin or PTX
     * @since 0.1
     */
    public Kind kind()
    {
        return kind;
    }

    /**
     * The program or file name it was made from.
     *
     * @return the name
     * @since 0.1
     */
    public String name()
    {
        return name;
    }

    /**
     * NVRTC's log (warnings) for a compiled image; empty otherwise.
     *
     * @return the log, or {@code ""}
     * @since 0.1
     */
    public String log()
    {
        return log;
    }

    /**
     * The lowered (mangled) kernel name of a name expression given to the compiler, e.g.
     * {@code "&scale<float>"}: the name {@link DeviceModule#kernel} finds. Throws when the
     * expression was not given.
     *
     * @param nameExpression a name expression given to {@link KernelCompiler#compile}
     * @return the lowered name
     * @throws IllegalArgumentException when the expression was not given
     * @since 0.1
     */
    public String loweredName(final String nameExpression)
    {
        final String lowered = loweredNames.get(nameExpression);
        Errors.checkArgument(lowered != null, "no name expression \"" + nameExpression + "\" in " + name
            + " (given: " + loweredNames.keySet() + ")");
        return lowered;
    }

    /**
     * Every name expression with its lowered name, in the order given.
     *
     * @return the name expressions and their lowered names, unmodifiable
     * @since 0.1
     */
    public Map<String, String> loweredNames()
    {
        return loweredNames;
    }

    /**
     * Whether {@link KernelCompiler} took this image from its cache instead of compiling.
     *
     * @return true when it came from the memory or disk cache
     * @since 0.1
     */
    public boolean fromCache()
    {
        return fromCache;
    }

    /**
     * How long NVRTC took to compile it (0 for a cached or loaded image).
     *
     * @return the compile time in nanoseconds
     * @since 0.1
     */
    public long compileNanos()
    {
        return compileNanos;
    }

    @Override
    public String toString()
    {
        return "KernelImage[" + name + ", " + kind + ", " + bytes.length + " B" + (fromCache ? ", cached" : "") + "]";
    }
}
