// bench/bench_loops.cuh — the device-side loops of te4j-bench, single source: nvcc runs them in
// one kernel per sample (cuda_ping_pong.cu), g++ on the calling thread (host_ping_pong.cpp).
//
// A "side" is one warp on CUDA (lane = threadIdx.x, 32 lanes) and one thread on the host (lane
// 0 of 1). Lane 0 does the waits and the signals; the others only help copy. Every spin is
// bounded by a deadline on mc_globaltimer_ns() and records why it stopped in a BenchLoopResult.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <string>

#include "transport/device/comm_device.cuh"
#include "transport/device/detail/copy.cuh"

namespace te4j {
namespace bench {

/// Why a loop stopped (BenchLoopResult::status).
enum : uint32_t {
  kLoopOk = 0,
  kLoopTimeout = 1,  // a wait passed the deadline: the peer is gone, slow or out of step
  kLoopNoRoute = 2,  // mc_route_put / mc_signal found no route to the peer
};

/// Written by lane 0 when a loop ends; read by the host after the kernel (mapped host memory).
struct BenchLoopResult {
  uint32_t status;
  uint32_t done;      // round trips completed
  uint32_t expected;  // value awaited when a wait timed out
  uint32_t seen;      // last value read then
};

/// The device CommCtx of a window given as plain addresses (no RDMA: a zeroed IbgdaContext).
inline mooncake::device::CommCtx bench_window_ctx(void* local_base, void* available,
                                                  void* peer_ptrs, int rank) {
  mooncake::device::P2PContext p2p;
  p2p.available = (int*)available;
  p2p.peer_ptrs = (void**)peer_ptrs;
  p2p.local_base = local_base;
  mooncake::device::IbgdaContext ibgda = {};
  return mooncake::device::make_comm_ctx(p2p, ibgda, rank);
}

// The warp-level steps of a side; on the host a side is one thread and they vanish.
#if defined(MC_PLATFORM_CUDA)
MC_DEVICE_INLINE void bench_side_sync() { __syncwarp(); }
MC_DEVICE_INLINE uint32_t bench_side_bcast(uint32_t v) { return __shfl_sync(0xffffffffu, v, 0); }
#else
MC_DEVICE_INLINE void bench_side_sync() {}
MC_DEVICE_INLINE uint32_t bench_side_bcast(uint32_t v) { return v; }
#endif

MC_DEVICE_INLINE void bench_record(BenchLoopResult* out, uint32_t status, uint32_t done,
                                   uint32_t expected, uint32_t seen) {
  out->status = status;
  out->done = done;
  out->expected = expected;
  out->seen = seen;
}

/// Handshake before a timed loop: signal the peer's ready word, wait until the own one reaches
/// `expected`. Lane 0 only.
MC_DEVICE_INLINE void bench_meet(const mooncake::device::CommCtx& ctx, int peer, uint32_t* ready,
                                 uint32_t expected, uint64_t deadline, BenchLoopResult* out) {
  using namespace mooncake::device;
  if (mc_signal(ctx, peer, 0, 1, ready, 1u) != kMcRouteOk) {
    bench_record(out, kLoopNoRoute, 0, expected, 0);
    return;
  }
  uint32_t seen = 0;
  if (!mc_wait_signal(ready, expected, deadline, &seen)) {
    bench_record(out, kLoopTimeout, 0, expected, seen);
    return;
  }
  bench_record(out, kLoopOk, 0, expected, seen);
}

/// How a te4j ping-pong side signals (knob signal): release atom, release red (no return value),
/// or mc_signal_set's release store of base + round.
enum BenchSignal : int { kBenchSignalAtom = 0, kBenchSignalRed = 1, kBenchSignalSet = 2 };

/// The ping-pong's wait: mc_wait_signal_spin with kSpin (knob wait=spin), else mc_wait_signal.
template <bool kSpin = false>
MC_DEVICE_INLINE bool bench_wait(const uint32_t* sig, uint32_t expected, uint64_t deadline,
                                 uint32_t* seen) {
  return kSpin ? mooncake::device::mc_wait_signal_spin(sig, expected, deadline, seen)
               : mooncake::device::mc_wait_signal(sig, expected, deadline, seen);
}

/// A relaxed 8-byte store of a payload word to peer-mapped global memory. On CUDA spelled as a
/// global-space store (the routed pointer is generic: a plain C++ store would be a generic ST).
MC_DEVICE_INLINE void bench_store_u64(void* p, uint64_t v) {
#if defined(MC_PLATFORM_CUDA)
  asm volatile("st.relaxed.sys.global.u64 [%0], %1;" : : "l"(p), "l"(v) : "memory");
#else
  *(volatile uint64_t*)p = v;
#endif
}

/// An 8-byte word of a source buffer (8-byte aligned).
MC_DEVICE_INLINE uint64_t bench_load_u64(const void* p) {
#if defined(MC_PLATFORM_CUDA)
  return *(const uint64_t*)p;
#else
  uint64_t v;
  memcpy(&v, p, sizeof(v));
  return v;
#endif
}

/// One side of the te4j ping-pong: per round, put `bytes` from src to the peer's dst, then lane 0
/// signals the peer's sig word (+1 or := base + round, release) and/or waits for its own to
/// reach base + round. The initiator sends first. Variants (te4j/tuning.h): kSpin (knob
/// wait=spin), kSignal (knob signal=atom|red|set).
///
/// How a device-API user writes a latency-critical put+signal :
///   * the routes of the peer's dst and signal word are resolved ONCE, before the loop (what
///     mc_route_put returns does not change while the window lives), so no round pays the two
///     dependent table loads again (every acquire poll invalidates L1 on CUDA: they were L2 trips);
///   * a small put (bytes <= 8 per lane, 8-byte aligned) keeps its payload in registers: each
///     lane loads its 8 bytes once (the source is not written while the loop runs) and stores
///     them every round, so no source load sits on the round's critical path; up to 8 bytes are
///     stored by lane 0 itself, the signalling lane, which then runs the rounds alone (the other
///     lanes return): program order, then the release, no warp sync or shuffle;
///   * the signal is the release add on the resolved word (red.release.sys with kBenchSignalRed)
///     or, kBenchSignalSet, mc_signal_set's release store of the round (the word has one writer,
///     the peer, and counts rounds); the wait an acquire spin (kSpin: no nanosleep).
/// Larger puts copy with the whole side each round (mc_copy_cooperative), warp sync, then lane 0
/// signals. The correctly ordered floor is bench_raw_side<true> (8 bytes + release flag).
template <bool kSpin = false, int kSignal = kBenchSignalAtom>
MC_DEVICE_INLINE void bench_te4j_side(const mooncake::device::CommCtx& ctx, int peer,
                                      bool initiator, void* dst, const void* src, size_t bytes,
                                      uint32_t* sig, uint32_t base, uint32_t iters,
                                      uint64_t deadline, unsigned lane, unsigned lanes,
                                      BenchLoopResult* out) {
  using namespace mooncake::device;
  uint8_t* remote = (uint8_t*)mc_route_put(ctx, peer, dst);
  uint32_t* remote_sig = (uint32_t*)mc_route_put(ctx, peer, sig);
  if (remote == nullptr || remote_sig == nullptr) {  // uniform: every lane computed the same
    if (lane == 0) bench_record(out, kLoopNoRoute, 0, base + 1, 0);
    return;
  }
  const bool in_regs = bytes % 8 == 0 && bytes <= 8 * (size_t)lanes &&
                       (((uintptr_t)remote | (uintptr_t)src) & 7u) == 0;
  const bool stores = in_regs && 8 * (size_t)lane < bytes;
  const uint64_t word = stores ? bench_load_u64((const uint8_t*)src + 8 * (size_t)lane) : 0;
  // Up to 8 bytes are lane 0's work alone: the other lanes leave, and lane 0 runs the rounds
  // without warp shuffles or barriers (uniform: every lane computed the same `solo`).
  const bool solo = in_regs && bytes <= 8;
  if (solo && lane != 0) return;
  for (uint32_t round = 1; round <= iters; ++round) {
    const uint32_t expected = base + round;
    uint32_t failed = 0;
    uint32_t seen = 0;
    if (!initiator) {
      if (lane == 0 && !bench_wait<kSpin>(sig, expected, deadline, &seen)) failed = kLoopTimeout;
      if (!solo) failed = bench_side_bcast(failed);
      if (failed != 0) {
        if (lane == 0) bench_record(out, failed, round - 1, expected, seen);
        return;
      }
    }
    if (in_regs) {
      if (stores) bench_store_u64(remote + 8 * (size_t)lane, word);
      if (bytes > 8) bench_side_sync();  // other lanes' stores before lane 0's release
    } else {
      mc_copy_cooperative(remote, src, bytes, lane, lanes);
      // The lanes' stores happen before lane 0's release add (warp barrier, then release).
      bench_side_sync();
    }
    if (lane == 0) {
      if (kSignal == kBenchSignalSet) {
        mc_st_release_u32(remote_sig, expected);  // mc_signal_set on the resolved word
      } else if (kSignal == kBenchSignalRed) {
        mc_red_release_u32(remote_sig, 1u);
      } else {
        mc_atomic_add_release_u32(remote_sig, 1u);
      }
      if (initiator && !bench_wait<kSpin>(sig, expected, deadline, &seen)) failed = kLoopTimeout;
    }
    if (initiator) {
      if (!solo) failed = bench_side_bcast(failed);
      if (failed != 0) {
        if (lane == 0) bench_record(out, failed, round - 1, expected, seen);
        return;
      }
    }
  }
  if (lane == 0) bench_record(out, kLoopOk, iters, base + iters, base + iters);
}

// Whether every lane of the side passed (CUDA: warp vote; host: the one lane's own).
#if defined(MC_PLATFORM_CUDA)
MC_DEVICE_INLINE bool bench_side_all(bool ok) { return __all_sync(0xffffffffu, ok); }
#else
MC_DEVICE_INLINE bool bench_side_all(bool ok) { return ok; }
#endif

/// One side of the LL ping-pong (transport/device/ll_put.cuh): per round the sender stores the
/// `bytes` from src into the peer's slot as LL words tagged with base + round (its lanes share
/// the words: 8 bytes are two words, lanes 0 and 1, one coalesced store), and the receiver's
/// lanes poll their words of the own slot until each carries that flag, copying the payload to
/// dst. No fence and no separate signal word: each 8-byte word announces its own 4 bytes. The
/// slot's route is resolved once, before the loop. The initiator sends first. A round whose
/// wait fails on any lane stops the loop (warp vote).
MC_DEVICE_INLINE void bench_ll_side(const mooncake::device::CommCtx& ctx, int peer, bool initiator,
                                    uint64_t* slot, void* dst, const void* src, size_t bytes,
                                    uint32_t base, uint32_t iters, uint64_t deadline, unsigned lane,
                                    unsigned lanes, BenchLoopResult* out) {
  using namespace mooncake::device;
  uint64_t* remote = (uint64_t*)mc_route_put(ctx, peer, slot);
  if (remote == nullptr) {  // uniform: every lane computed the same
    if (lane == 0) bench_record(out, kLoopNoRoute, 0, base + 1, 0);
    return;
  }
  for (uint32_t round = 1; round <= iters; ++round) {
    const uint32_t flag = base + round;
    uint32_t seen = 0;
    bool ok = true;
    if (!initiator)
      ok = bench_side_all(mc_ll_wait(slot, dst, bytes, flag, deadline, lane, lanes, &seen));
    if (ok) {
      mc_ll_store(remote, src, bytes, flag, lane, lanes);
      if (initiator)
        ok = bench_side_all(mc_ll_wait(slot, dst, bytes, flag, deadline, lane, lanes, &seen));
    }
    if (!ok) {
      // The lane that failed knows what it saw; lane 0 records (its own view when it failed).
      if (lane == 0) bench_record(out, kLoopTimeout, round - 1, flag, seen);
      return;
    }
  }
  if (lane == 0) bench_record(out, kLoopOk, iters, base + iters, base + iters);
}

/// Spin of the raw baseline: acquire loads, no back-off; the clock is read every 1024 polls.
MC_DEVICE_INLINE bool bench_raw_wait(const uint32_t* flag, uint32_t expected, uint64_t deadline,
                                     uint32_t* seen) {
  using namespace mooncake::device;
  uint32_t v = mc_ld_acquire_u32(flag);
  for (uint32_t polls = 1; !mc_signal_reached(v, expected); ++polls) {
    if ((polls & 1023u) == 0 && mc_globaltimer_ns() > deadline) {
      *seen = v;
      return false;
    }
    v = mc_ld_acquire_u32(flag);
  }
  *seen = v;
  return true;
}

/// One side of the raw flag ping-pong (one thread): store base + round to the peer's flag with
/// release order, spin with acquire loads on the own flag. No te4j routing, no data.
/// kData (knob rawdata=1): first a plain 8-byte store of the round to peer_data (another line of
/// the peer's window), which the release then orders before the flag: the least a correctly
/// ordered put(8 B)+signal can cost, since the release must wait for that store to complete.
template <bool kData = false>
MC_DEVICE_INLINE void bench_raw_side(uint32_t* flag, uint32_t* peer_flag, bool initiator,
                                     uint32_t base, uint32_t iters, uint64_t deadline,
                                     BenchLoopResult* out, uint64_t* peer_data = nullptr) {
  using namespace mooncake::device;
  for (uint32_t round = 1; round <= iters; ++round) {
    const uint32_t expected = base + round;
    uint32_t seen = 0;
    if (!initiator && !bench_raw_wait(flag, expected, deadline, &seen)) {
      bench_record(out, kLoopTimeout, round - 1, expected, seen);
      return;
    }
    if (kData) *(volatile uint64_t*)peer_data = (uint64_t)expected;
    mc_st_release_u32(peer_flag, expected);
    if (initiator && !bench_raw_wait(flag, expected, deadline, &seen)) {
      bench_record(out, kLoopTimeout, round - 1, expected, seen);
      return;
    }
  }
  bench_record(out, kLoopOk, iters, base + iters, base + iters);
}

/// Host side, both platforms: why the LL ping-pong cannot run with these arguments, or nullptr.
inline const char* bench_ll_args_error(const void* slot, const void* dst, const void* src,
                                       size_t bytes) {
  if (slot == nullptr || dst == nullptr || src == nullptr || bytes == 0) {
    return "LL ping-pong: null buffer or zero bytes";
  }
  if (((uintptr_t)slot & 7u) != 0) return "LL ping-pong: the slot is not 8-byte aligned";
  return nullptr;
}

/// Host-side text of a failed loop, for lastError(): what stopped, at which round, and why.
inline std::string bench_loop_failure(const char* what, const BenchLoopResult& r) {
  std::string m = std::string(what) + ": ";
  if (r.status == kLoopTimeout) {
    m += "timed out after " + std::to_string(r.done) +
         " round trips waiting for the word to reach " + std::to_string(r.expected) +
         " (it holds " + std::to_string(r.seen) +
         "): the peer is gone, slow, or running another case";
  } else if (r.status == kLoopNoRoute) {
    m += "no route to the peer (not P2P-mapped in this window)";
  } else {
    m += "the loop did not report (status " + std::to_string(r.status) + ")";
  }
  return m;
}

}  // namespace bench
}  // namespace te4j
