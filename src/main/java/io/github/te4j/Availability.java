package io.github.te4j;

import io.github.te4j.internal.NativeApi;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What works on this machine and, for what does not, why. Found by really loading the native
 * library and asking the CUDA runtime (devices, driver, peer access), never assumed.
 *
 * <pre>{@code
 * if (!Availability.isAvailable(Platform.CUDA)) {
 *     log.info("no CUDA: {}", Availability.unavailabilityCause(Platform.CUDA).getMessage());
 * }
 * }</pre>
 *
 * @since 0.1
 */
public final class Availability
{
    private static volatile Map<String, String> report;

    private Availability()
    {
    }

    /**
     * Whether te4j's native library loaded.
     *
     * @return true when it loaded
     * @since 0.1
     */
    public static boolean isAvailable()
    {
        return NativeLibrary.isAvailable();
    }

    /**
     * Why the native library did not load, or null.
     *
     * @return the cause, or null when it loaded
     * @since 0.1
     */
    public static Throwable unavailabilityCause()
    {
        return NativeLibrary.unavailabilityCause();
    }

    /**
     * Throws {@link UnavailableException} with the cause if the native library did not load.
     *
     * @since 0.1
     */
    public static void ensureAvailability()
    {
        NativeLibrary.ensureAvailable();
    }

    /**
     * Whether a platform can be used here.
     *
     * @param platform the platform
     * @return true when engines of {@code platform} can be built here
     * @since 0.1
     */
    public static boolean isAvailable(final Platform platform)
    {
        return unavailabilityCause(platform) == null;
    }

    /**
     * Why a platform cannot be used here, or null when it can.
     *
     * @param platform the platform
     * @return the cause, naming the fix, or null
     * @since 0.1
     */
    public static Throwable unavailabilityCause(final Platform platform)
    {
        if (!NativeLibrary.isAvailable())
        {
            return NativeLibrary.unavailabilityCause();
        }
        if (platform == Platform.HOST)
        {
            return null;
        }
        final Map<String, String> r = report();
        if (!"true".equals(r.get("cuda.built")))
        {
            return new UnavailableException("te4j was built without CUDA (nvcc was not found at build time)");
        }
        final String why = r.get("cuda.unavailable");
        if (why != null)
        {
            return new UnavailableException("CUDA is unavailable: " + why);
        }
        if (cudaDeviceCount() <= 0)
        {
            return new UnavailableException("CUDA is unavailable: no CUDA device found");
        }
        return null;
    }

    /**
     * Throws {@link UnavailableException} naming the cause if {@code platform} cannot be used.
     *
     * @param platform the platform
     * @throws UnavailableException when {@code platform} cannot be used; its message names the cause and the
     *     fix
     * @since 0.1
     */
    public static void ensureAvailability(final Platform platform)
    {
        final Throwable cause = unavailabilityCause(platform);
        if (cause != null)
        {
            throw cause instanceof UnavailableException
                ? (UnavailableException)cause
                : new UnavailableException(cause.getMessage(), cause);
        }
    }

    /**
     * Number of usable CUDA devices (0 when CUDA cannot be used).
     *
     * @return the device count
     * @since 0.1
     */
    public static int cudaDeviceCount()
    {
        if (!NativeLibrary.isAvailable())
        {
            return 0;
        }
        return Math.max(0, NativeApi.cudaDeviceCount());
    }

    /**
     * Whether CUDA device {@code device} can map {@code peer}'s memory.
     *
     * @param device a CUDA device ordinal
     * @param peer another CUDA device ordinal
     * @return true when peer access works; false for ordinals that do not exist
     * @since 0.1
     */
    public static boolean cudaCanAccessPeer(final int device, final int peer)
    {
        final int n = cudaDeviceCount();
        if (device < 0 || peer < 0 || device >= n || peer >= n)
        {
            return false;
        }
        return NativeApi.cudaCanAccessPeer(device, peer) == 1;
    }

    /**
     * The raw report: "key=value" facts from the native side (empty when it did not load).
     *
     * @return the facts, unmodifiable
     * @since 0.1
     */
    public static Map<String, String> report()
    {
        Map<String, String> r = report;
        if (r == null)
        {
            r = new LinkedHashMap<>();
            if (NativeLibrary.isAvailable())
            {
                for (final String line : NativeApi.availabilityReport().split("\n"))
                {
                    final int eq = line.indexOf('=');
                    if (eq > 0)
                    {
                        r.put(line.substring(0, eq).trim(), line.substring(eq + 1).trim());
                    }
                }
            }
            report = r = Collections.unmodifiableMap(r);
        }
        return r;
    }

    /**
     * A human-readable summary: one line per platform, with the reason when unavailable.
     *
     * @return the summary, several lines
     * @since 0.1
     */
    public static String describe()
    {
        final List<String> lines = new ArrayList<>();
        for (final Platform p : Platform.values())
        {
            final Throwable cause = unavailabilityCause(p);
            lines.add(p + ": " + (cause == null ? "available" : "unavailable: " + cause.getMessage()));
        }
        if (isAvailable(Platform.CUDA))
        {
            final int n = cudaDeviceCount();
            lines.add("CUDA devices: " + n);
            for (int i = 0; i < n; i++)
            {
                for (int j = 0; j < n; j++)
                {
                    if (i != j)
                    {
                        lines.add("  peer access " + i + " -> " + j + ": " + cudaCanAccessPeer(i, j));
                    }
                }
            }
        }
        report().forEach((k, v) -> lines.add("  " + k + " = " + v));
        return String.join(System.lineSeparator(), lines);
    }

    /**
     * Prints {@link #describe()} and whether users' kernels can be compiled here (NVRTC).
     *
     * @param args ignored
     * @since 0.1
     */
    public static void main(final String[] args)
    {
        System.out.println(describe());
        final Throwable nvrtc = NativeLibrary.isAvailable() ? KernelCompiler.unavailabilityCause() : null;
        System.out.println("NVRTC (KernelCompiler): " + (!NativeLibrary.isAvailable() ? "unknown (no native library)"
            : nvrtc == null ? "available, " + KernelCompiler.library() + ", version " + KernelCompiler.version()
            : "unavailable: " + nvrtc.getMessage()));
    }
}
