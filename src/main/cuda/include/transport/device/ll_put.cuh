// ll_put.cuh — the LL ("low-latency") put: a small put whose signal travels inside its data.
// Included at the end of comm_device.cuh (needs mc_route_put); do not include directly.
//
// Why: mc_route_put's stores + mc_signal must order the data before the signal, a system-scope
// release that on NVLink waits until the peer acknowledged the data (~0.3 us per leg on 2xH200,
// docs/history/PERFORMANCE-notebook.md). The LL put needs no ordering at all. Its slot is made of
// 8-byte words, each holding 4 payload bytes (low half) and a 4-byte flag (high half) written by
// ONE single-copy- atomic store (mc_st_relaxed_u64): a word whose flag reads as expected holds its
// payload. The receiver polls the slot's words (mc_ll_wait), not a signal word, and copies the
// payload out. The price: the slot is twice the payload, only half of what crosses the link is
// payload, and a slot holds one message at a time. For small messages where latency rules; NCCL's
// LL protocol makes the same trade.
//
// Rules for the caller:
//   * flags are nonzero (a zeroed slot holds no message) and the same in every word of one
//     message; consecutive messages through one slot use different flags (a round counter);
//   * the sender reuses a slot only after the receiver consumed the previous message (the
//     caller's flow control: the reply of a ping-pong, a credit signal, a barrier);
//   * slot: 8-byte aligned, mc_ll_slot_bytes(bytes) long, in the symmetric window (it is routed
//     like a put's destination). src and dst: any alignment.
// Routes: own rank and P2P peers. An RDMA-only rank returns kMcRdmaUnsupported (a NIC write
// guarantees no order or atomicity between its 8-byte words as seen by a polling GPU).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "comm_device.cuh"

namespace mooncake {
namespace device {

/// Payload bytes per slot word; the other 4 bytes of the word are the flag.
constexpr size_t kMcLlPayloadPerWord = 4;

/// Slot words that carry `bytes` of payload.
MC_HOST_DEVICE inline size_t mc_ll_words(size_t bytes) {
  return (bytes + kMcLlPayloadPerWord - 1) / kMcLlPayloadPerWord;
}

/// Bytes of slot that carry `bytes` of payload (8 per 4 bytes of payload, rounded up).
MC_HOST_DEVICE inline size_t mc_ll_slot_bytes(size_t bytes) { return 8 * mc_ll_words(bytes); }

namespace detail {

/// The payload of word i of an n-byte message at src (the last word zero-padded).
MC_DEVICE_INLINE uint32_t mc_ll_payload(const uint8_t* src, size_t n, size_t i) {
  const size_t at = i * kMcLlPayloadPerWord;
  if (at + kMcLlPayloadPerWord <= n && ((uintptr_t)(src + at) & 3u) == 0) {
    return *(const uint32_t*)(src + at);
  }
  uint32_t v = 0;
  for (size_t b = 0; b < kMcLlPayloadPerWord && at + b < n; ++b)
    v |= (uint32_t)src[at + b] << (8 * b);
  return v;
}

/// Writes the payload of word i (the bytes of it that belong to an n-byte message) to dst.
MC_DEVICE_INLINE void mc_ll_deliver(uint8_t* dst, size_t n, size_t i, uint32_t payload) {
  const size_t at = i * kMcLlPayloadPerWord;
  if (at + kMcLlPayloadPerWord <= n && ((uintptr_t)(dst + at) & 3u) == 0) {
    *(uint32_t*)(dst + at) = payload;
    return;
  }
  for (size_t b = 0; b < kMcLlPayloadPerWord && at + b < n; ++b)
    dst[at + b] = (uint8_t)(payload >> (8 * b));
}

/// Polls *p into *w until its flag is `flag`; false once deadline_ns has passed (the clock is
/// read every 256 polls). One loop: it measured faster than a nested loop with the clock outside
/// (docs/history/PERFORMANCE-notebook.md). ptxas keeps the clock read behind
/// a branch here; in a caller that unrolls this (kUnroll > 1) it was seen to if-convert the test
/// and read %globaltimer on every poll.
MC_DEVICE_INLINE bool mc_ll_poll(const uint64_t* p, uint64_t* w, uint32_t flag,
                                 uint64_t deadline_ns) {
  for (uint32_t polls = 1; (uint32_t)(*w >> 32) != flag; ++polls) {
    if ((polls & 255u) == 0 && mc_globaltimer_ns() > deadline_ns) return false;
    *w = mc_ld_relaxed_u64(p);
  }
  return true;
}

}  // namespace detail

/// One slot word: payload in the low half, flag in the high half.
MC_HOST_DEVICE inline uint64_t mc_ll_word(uint32_t payload, uint32_t flag) {
  return ((uint64_t)flag << 32) | payload;
}

/// Words a participant keeps in flight by default: 1. Small messages (one word per lane) are
/// what the LL put is for, and there a deeper group only grows the code each round runs
/// through. From about 1 KiB on a warp kUnroll = 4 is faster, but there the fenced put+signal
/// already beats any LL (docs/history/PERFORMANCE-notebook.md has the round trips).
constexpr size_t kMcLlUnroll = 1;

/// Participant tid of nthreads (see mc_copy_cooperative) stores its words (tid, tid + nthreads,
/// ...) of the `bytes` at src, tagged with flag, into `routed_slot`: an address mc_route_put
/// returned, resolved once by a loop that sends through the same slot many times. No ordering
/// and no barrier: every word announces itself. kUnroll: words in flight per participant.
template <size_t kUnroll = kMcLlUnroll>
MC_DEVICE_INLINE void mc_ll_store(uint64_t* routed_slot, const void* src, size_t bytes,
                                  uint32_t flag, size_t tid, size_t nthreads) {
  const size_t words = mc_ll_words(bytes);
  for (size_t i = tid; i < words; i += kUnroll * nthreads) {
    uint32_t payload[kUnroll];
    MC_UNROLL for (size_t u = 0; u < kUnroll; ++u) {
      const size_t w = i + u * nthreads;
      payload[u] = w < words ? detail::mc_ll_payload((const uint8_t*)src, bytes, w) : 0;
    }
    MC_UNROLL for (size_t u = 0; u < kUnroll; ++u) {
      const size_t w = i + u * nthreads;
      if (w < words) mc_st_relaxed_u64(routed_slot + w, mc_ll_word(payload[u], flag));
    }
  }
}

/// LL put of `bytes` from src into dst_rank's copy of slot, every word tagged with flag
/// (nonzero). Participant tid of nthreads stores its share; dst_rank has the message once every
/// participant has stored. Returns kMcRouteOk, kMcNoRoute, or kMcRdmaUnsupported (RDMA-only).
MC_DEVICE_INLINE int mc_ll_put(const CommCtx& ctx, int dst_rank, uint64_t* slot, const void* src,
                               size_t bytes, uint32_t flag, size_t tid, size_t nthreads) {
  uint64_t* routed = (uint64_t*)mc_route_put(ctx, dst_rank, slot);
  if (routed == nullptr) return mc_rdma_available(ctx.ibgda) ? kMcRdmaUnsupported : kMcNoRoute;
  mc_ll_store(routed, src, bytes, flag, tid, nthreads);
  return kMcRouteOk;
}

/// Participant tid of nthreads waits until each of its words (tid, tid + nthreads, ...) of the
/// local slot carries flag, then writes their payload bytes to dst. Polls flat out (latency
/// first), reading the clock every 256 polls. Returns whether its words arrived before
/// deadline_ns; when not, *seen (optional) gets the flag last read in the word that did not.
/// The whole message has arrived when every participant returned true (combine with a warp
/// vote or a barrier); a participant without words returns true at once.
template <size_t kUnroll = kMcLlUnroll>
MC_DEVICE_INLINE bool mc_ll_wait(const uint64_t* slot, void* dst, size_t bytes, uint32_t flag,
                                 uint64_t deadline_ns, size_t tid, size_t nthreads,
                                 uint32_t* seen = nullptr) {
  const size_t words = mc_ll_words(bytes);
  for (size_t i = tid; i < words; i += kUnroll * nthreads) {
    uint64_t got[kUnroll];
    MC_UNROLL for (size_t u = 0; u < kUnroll;
                   ++u) {  // one load per word of the group, all in flight
      const size_t w = i + u * nthreads;
      got[u] = w < words ? mc_ld_relaxed_u64(slot + w) : 0;
    }
    MC_UNROLL for (size_t u = 0; u < kUnroll; ++u) {
      const size_t w = i + u * nthreads;
      if (w >= words) break;
      if (!detail::mc_ll_poll(slot + w, &got[u], flag, deadline_ns)) {
        if (seen != nullptr) *seen = (uint32_t)(got[u] >> 32);
        return false;
      }
      detail::mc_ll_deliver((uint8_t*)dst, bytes, w, (uint32_t)got[u]);
    }
  }
  return true;
}

}  // namespace device
}  // namespace mooncake
