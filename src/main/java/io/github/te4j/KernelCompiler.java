package io.github.te4j;

import io.github.te4j.internal.NativeApi;
import io.github.te4j.internal.NativeModuleApi;
import io.github.te4j.internal.NativeNvrtcCompilation;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Compiles CUDA C++ source at run time with NVRTC into a {@link KernelImage}, with te4j's device
 * headers ({@code #include "transport/device/comm_device.cuh"}) on the include path. NVRTC is
 * loaded with {@code dlopen} on first use: te4j loads without it, and {@link #isAvailable()} /
 * {@link #unavailabilityCause()} say whether it is here. Compiling needs no GPU: give the
 * architecture ({@link #forArchitecture}) or take the GPU's ({@link #forDevice}).
 *
 * <p>Images are cached in memory (for the life of the process) and, with
 * {@link #withDiskCache}, in a folder; the key is a SHA-256 of the source, te4j's headers, the
 * options, the name expressions, the architecture and NVRTC's version. Instances are immutable
 * and thread-safe.
 *
 * <pre>
 * KernelImage image = KernelCompiler.forDevice(0).compile("put.cu", source, "&amp;put_kernel&lt;4&gt;");
 * try (DeviceModule module = DeviceModule.load(engine, image))
 * {
 *     Kernel k = module.kernel(image.loweredName("&amp;put_kernel&lt;4&gt;"));
 * }
 * </pre>
 *
 * @since 0.1
 */
public final class KernelCompiler
{
    /**
     * Names the NVRTC library to load instead of searching (a path or a soname).
     *
     * @since 0.1
     */
    public static final String LIBRARY_PROPERTY = "te4j.nvrtc.library";

    private static final Pattern ARCH = Pattern.compile("(sm|compute)_[0-9]{2,3}[af]?");
    private static final Pattern MISSING_HEADER = Pattern.compile("cannot open source file \"([^\"]+)\"");
    /**
     * What te4j's headers say when a kernel calls an op that needs a toolkit header NVRTC does
     * not have built in (cuda/cuda_ops.cuh): handled as that header missing.
     */
    private static final Pattern NEEDS_TOOLKIT_HEADER = Pattern.compile("te4j: \\w+ needs <([^>]+)> from the CUDA toolkit");
    /** What the CUDA 13 toolkit's libcu++ says under an NVRTC before 12. */
    private static final String CCCL_TOO_OLD = "CUDA versions below 12 are not supported";
    /** NVRTC's words for an architecture it does not know. */
    private static final String UNKNOWN_ARCH = "invalid value for --gpu-architecture";
    private static final Map<String, KernelImage> MEMORY_CACHE = new ConcurrentHashMap<>();
    private static final Map<Set<String>, Path> SHIM_DIRS = new ConcurrentHashMap<>();
    private static final Object LOAD_LOCK = new Object();
    private static volatile int version;
    private static volatile Throwable cause;

    private final String architecture;
    private final List<String> options;
    private final Path diskCache;

    private KernelCompiler(final String architecture, final List<String> options, final Path diskCache)
    {
        this.architecture = architecture;
        this.options = options;
        this.diskCache = diskCache;
    }

    /**
     * Whether NVRTC loads here.
     *
     * @return true when NVRTC is loaded (loading it on the first call)
     * @since 0.1
     */
    public static boolean isAvailable()
    {
        return load() > 0;
    }

    /**
     * Why NVRTC is unavailable (naming the libraries tried and the fix), or null when it is available.
     *
     * @return the cause, or null
     * @since 0.1
     */
    public static Throwable unavailabilityCause()
    {
        load();
        return cause;
    }

    /**
     * Throws {@link UnavailableException} with the cause when NVRTC is unavailable.
     *
     * @throws UnavailableException when NVRTC cannot be loaded; its cause names the libraries tried
     * @since 0.1
     */
    public static void ensureAvailability()
    {
        if (!isAvailable())
        {
            throw new UnavailableException(cause.getMessage(), cause);
        }
    }

    /**
     * NVRTC's version as major * 1000 + minor * 10 (13000 = 13.0); throws when unavailable.
     *
     * @return the version, e.g. 13000 for 13.0
     * @throws UnavailableException when NVRTC is unavailable
     * @since 0.1
     */
    public static int version()
    {
        ensureAvailability();
        return version;
    }

    /**
     * The NVRTC library in use, or "" when none is loaded.
     *
     * @return the path or soname of the loaded NVRTC, or {@code ""}
     * @since 0.1
     */
    public static String library()
    {
        load();
        return NativeModuleApi.nvrtcLibrary();
    }

    /**
     * Tries to load NVRTC from {@code library} alone (a path or a soname), without changing the
     * one in use; null when it loads, else why not. For checking an installation.
     *
     * @param library a path or soname of an NVRTC library
     * @return null when it loads, else an exception that says why (not thrown)
     * @throws IllegalArgumentException when {@code library} is null, empty or holds a line break
     * @throws UnavailableException when te4j's own native library does not load
     * @since 0.1
     */
    public static UnavailableException probe(final String library)
    {
        Errors.checkArgument(library != null && !library.isEmpty() && library.indexOf('\n') < 0,
            "library must be a non-empty path or soname without line breaks");
        NativeLibrary.ensureAvailable();
        final int v = NativeModuleApi.nvrtcLoad(library);
        return v > 0 ? null : new UnavailableException(NativeModuleApi.moduleLastError());
    }

    private static int load()
    {
        if (version > 0 || cause != null)
        {
            return version;
        }
        synchronized (LOAD_LOCK)
        {
            if (version > 0 || cause != null)
            {
                return version;
            }
            try
            {
                NativeLibrary.ensureAvailable();
                final String configured = System.getProperty(LIBRARY_PROPERTY, "");
                final int v = NativeModuleApi.nvrtcLoad(configured.replace('\n', ' '));
                if (v > 0)
                {
                    version = v;
                }
                else
                {
                    cause = new UnavailableException(NativeModuleApi.moduleLastError());
                }
            }
            catch (final Throwable t)
            {
                cause = t;
            }
            return version;
        }
    }

    /**
     * A compiler for {@code architecture}: "sm_90" (a cubin for that GPU generation) or
     * "compute_90" (PTX, which the driver compiles for any newer GPU at load time).
     *
     * @param architecture {@code sm_XY} or {@code compute_XY}
     * @return a compiler without extra options or disk cache
     * @throws IllegalArgumentException when {@code architecture} is null or of another form
     * @since 0.1
     */
    public static KernelCompiler forArchitecture(final String architecture)
    {
        Errors.checkArgument(architecture != null && ARCH.matcher(architecture).matches(),
            "architecture \"" + architecture + "\" is not sm_XY or compute_XY (e.g. sm_90)");
        return new KernelCompiler(architecture, List.of(), null);
    }

    /**
     * A compiler for the architecture of CUDA device {@code device} (sm_XY: a cubin).
     *
     * @param device the CUDA device ordinal, not negative
     * @return a compiler without extra options or disk cache
     * @throws IllegalArgumentException when {@code device} is negative
     * @throws UnavailableException when CUDA or the device is missing here
     * @throws Te4jException when CUDA cannot report the device's compute capability
     * @since 0.1
     */
    public static KernelCompiler forDevice(final int device)
    {
        Errors.checkArgument(device >= 0, "device " + device + " < 0");
        NativeLibrary.ensureAvailable();
        final int cc = NativeModuleApi.cudaComputeCapability(device);
        if (cc < 0)
        {
            throw Errors.toException(cc, "cudaComputeCapability(" + device + ")", NativeModuleApi.moduleLastError()
                + " (fix: without a GPU, name the architecture with KernelCompiler.forArchitecture(\"sm_90\"))");
        }
        return new KernelCompiler("sm_" + cc, List.of(), null);
    }

    /**
     * This compiler with NVRTC options added, e.g. "-DBLOCK=256", "--use_fast_math", "-G",
     * "-I/my/headers". An architecture option here replaces the compiler's own.
     *
     * @param more the options to add, each non-blank and without line breaks
     * @return a new compiler; this one is unchanged
     * @throws IllegalArgumentException when {@code more} or an option is null, blank or holds a line break
     * @since 0.1
     */
    public KernelCompiler withOptions(final String... more)
    {
        Errors.checkArgument(more != null, "options is null");
        final List<String> all = new ArrayList<>(options);
        for (final String o : more)
        {
            Errors.checkArgument(o != null && !o.isBlank() && o.indexOf('\n') < 0 && o.indexOf('\0') < 0,
                "option \"" + o + "\" is null, blank or holds a line break");
            all.add(o);
        }
        return new KernelCompiler(architecture, List.copyOf(all), diskCache);
    }

    /**
     * This compiler with images also kept in (and read from) {@code dir}, created when missing.
     *
     * @param dir the cache folder
     * @return a new compiler; this one is unchanged
     * @throws IllegalArgumentException when {@code dir} is null
     * @since 0.1
     */
    public KernelCompiler withDiskCache(final Path dir)
    {
        Errors.checkArgument(dir != null, "dir is null");
        return new KernelCompiler(architecture, options, dir);
    }

    /**
     * The architecture this compiler targets.
     *
     * @return {@code sm_XY} or {@code compute_XY}
     * @since 0.1
     */
    public String architecture()
    {
        return architecture;
    }

    /**
     * The NVRTC options added with {@link #withOptions(String...)}.
     *
     * @return the options, unmodifiable
     * @since 0.1
     */
    public List<String> options()
    {
        return options;
    }

    /**
     * Compiles {@code source} (program {@code name}, used in messages and {@code #line}s).
     * Name expressions ({@code "&kernel<int, 4>"}) instantiate templates and give their lowered
     * names ({@link KernelImage#loweredName}). Throws {@link Te4jException} (INVALID_ARGUMENT)
     * with NVRTC's log when the source does not compile, {@link UnavailableException} without
     * NVRTC.
     *
     * @param name the program name, non-empty
     * @param source the CUDA C++ source, non-blank
     * @param nameExpressions template instantiations to compile, e.g. {@code "&kernel<int, 4>"}
     * @return the compiled image (from the memory or disk cache when compiled before)
     * @throws IllegalArgumentException when an argument is null, blank or holds a NUL character or line break
     * @throws UnavailableException when NVRTC is unavailable
     * @throws Te4jException with {@code INVALID_ARGUMENT} and NVRTC's log when the source does not compile
     * @since 0.1
     */
    public KernelImage compile(final String name, final String source, final String... nameExpressions)
    {
        Errors.checkArgument(name != null && !name.isEmpty() && name.indexOf('\0') < 0, "name is null or empty");
        Errors.checkArgument(source != null && !source.isBlank(), "source of " + name + " is null or blank");
        Errors.checkArgument(source.indexOf('\0') < 0, "source of " + name + " holds a NUL character");
        Errors.checkArgument(nameExpressions != null, "nameExpressions is null");
        for (final String e : nameExpressions)
        {
            Errors.checkArgument(e != null && !e.isBlank() && e.indexOf('\n') < 0 && e.indexOf('\0') < 0,
                "name expression \"" + e + "\" is null, blank or holds a line break");
        }
        ensureAvailability();
        final DeviceHeaders headers = DeviceHeaders.get();
        final List<String> all = fullOptions(headers);
        final String key = keyOf(source, headers, all, nameExpressions);
        final KernelImage cached = MEMORY_CACHE.get(key);
        if (cached != null)
        {
            return cached;
        }
        if (diskCache != null)
        {
            final KernelImage fromDisk = readDisk(key, name);
            if (fromDisk != null)
            {
                MEMORY_CACHE.putIfAbsent(key, fromDisk);
                return fromDisk;
            }
        }
        final KernelImage image = compileNow(name, source, all, nameExpressions);
        MEMORY_CACHE.putIfAbsent(key, asCached(image));
        if (diskCache != null)
        {
            writeDisk(key, image);
        }
        return image;
    }

    /**
     * The folder holding te4j's device headers (extracted from the jar once when needed): what
     * {@code -I} names for a kernel compiled with nvcc instead of NVRTC.
     *
     * @return the folder, e.g. for {@code nvcc -I}
     * @since 0.1
     */
    public static Path includeDirectory()
    {
        return DeviceHeaders.get().dir();
    }

    /**
     * Images held by the in-memory cache (all compilers of this process).
     *
     * @return the number of cached images
     * @since 0.1
     */
    public static int memoryCacheSize()
    {
        return MEMORY_CACHE.size();
    }

    /**
     * Empties the in-memory cache (the disk caches stay).
     *
     * @since 0.1
     */
    public static void clearMemoryCache()
    {
        MEMORY_CACHE.clear();
    }

    private List<String> fullOptions(final DeviceHeaders headers)
    {
        final List<String> all = new ArrayList<>();
        boolean userArch = false;
        boolean userStd = false;
        for (final String o : options)
        {
            userArch |= o.startsWith("--gpu-architecture") || o.startsWith("-arch");
            userStd |= o.startsWith("--std") || o.startsWith("-std");
        }
        if (!userArch)
        {
            all.add("--gpu-architecture=" + architecture);
        }
        if (!userStd)
        {
            all.add("--std=c++17");
        }
        all.add("-I" + headers.dir());
        all.addAll(options);
        return all;
    }

    private KernelImage compileNow(final String name, final String source, final List<String> baseOptions,
        final String[] nameExpressions)
    {
        final Set<String> shims = new TreeSet<>();
        Path toolkit = null;
        while (true)
        {
            final List<String> opts = new ArrayList<>(baseOptions);
            if (!shims.isEmpty())
            {
                opts.add("-I" + shimDir(shims));
            }
            if (toolkit != null)
            {
                // last, as nvcc searches its own include folders after the user's
                CudaToolkitHeaders.searchPath(toolkit).forEach(dir -> opts.add("-I" + dir));
                opts.addAll(CudaToolkitHeaders.compatibilityOptions(toolkit, version, options));
            }
            final long start = System.nanoTime();
            final NativeNvrtcCompilation c = NativeNvrtcCompilation.compile(source, name, String.join("\n", opts),
                String.join("\n", nameExpressions));
            if (c == null || c.isNull())
            {
                throw new Te4jException(Te4jException.Code.OUT_OF_MEMORY, "NvrtcCompilation.compile returned null");
            }
            try
            {
                final long nanos = System.nanoTime() - start;
                final int status = c.status();
                if (status < 0)
                {
                    final String log = c.log();
                    final String missing = missingHeader(log);
                    if (missing != null && SystemHeaderShims.has(missing) && shims.add(missing))
                    {
                        continue;  // this NVRTC lacks a C header te4j's headers include: retry with te4j's stand-in
                    }
                    if (missing != null && toolkit == null)
                    {
                        final Path found = CudaToolkitHeaders.find().orElse(null);
                        if (found != null && CudaToolkitHeaders.provides(found, missing))
                        {
                            toolkit = found;
                            continue;  // a CUDA toolkit header (e.g. cooperative_groups.h): retry with the toolkit's folder
                        }
                    }
                    String detail = c.lastError();
                    if (missing != null && !SystemHeaderShims.has(missing))
                    {
                        detail += "\nfix: \"" + missing + "\" is not among NVRTC's built-in headers"
                            + (toolkit == null ? "; " + CudaToolkitHeaders.FIX : " nor in " + toolkit);
                    }
                    if (log.contains(UNKNOWN_ARCH))
                    {
                        detail += "\nfix: NVRTC " + versionText() + " (" + library() + ") does not know " + architecture
                            + "; name an older architecture (PTX for compute_XY runs on newer GPUs) or use a newer NVRTC";
                    }
                    if (toolkit != null && log.contains(CCCL_TOO_OLD))
                    {
                        detail += "\nfix: the CUDA toolkit's libcu++ in " + toolkit + " needs NVRTC 12 or newer; this is NVRTC "
                            + versionText() + " (" + library() + "): install NVRTC 12 or newer or "
                            + "name it with -D" + LIBRARY_PROPERTY + "= (environment: TE4J_NVRTC_LIBRARY)";
                    }
                    throw Errors.toException(status, "compile(" + name + ", " + architecture + ")", detail);
                }
                final byte[] bytes = new byte[(int) c.imageBytes()];
                Errors.check(c.copyImage(bytes, bytes.length), "copyImage", c::lastError);
                final Map<String, String> lowered = new LinkedHashMap<>();
                for (int i = 0; i < nameExpressions.length; i++)
                {
                    lowered.put(nameExpressions[i], c.loweredName(i));
                }
                final KernelImage.Kind kind = c.imageIsCubin() != 0 ? KernelImage.Kind.CUBIN : KernelImage.Kind.PTX;
                return new KernelImage(bytes, kind, name, c.log(), lowered, false, nanos);
            }
            finally
            {
                NativeApi.destroyObject(c);
            }
        }
    }

    /** The header a failed compilation lacks, or null when it failed for another reason. */
    private static String missingHeader(final String log)
    {
        final Matcher m = MISSING_HEADER.matcher(log);
        if (m.find())
        {
            return m.group(1);
        }
        final Matcher t = NEEDS_TOOLKIT_HEADER.matcher(log);
        return t.find() ? t.group(1) : null;
    }

    private static String versionText()
    {
        return version / 1000 + "." + version % 1000 / 10;
    }

    private static Path shimDir(final Set<String> shims)
    {
        return SHIM_DIRS.computeIfAbsent(Set.copyOf(shims), s ->
        {
            try
            {
                return SystemHeaderShims.write(Paths.get(System.getProperty("java.io.tmpdir")), s);
            }
            catch (final IOException e)
            {
                throw new UncheckedIOException("writing NVRTC header stand-ins: " + e.getMessage(), e);
            }
        });
    }

    private String keyOf(final String source, final DeviceHeaders headers, final List<String> all,
        final String[] nameExpressions)
    {
        final MessageDigest md = DeviceHeaders.sha256();
        md.update(source.getBytes(StandardCharsets.UTF_8));
        md.update((byte) 0);
        md.update(headers.hash().getBytes(StandardCharsets.UTF_8));
        for (final String o : all)
        {
            // The include folder's path changes between machines; its content is in the hash.
            if (!o.equals("-I" + headers.dir()))
            {
                md.update((byte) 1);
                md.update(o.getBytes(StandardCharsets.UTF_8));
            }
        }
        for (final String e : nameExpressions)
        {
            md.update((byte) 2);
            md.update(e.getBytes(StandardCharsets.UTF_8));
        }
        md.update(("arch=" + architecture + " nvrtc=" + version).getBytes(StandardCharsets.UTF_8));
        return HexFormat.of().formatHex(md.digest());
    }

    private static KernelImage asCached(final KernelImage i)
    {
        return new KernelImage(i.rawBytes(), i.kind(), i.name(), i.log(), i.loweredNames(), true, 0);
    }

    private KernelImage readDisk(final String key, final String name)
    {
        final Path img = diskCache.resolve(key + ".img");
        final Path meta = diskCache.resolve(key + ".meta");
        try
        {
            if (!Files.isRegularFile(img) || !Files.isRegularFile(meta))
            {
                return null;
            }
            final List<String> lines = Files.readAllLines(meta, StandardCharsets.UTF_8);
            if (lines.isEmpty())
            {
                return null;
            }
            final KernelImage.Kind kind = KernelImage.Kind.valueOf(lines.get(0));
            final Map<String, String> lowered = new LinkedHashMap<>();
            for (final String l : lines.subList(1, lines.size()))
            {
                final int tab = l.indexOf('\t');
                if (tab > 0)
                {
                    lowered.put(l.substring(0, tab), l.substring(tab + 1));
                }
            }
            final byte[] bytes = Files.readAllBytes(img);
            if (KernelImage.kindOf(bytes) != kind)
            {
                return null;  // damaged entry: compile again (and overwrite it)
            }
            return new KernelImage(bytes, kind, name, "", lowered, true, 0);
        }
        catch (final IOException | IllegalArgumentException e)
        {
            return null;
        }
    }

    private void writeDisk(final String key, final KernelImage image)
    {
        try
        {
            Files.createDirectories(diskCache);
            final StringBuilder meta = new StringBuilder(image.kind().name()).append('\n');
            image.loweredNames().forEach((e, l) -> meta.append(e).append('\t').append(l).append('\n'));
            // The image first, then its .meta: a reader that finds .meta finds a whole image.
            final Path tmpImg = Files.createTempFile(diskCache, key, ".tmp");
            Files.write(tmpImg, image.rawBytes());
            Files.move(tmpImg, diskCache.resolve(key + ".img"), StandardCopyOption.REPLACE_EXISTING,
                StandardCopyOption.ATOMIC_MOVE);
            final Path tmpMeta = Files.createTempFile(diskCache, key, ".tmp");
            Files.writeString(tmpMeta, meta, StandardCharsets.UTF_8);
            Files.move(tmpMeta, diskCache.resolve(key + ".meta"), StandardCopyOption.REPLACE_EXISTING,
                StandardCopyOption.ATOMIC_MOVE);
        }
        catch (final IOException e)
        {
            throw new UncheckedIOException("writing the kernel cache " + diskCache + ": " + e.getMessage(), e);
        }
    }

    @Override
    public String toString()
    {
        return "KernelCompiler[" + architecture + (options.isEmpty() ? "" : " " + options)
            + (diskCache == null ? "" : ", cache " + diskCache) + "]";
    }
}
