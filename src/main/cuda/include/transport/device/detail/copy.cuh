// detail/copy.cuh — a cooperative copy of any size between any two addresses.
//
// Participant `tid` of `nthreads` (a warp: lane/32; a block: threadIdx.x/blockDim.x; a grid:
// global thread id/total threads; on host: 0/1) copies its interleaved share, so the caller picks
// the cooperation level and synchronises afterwards as it needs (no barrier in here).
//
// Alignment: the widest word W in {16, 8, 4, 2, 1} bytes for which dst and src are congruent
// modulo W is used for the body; the bytes before dst reaches W-alignment (head, < W) and after
// the last whole word (tail, < W) are copied byte by byte. 16-byte words go through mc_ld_nc /
// mc_st_na, so the source must not be written while the copy runs (true for a put's source).
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "transport/device/device_ops.cuh"

namespace mooncake {
namespace device {
namespace detail {

template <typename W>
MC_DEVICE_INLINE void mc_copy_words(W* dst, const W* src, size_t nwords, size_t tid,
                                    size_t nthreads) {
  for (size_t i = tid; i < nwords; i += nthreads) {
#if defined(MC_PLATFORM_HOST)
    memcpy(dst + i, src + i, sizeof(W));  // one move; no strict-aliasing question in g++
#else
    dst[i] = src[i];
#endif
  }
}

// 16-byte words: four independent loads in flight per participant before their stores, which
// is what keeps NVLink busy with few threads.
template <>
MC_DEVICE_INLINE void mc_copy_words<mc_int4>(mc_int4* dst, const mc_int4* src, size_t nwords,
                                             size_t tid, size_t nthreads) {
  constexpr size_t kUnroll = 4;
  size_t i = tid;
  for (; i + (kUnroll - 1) * nthreads < nwords; i += kUnroll * nthreads) {
    mc_int4 v[kUnroll];
    for (size_t u = 0; u < kUnroll; ++u) v[u] = mc_ld_nc(src + i + u * nthreads);
    for (size_t u = 0; u < kUnroll; ++u) mc_st_na(dst + i + u * nthreads, v[u]);
  }
  for (; i < nwords; i += nthreads) mc_st_na(dst + i, mc_ld_nc(src + i));
}

// Widest power-of-two word (<= 16) for which both addresses share the same misalignment.
MC_DEVICE_INLINE size_t mc_copy_grain(uintptr_t dst, uintptr_t src) {
  const uintptr_t diff = dst ^ src;
  if ((diff & 15u) == 0) return 16;
  if ((diff & 7u) == 0) return 8;
  if ((diff & 3u) == 0) return 4;
  if ((diff & 1u) == 0) return 2;
  return 1;
}

template <typename W>
MC_DEVICE_INLINE void mc_copy_aligned_body(uint8_t* d, const uint8_t* s, size_t n, size_t tid,
                                           size_t nthreads) {
  const size_t w = sizeof(W);
  size_t head = (w - ((uintptr_t)d & (w - 1))) & (w - 1);
  if (head > n) head = n;
  const size_t nwords = (n - head) / w;
  const size_t body_end = head + nwords * w;
  for (size_t i = tid; i < head; i += nthreads) d[i] = s[i];
  mc_copy_words<W>((W*)(d + head), (const W*)(s + head), nwords, tid, nthreads);
  for (size_t i = body_end + tid; i < n; i += nthreads) d[i] = s[i];
}

}  // namespace detail

/// Copies n bytes from src to dst (non-overlapping); this participant's share only.
MC_DEVICE_INLINE void mc_copy_cooperative(void* dst, const void* src, size_t n, size_t tid,
                                          size_t nthreads) {
  uint8_t* d = (uint8_t*)dst;
  const uint8_t* s = (const uint8_t*)src;
  switch (detail::mc_copy_grain((uintptr_t)d, (uintptr_t)s)) {
    case 16: detail::mc_copy_aligned_body<mc_int4>(d, s, n, tid, nthreads); break;
    case 8: detail::mc_copy_aligned_body<uint64_t>(d, s, n, tid, nthreads); break;
    case 4: detail::mc_copy_aligned_body<uint32_t>(d, s, n, tid, nthreads); break;
    case 2: detail::mc_copy_aligned_body<uint16_t>(d, s, n, tid, nthreads); break;
    default: detail::mc_copy_words<uint8_t>(d, s, n, tid, nthreads); break;
  }
}

}  // namespace device
}  // namespace mooncake
