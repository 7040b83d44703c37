package io.github.te4j;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Map;
import java.util.Set;

/**
 * Minimal C headers for NVRTC builds that lack them. te4j's device headers include
 * {@code <stdint.h>}, {@code <stddef.h>} and {@code <string.h>} because the same files compile
 * with g++ and nvcc; NVRTC ships some C headers built in and not others, depending on its
 * version. {@link KernelCompiler} adds a folder of these only after NVRTC reported one of them
 * missing, so a built-in header is never shadowed. Device code only (LP64, as CUDA's is).
 */
final class SystemHeaderShims
{
    private static final Map<String, String> HEADERS = Map.of(
        "stdint.h", """
            // te4j's stand-in for NVRTC builds without a built-in stdint.h (LP64 device types).
            #pragma once
            #if __has_include(<cuda/std/cstdint>)
            // The CUDA toolkit's libcu++ is on the include path (cooperative groups pull it in):
            // take its definitions, which it makes global under NVRTC, so both agree.
            #include <cuda/std/cstdint>
            #ifndef SIZE_MAX
            #define SIZE_MAX UINT64_MAX
            #endif
            #else
            typedef signed char int8_t;
            typedef short int16_t;
            typedef int int32_t;
            typedef long int64_t;
            typedef unsigned char uint8_t;
            typedef unsigned short uint16_t;
            typedef unsigned int uint32_t;
            typedef unsigned long uint64_t;
            typedef long intptr_t;
            typedef unsigned long uintptr_t;
            typedef long intmax_t;
            typedef unsigned long uintmax_t;
            #define INT8_MAX 127
            #define INT16_MAX 32767
            #define INT32_MAX 2147483647
            #define INT64_MAX 9223372036854775807L
            #define INT32_MIN (-INT32_MAX - 1)
            #define INT64_MIN (-INT64_MAX - 1)
            #define UINT8_MAX 255
            #define UINT16_MAX 65535
            #define UINT32_MAX 4294967295U
            #define UINT64_MAX 18446744073709551615UL
            #define SIZE_MAX UINT64_MAX
            #endif
            """,
        "stddef.h", """
            // te4j's stand-in for NVRTC builds without a built-in stddef.h.
            #pragma once
            typedef decltype(sizeof(0)) size_t;
            typedef decltype((char*)0 - (char*)0) ptrdiff_t;
            #ifndef NULL
            #define NULL 0
            #endif
            #ifndef offsetof
            // NVRTC before 13.4 has no __builtin_offsetof; __INTADDR__ lets its front end fold the
            // classic address-of-member form during constant evaluation (static_assert works).
            #define offsetof(type, member) ((size_t)__INTADDR__(&(((type*)0)->member)))
            #endif
            """,
        "string.h", """
            // te4j's stand-in for NVRTC builds without a built-in string.h: memcpy and memset are
            // built into CUDA device code, so only size_t is needed here.
            #pragma once
            #include <stddef.h>
            """);

    private SystemHeaderShims()
    {
    }

    /** Whether te4j has a stand-in for {@code header}. */
    static boolean has(final String header)
    {
        return HEADERS.containsKey(header);
    }

    /** Writes the stand-ins for {@code headers} into a new folder under {@code parent}; returns it. */
    static Path write(final Path parent, final Set<String> headers) throws IOException
    {
        Files.createDirectories(parent);
        final Path dir = Files.createTempDirectory(parent, "te4j-nvrtc-shims");
        for (final String h : headers)
        {
            final Path tmp = dir.resolve(h + ".tmp");
            Files.writeString(tmp, HEADERS.get(h));
            Files.move(tmp, dir.resolve(h), StandardCopyOption.ATOMIC_MOVE);
        }
        return dir;
    }
}
