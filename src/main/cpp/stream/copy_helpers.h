// copy_helpers.h — large host-platform copies split over a few helper threads.
//
// One core's memcpy does not saturate a server's memory bandwidth (2xH200 host: a 64 MiB copy
// runs at 6-8 GB/s on one thread), so a put of several MiB on the host platform copies its
// chunks concurrently: the calling thread (the stream's executor) copies one, process-wide
// helper threads the others, and the call returns once every chunk is done.
#pragma once

#include <cstddef>

namespace te4j {

/// Copies one chunk (non-overlapping ranges).
using CopyBody = void (*)(void* dst, const void* src, std::size_t n);

/// Smallest chunk worth a thread of its own.
constexpr std::size_t kMinCopyChunk = 2u << 20;

/// Copies n bytes from src to dst (ranges must not overlap) with `body`, in up to `threads`
/// chunks of at least kMinCopyChunk run concurrently. Returns after every chunk is copied; the
/// chunks' stores happen before the return (the completion count is mutex-protected), so a
/// release signal issued next orders them for any reader. With threads <= 1, a small n, or when
/// no helper thread can be started, it is one body(dst, src, n) on the calling thread; n == 0
/// copies nothing (body is not called).
void parallelCopy(void* dst, const void* src, std::size_t n, int threads, CopyBody body);

}  // namespace te4j
