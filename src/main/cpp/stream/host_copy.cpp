// host_copy.cpp — the body of a put on the host platform, by the tuning knob `hostcopy`
// (te4j/tuning.h): memmove (default), memcpy, or SSE2 non-temporal stores for large copies
// (they write around the cache: the receiver reads the data from memory, not from the sender's
// cache, and the sender's cache keeps its working set). Overlapping ranges (a put to the own
// rank) always use memmove. From 2 x kMinCopyChunk on, the body runs in chunks on up to
// `hostthreads` threads (copy_helpers.h): one core does not saturate memory bandwidth.
#include <stdint.h>
#include <string.h>

#include <cstddef>

#include "stream/copy_helpers.h"
#include "te4j/tuning.h"

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

namespace te4j {
namespace {

constexpr std::size_t kNonTemporalMin = 256 * 1024;

#if defined(__x86_64__)
void copyNonTemporal(uint8_t* d, const uint8_t* s, std::size_t n) {
  // Head up to 16-byte alignment of the destination, then 64 bytes per step.
  const std::size_t head = (16 - ((uintptr_t)d & 15u)) & 15u;
  memcpy(d, s, head);
  d += head;
  s += head;
  n -= head;
  std::size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m128i a = _mm_loadu_si128((const __m128i*)(s + i));
    const __m128i b = _mm_loadu_si128((const __m128i*)(s + i + 16));
    const __m128i c = _mm_loadu_si128((const __m128i*)(s + i + 32));
    const __m128i e = _mm_loadu_si128((const __m128i*)(s + i + 48));
    _mm_stream_si128((__m128i*)(d + i), a);
    _mm_stream_si128((__m128i*)(d + i + 16), b);
    _mm_stream_si128((__m128i*)(d + i + 32), c);
    _mm_stream_si128((__m128i*)(d + i + 48), e);
  }
  memcpy(d + i, s + i, n - i);
  _mm_sfence();  // streaming stores are weakly ordered: complete them before the signal
}
#endif

void copyMemcpy(void* dst, const void* src, std::size_t n) { memcpy(dst, src, n); }
void copyMemmove(void* dst, const void* src, std::size_t n) { memmove(dst, src, n); }

#if defined(__x86_64__)
// Non-temporal from kNonTemporalMin on (per chunk: a split copy's chunks are large anyway).
void copyStreamed(void* dst, const void* src, std::size_t n) {
  if (n >= kNonTemporalMin) {
    copyNonTemporal((uint8_t*)dst, (const uint8_t*)src, n);
  } else {
    memcpy(dst, src, n);
  }
}
#endif

}  // namespace

/// Copies n bytes for a host-platform put (see above) with the stream's `hostcopy` and
/// `hostthreads` knobs (its snapshot, read at enqueue).
void hostPutCopy(void* dst, const void* src, std::size_t n, int mode, int threads) {
  const uintptr_t d = (uintptr_t)dst;
  const uintptr_t s = (uintptr_t)src;
  if (d < s + n && s < d + n) {  // overlap (a put to the own rank): one memmove, never split
    memmove(dst, src, n);
    return;
  }
  CopyBody body = copyMemmove;
  switch (mode) {
    case tuning::kHostMemcpy: body = copyMemcpy; break;
#if defined(__x86_64__)
    case tuning::kHostNonTemporal: body = copyStreamed; break;
#endif
    default: break;
  }
  parallelCopy(dst, src, n, threads, body);
}

}  // namespace te4j
