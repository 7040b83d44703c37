package io.github.te4j;

import io.github.te4j.internal.NativeApi;
import org.bytedeco.javacpp.Loader;

/**
 * Loads libte4j and its JNI glue from the jar, once, and remembers why it failed if it did.
 * The kill switch {@code -Dte4j.noNative=true} makes te4j report itself unavailable.
 */
final class NativeLibrary
{
    private static final Throwable UNAVAILABILITY_CAUSE = load();

    private NativeLibrary()
    {
    }

    private static Throwable load()
    {
        if (Boolean.getBoolean("te4j.noNative"))
        {
            return new UnsupportedOperationException("te4j native library disabled by -Dte4j.noNative=true");
        }
        try
        {
            Loader.load(NativeApi.class);
            return null;
        }
        catch (final Throwable t)
        {
            final String platform = Loader.getPlatform();
            final UnsatisfiedLinkError e = new UnsatisfiedLinkError(
                "cannot load te4j's native library for " + platform + " (te4j ships linux-x86_64 only;"
                + " needs glibc >= 2.34 and libstdc++ with GLIBCXX_3.4.30; if the cache folder is noexec,"
                + " set -Dorg.bytedeco.javacpp.cachedir=<an exec-mounted folder>): " + t);
            e.initCause(t);
            return e;
        }
    }

    static boolean isAvailable()
    {
        return UNAVAILABILITY_CAUSE == null;
    }

    static Throwable unavailabilityCause()
    {
        return UNAVAILABILITY_CAUSE;
    }

    static void ensureAvailable()
    {
        if (UNAVAILABILITY_CAUSE != null)
        {
            throw new UnavailableException(UNAVAILABILITY_CAUSE.getMessage(), UNAVAILABILITY_CAUSE);
        }
    }
}
