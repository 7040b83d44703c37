package io.github.te4j;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Finds the CUDA toolkit's include folder for NVRTC builds. NVRTC has only a few headers built
 * in; {@code <cooperative_groups.h>} (which {@code mc_grid_sync} needs, as upstream's headers do)
 * and the rest of the toolkit's device headers must come from the toolkit, as with nvcc. NVRTC
 * does not look for them itself, so {@link KernelCompiler} adds the folder found here when a
 * compilation reports one of them missing.
 *
 * <p>Looked for, first hit wins: the system property {@code te4j.cudaInclude}, the environment
 * variable {@code TE4J_CUDA_INCLUDE}, {@code $CUDA_HOME/include}, {@code $CUDA_PATH/include},
 * {@code /usr/local/cuda/include}, then the newest {@code /usr/local/cuda-<v>/targets/<arch>/include}.
 * A folder counts only when it holds {@code cuda_runtime_api.h}. The value {@value #NONE} for the
 * property or the variable means look nowhere: NVRTC's built-in headers only.
 */
final class CudaToolkitHeaders
{
    /** How a user points te4j at the headers when none was found. */
    static final String FIX = "install the CUDA toolkit's headers (e.g. the package cuda-cudart-dev or the "
        + "toolkit in /usr/local/cuda) or point te4j at them: -Dte4j.cudaInclude=/path/to/cuda/include "
        + "or the environment variable TE4J_CUDA_INCLUDE";

    /** The {@code te4j.cudaInclude} / {@code TE4J_CUDA_INCLUDE} value that turns the search off. */
    static final String NONE = "none";

    private static final String MARKER = "cuda_runtime_api.h";
    private static final Pattern CUDART_VERSION = Pattern.compile("^#define\\s+CUDART_VERSION\\s+([0-9]+)");
    private static final String NO_FP8 = "CCCL_DISABLE_NVFP8_SUPPORT";

    private CudaToolkitHeaders()
    {
    }

    /** The include folder, or empty when this machine has none where te4j looks. */
    static Optional<Path> find()
    {
        if (NONE.equals(System.getProperty("te4j.cudaInclude", System.getenv("TE4J_CUDA_INCLUDE"))))
        {
            return Optional.empty();
        }
        for (final Path p : candidates())
        {
            if (Files.isRegularFile(p.resolve(MARKER)))
            {
                return Optional.of(p);
            }
        }
        return Optional.empty();
    }

    /** Whether {@code header} is in the folder found, i.e. whether adding it can cure a miss. */
    static boolean provides(final Path include, final String header)
    {
        if (header.contains(".."))
        {
            return false;
        }
        for (final Path p : searchPath(include))
        {
            if (Files.isRegularFile(p.resolve(header)))
            {
                return true;
            }
        }
        return false;
    }

    /**
     * The {@code -I} folders for a toolkit include folder: the folder itself and, from CUDA 13 on,
     * its {@code cccl/} folder, where libcu++ ({@code <cuda/std/...>}, which cooperative groups
     * include) moved; nvcc adds both itself.
     */
    static List<Path> searchPath(final Path include)
    {
        final Path cccl = include.resolve("cccl");
        return Files.isDirectory(cccl) ? List.of(include, cccl) : List.of(include);
    }

    /**
     * The toolkit's CUDA version as major * 1000 + minor * 10 (13000 = 13.0), read from
     * {@code CUDART_VERSION} in its {@code cuda_runtime_api.h}; -1 when unreadable.
     */
    static int version(final Path include)
    {
        try (Stream<String> lines = Files.lines(include.resolve(MARKER)))
        {
            return lines.map(CUDART_VERSION::matcher).filter(Matcher::find).findFirst()
                .map(m -> Integer.parseInt(m.group(1))).orElse(-1);
        }
        catch (final IOException | UncheckedIOException | NumberFormatException e)
        {
            return -1;
        }
    }

    /**
     * The options that let an NVRTC older than the toolkit compile against its headers (empty
     * when NVRTC is as new). The toolkit's libcu++ includes its {@code cuda_fp8.h}, {@code cuda_fp6.h}
     * and {@code cuda_fp4.h} when present, and those need the macros of the toolkit's own
     * run-time headers, which an older NVRTC's built-in ones lack; the narrow float types are
     * optional in libcu++ and te4j's headers do not use them, so they are turned off (FP6 and FP4
     * follow FP8).
     */
    static List<String> compatibilityOptions(final Path include, final int nvrtcVersion, final List<String> userOptions)
    {
        final int toolkit = version(include);
        final boolean userSet = userOptions.stream().anyMatch(o -> o.contains(NO_FP8));
        if (toolkit < 0 || nvrtcVersion / 1000 >= toolkit / 1000 || userSet)
        {
            return List.of();
        }
        return List.of("-D" + NO_FP8);
    }

    private static List<Path> candidates()
    {
        final List<Path> out = new ArrayList<>();
        addIfSet(out, System.getProperty("te4j.cudaInclude"), "");
        addIfSet(out, System.getenv("TE4J_CUDA_INCLUDE"), "");
        addIfSet(out, System.getenv("CUDA_HOME"), "include");
        addIfSet(out, System.getenv("CUDA_PATH"), "include");
        out.add(Paths.get("/usr/local/cuda/include"));
        out.addAll(versionedToolkits());
        return out;
    }

    private static int[] versionOf(final Path toolkit)
    {
        final String[] parts = toolkit.getFileName().toString().substring("cuda-".length()).split("\\.");
        final int[] v = new int[parts.length];
        for (int i = 0; i < parts.length; i++)
        {
            try
            {
                v[i] = Integer.parseInt(parts[i]);
            }
            catch (final NumberFormatException e)
            {
                v[i] = -1;
            }
        }
        return v;
    }

    private static int compareVersions(final int[] a, final int[] b)
    {
        return java.util.Arrays.compare(a, b);
    }

    private static void addIfSet(final List<Path> out, final String value, final String child)
    {
        if (value != null && !value.isBlank())
        {
            out.add(child.isEmpty() ? Paths.get(value) : Paths.get(value, child));
        }
    }

    /** {@code /usr/local/cuda-13.0/targets/x86_64-linux/include} and the like, newest version first. */
    private static List<Path> versionedToolkits()
    {
        final List<Path> out = new ArrayList<>();
        final Path local = Paths.get("/usr/local");
        if (!Files.isDirectory(local))
        {
            return out;
        }
        try (Stream<Path> s = Files.list(local))
        {
            s.filter(p -> p.getFileName().toString().startsWith("cuda-"))
                .sorted(Comparator.<Path, int[]>comparing(CudaToolkitHeaders::versionOf, CudaToolkitHeaders::compareVersions).reversed())
                .forEach(p ->
                {
                    out.add(p.resolve("include"));
                    try (Stream<Path> t = Files.list(p.resolve("targets")))
                    {
                        t.forEach(target -> out.add(target.resolve("include")));
                    }
                    catch (final IOException | SecurityException ignored)
                    {
                        // no targets/ folder in this layout: the plain include/ above is enough
                    }
                });
        }
        catch (final IOException | SecurityException ignored)
        {
            // /usr/local unreadable: only the explicit settings count
        }
        return out;
    }
}
