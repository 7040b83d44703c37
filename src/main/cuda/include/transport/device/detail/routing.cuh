// detail/routing.cuh — which path reaches a rank, and the signal primitives built on it.
// Included at the end of comm_device.cuh (needs CommCtx); do not include directly.
//
// Route of a symmetric address for dst_rank (its McRankRoute in the context, mc_rank_route):
//   own rank              the local address itself
//   P2P-available peer    the peer-mapped address (NVLink / shared-memory segment)
//   anything else         RDMA (IBGDA): mc_route_put returns nullptr and the caller posts a WQE
//
// Two signal families, told apart by the word's type (docs/DEVICE_API.md has the table):
//   te4j's, on uint32_t words, returning a status: a release-ordered 32-bit atomic add on the
//     destination word on every route (mc_signal_set: a release store instead); waiters compare
//     wrap-aware with mc_signal_reached.
//   upstream Mooncake's, on int words, returning nothing: mc_signal / mc_red_add STORE val with
//     release order on the own rank and P2P peers and ADD it over RDMA (one writer per word
//     makes the two agree); a failed post goes to the context's error record.
#pragma once

#include <stdint.h>

#include "transport/device/comm_device.cuh"

namespace mooncake {
namespace device {

/// Status of mc_signal / mc_red_add (positive; the RDMA route adds negative kMcRdma* codes).
enum : int {
  kMcRouteOk = 0,
  kMcNoRoute = 1,          // rank neither local, P2P-mapped nor reachable over RDMA
  kMcRdmaUnsupported = 2,  // only RDMA reaches the rank and this operation has no RDMA path
};

/// Upstream's name of mc_p2p_available on a CommCtx.
MC_DEVICE_INLINE bool mc_comm_p2p_available(const CommCtx& ctx, int dst_rank) {
  return mc_p2p_available(ctx.p2p, dst_rank);
}

/// Upstream's name of mc_p2p_peer_ptr on a CommCtx.
MC_DEVICE_INLINE void* mc_comm_peer_ptr(const CommCtx& ctx, int dst_rank, const void* local_ptr) {
  return mc_p2p_peer_ptr(ctx.p2p, dst_rank, local_ptr);
}

/// The address to write dst_rank's copy of recv_ptr with plain stores, or nullptr when only
/// RDMA reaches dst_rank. The rank's route comes from the context (mc_rank_route); a mapped
/// route whose table entry is gone (a closed window) reaches nobody.
MC_DEVICE_INLINE void* mc_route_put(const CommCtx& ctx, int dst_rank, void* recv_ptr) {
  if (dst_rank == ctx.rank) return recv_ptr;
  if (!mc_route_is_mapped(mc_rank_route(ctx, dst_rank)) || ctx.p2p.peer_ptrs == nullptr ||
      ctx.p2p.peer_ptrs[dst_rank] == nullptr) {
    return nullptr;
  }
  return mc_p2p_peer_ptr(ctx.p2p, dst_rank, recv_ptr);
}

/// The RDMA branch of an atomic add: a hook the IBGDA header fills. When
/// ibgda_device.cuh defines MC_HAVE_RDMA_ATOMIC_ADD it provides
///   int mc_rdma_atomic_add(const IbgdaContext&, int channel, int dst_rank, int qps_per_rank,
///                          uint32_t* local_ptr, uint32_t val)   // kMcRdmaOk (0) = posted
/// whose failures are negative kMcRdma* codes (ibgda/status.cuh); without it an RDMA-only rank
/// reports kMcRdmaUnsupported.
MC_DEVICE_INLINE int mc_rdma_atomic_add_route(const CommCtx& ctx, int dst_rank, int channel,
                                              int qps_per_rank, uint32_t* ptr, uint32_t val) {
  if (!mc_rdma_available(ctx.ibgda)) return kMcNoRoute;
#if defined(MC_HAVE_RDMA_ATOMIC_ADD)
  return mc_rdma_atomic_add(ctx.ibgda, channel, dst_rank, qps_per_rank, ptr, val);
#else
  (void)dst_rank;
  (void)channel;
  (void)qps_per_rank;
  (void)ptr;
  (void)val;
  return kMcRdmaUnsupported;
#endif
}

/// Release-ordered 32-bit atomic add of val on dst_rank's copy of ptr (any 32-bit word).
/// Everything this thread wrote (and observed) before is visible to whoever acquires the word.
/// Returns kMcRouteOk (0); kMcNoRoute / kMcRdmaUnsupported (> 0); or, on the RDMA route, the
/// negative kMcRdma* status of mc_rdma_atomic_add. channel / qps_per_rank pick the RDMA QP
/// (ignored on self/P2P).
MC_DEVICE_INLINE int mc_red_add(const CommCtx& ctx, int dst_rank, int channel, int qps_per_rank,
                                uint32_t* ptr, uint32_t val) {
  // NIC atomics are not atomic against GPU atomics: a NIC-owned word is added to by the NIC only.
  uint32_t* target = mc_rdma_owns_atomics(ctx.ibgda, dst_rank)
                         ? nullptr
                         : (uint32_t*)mc_route_put(ctx, dst_rank, ptr);
  if (target != nullptr) {
    mc_atomic_add_release_u32(target, val);
    return kMcRouteOk;
  }
  return mc_rdma_atomic_add_route(ctx, dst_rank, channel, qps_per_rank, ptr, val);
}

/// The signal of a put: the same operation as mc_red_add, on a signal word.
MC_DEVICE_INLINE int mc_signal(const CommCtx& ctx, int dst_rank, int channel, int qps_per_rank,
                               uint32_t* sig_ptr, uint32_t val) {
  return mc_red_add(ctx, dst_rank, channel, qps_per_rank, sig_ptr, val);
}

/// mc_red_add without a return value on the P2P route (PTX red.release.sys: the issuing thread
/// does not wait for the old value). Same ordering and status codes as mc_red_add.
MC_DEVICE_INLINE int mc_red_add_noret(const CommCtx& ctx, int dst_rank, int channel,
                                      int qps_per_rank, uint32_t* ptr, uint32_t val) {
  uint32_t* target = mc_rdma_owns_atomics(ctx.ibgda, dst_rank)
                         ? nullptr
                         : (uint32_t*)mc_route_put(ctx, dst_rank, ptr);
  if (target != nullptr) {
    mc_red_release_u32(target, val);
    return kMcRouteOk;
  }
  return mc_rdma_atomic_add_route(ctx, dst_rank, channel, qps_per_rank, ptr, val);
}

/// mc_signal through mc_red_add_noret.
MC_DEVICE_INLINE int mc_signal_noret(const CommCtx& ctx, int dst_rank, int channel,
                                     int qps_per_rank, uint32_t* sig_ptr, uint32_t val) {
  return mc_red_add_noret(ctx, dst_rank, channel, qps_per_rank, sig_ptr, val);
}

/// The "set" signal (NVSHMEM's SIGNAL_SET): a release-ordered store of `value` into dst_rank's
/// copy of sig_ptr instead of an add. Everything this thread wrote (and observed) before is
/// visible to whoever acquires the new value. For a single writer of the word that counts in
/// steps (round, sequence number), so waiters keep using mc_wait_signal. On NVLink it costs the
/// same as the release add (docs/history/PERFORMANCE-notebook.md); it suits words whose value is
/// known, not counted. Self and P2P routes; an RDMA-only rank returns kMcRdmaUnsupported (the IBGDA
/// path signals with atomics only) and kMcNoRoute as mc_signal does.
MC_DEVICE_INLINE int mc_signal_set(const CommCtx& ctx, int dst_rank, uint32_t* sig_ptr,
                                   uint32_t value) {
  uint32_t* target = (uint32_t*)mc_route_put(ctx, dst_rank, sig_ptr);
  if (target != nullptr) {
    mc_st_release_u32(target, value);
    return kMcRouteOk;
  }
  return mc_rdma_available(ctx.ibgda) ? kMcRdmaUnsupported : kMcNoRoute;
}

/// Text of a mc_signal / mc_red_add status, for host-side error messages.
MC_HOST_DEVICE inline const char* mc_route_status_text(int status) {
  switch (status) {
    case kMcRouteOk: return "ok";
    case kMcNoRoute: return "not P2P-available and no RDMA context";
    case kMcRdmaUnsupported: return "RDMA-only rank; this operation has no RDMA path in this build";
    case kMcRdmaInvalid: return "RDMA: no QP for this rank/channel";
    case kMcRdmaTimeout:
      return "RDMA: timed out on the QP lock, a send-ring slot or the completions (quiet)";
    case kMcRdmaQpError: return "RDMA: the QP is in the error state";
    case kMcRdmaFatal: return "RDMA: unexpected completion (fatal)";
  }
  return "unknown route status";
}

/// value >= expected modulo 2^32: true while value is at most 2^31 - 1 ahead of expected, so
/// counters may wrap as long as waiters stay within half the range of the writers.
MC_HOST_DEVICE inline bool mc_signal_reached(uint32_t value, uint32_t expected) {
  return (int32_t)(value - expected) >= 0;
}

/// Spins (acquire loads) until the local *sig_ptr reaches expected or mc_globaltimer_ns() passes
/// deadline_ns. Returns whether it was reached; *seen (optional) receives the last value read.
/// Checks at least once, even with a deadline in the past.
MC_DEVICE_INLINE bool mc_wait_signal(const uint32_t* sig_ptr, uint32_t expected,
                                     uint64_t deadline_ns, uint32_t* seen = nullptr) {
  uint32_t v = mc_ld_acquire_u32(sig_ptr);
  // The clock is read every 64 polls: it is far slower than the load it bounds.
  for (uint32_t polls = 1; !mc_signal_reached(v, expected); ++polls) {
    if ((polls & 63u) == 0 && mc_globaltimer_ns() > deadline_ns) {
      if (seen != nullptr) *seen = v;
      return false;
    }
    mc_pause();
    v = mc_ld_acquire_u32(sig_ptr);
  }
  if (seen != nullptr) *seen = v;
  return true;
}

/// mc_wait_signal for latency-critical waits: polls flat out (no mc_pause between polls), reading
/// the clock every 256 polls. Same contract and bound as mc_wait_signal; it keeps one SM
/// sub-partition (CUDA) or one core (host) busy while it waits.
MC_DEVICE_INLINE bool mc_wait_signal_spin(const uint32_t* sig_ptr, uint32_t expected,
                                          uint64_t deadline_ns, uint32_t* seen = nullptr) {
  uint32_t v = mc_ld_acquire_u32(sig_ptr);
  for (uint32_t polls = 1; !mc_signal_reached(v, expected); ++polls) {
    if ((polls & 255u) == 0 && mc_globaltimer_ns() > deadline_ns) {
      if (seen != nullptr) *seen = v;
      return false;
    }
    v = mc_ld_acquire_u32(sig_ptr);
  }
  if (seen != nullptr) *seen = v;
  return true;
}

// ---------------------------------------------------------------------------------------------
// Upstream Mooncake's CommCtx-level RDMA put and int-word signals (semantics in the file comment).

/// The symmetric base of a context's RDMA offsets: te4j's local_base, else p2p.local_base
/// (upstream computes offsets from the latter).
MC_DEVICE_INLINE const void* mc_comm_rdma_base(const CommCtx& ctx) {
  return ctx.ibgda.local_base != nullptr ? ctx.ibgda.local_base : ctx.p2p.local_base;
}

/// dst_rank's address of ptr (a local symmetric address) for upstream's functions.
MC_DEVICE_INLINE uint64_t mc_comm_remote_addr(const CommCtx& ctx, int dst_rank, const void* ptr) {
  return ctx.ibgda.raddrs[dst_rank] +
         ((uint64_t)(uintptr_t)ptr - (uint64_t)(uintptr_t)mc_comm_rdma_base(ctx));
}

/// Upstream's RDMA put: lane 0 posts an RDMA WRITE of nbytes from send_ptr to dst_rank's copy of
/// recv_ptr (a local symmetric address) on the QP of (dst_rank, channel) (mc_ibgda_channel);
/// other lanes return. Call it where mc_route_put returned nullptr. A failed post, or a rank no
/// route reaches, goes to the error record.
MC_DEVICE_INLINE void mc_rdma_put(const CommCtx& ctx, int channel, int dst_rank, int qps_per_rank,
                                  const void* send_ptr, void* recv_ptr, uint32_t nbytes,
                                  int lane_id) {
  if (lane_id != 0) return;
  IbgdaQp* qp = mc_ibgda_channel(ctx.ibgda, channel, dst_rank, qps_per_rank);
  int status = mc_rdma_available(ctx.ibgda) ? (int)kMcRdmaInvalid : (int)kMcNoRoute;
  if (qp != nullptr && ctx.ibgda.raddrs != nullptr && ctx.ibgda.rkeys != nullptr) {
    if (nbytes == 0) return;
    status = ibgda_post_write(qp, (uint64_t)(uintptr_t)send_ptr, mc_ibgda_lkey(ctx.ibgda, ctx.rank),
                              mc_comm_remote_addr(ctx, dst_rank, recv_ptr),
                              ctx.ibgda.rkeys[dst_rank], nbytes, mc_rdma_deadline(ctx.ibgda));
  }
  if (status != kMcRdmaOk) {
    mc_record_post_failure(mc_error_record_of(ctx.ibgda, qp), status, dst_rank, kMcOpRdmaWrite);
  }
}

/// Upstream's signal on an int word: a release store of val into dst_rank's copy of sig_ptr on
/// the own rank and P2P peers; over RDMA a 32-bit atomic add of val on the QP of (dst_rank,
/// channel), after that QP's earlier requests. A failed post, or a rank no route reaches, goes
/// to the error record.
MC_DEVICE_INLINE void mc_signal(const CommCtx& ctx, int dst_rank, int channel, int qps_per_rank,
                                int* sig_ptr, int32_t val) {
  int* target = (int*)mc_route_put(ctx, dst_rank, sig_ptr);
  if (target != nullptr) {
    mc_st_release(target, val);
    return;
  }
  IbgdaQp* qp = mc_ibgda_channel(ctx.ibgda, channel, dst_rank, qps_per_rank);
  int status = mc_rdma_available(ctx.ibgda) ? (int)kMcRdmaInvalid : (int)kMcNoRoute;
  if (qp != nullptr && ctx.ibgda.raddrs != nullptr && ctx.ibgda.rkeys != nullptr) {
    status = ibgda_post_atomic_add(qp, mc_comm_remote_addr(ctx, dst_rank, sig_ptr),
                                   ctx.ibgda.rkeys[dst_rank], (uint32_t)val,
                                   mc_rdma_deadline(ctx.ibgda));
  }
  if (status != kMcRdmaOk) {
    mc_record_post_failure(mc_error_record_of(ctx.ibgda, qp), status, dst_rank,
                           status == kMcNoRoute ? kMcOpSignalNoRoute : kMcOpRdmaAtomicAdd);
  }
}

/// Upstream's mc_red_add on an int word: the same operation as its mc_signal.
MC_DEVICE_INLINE void mc_red_add(const CommCtx& ctx, int dst_rank, int channel, int qps_per_rank,
                                 int* sig_ptr, int32_t val) {
  mc_signal(ctx, dst_rank, channel, qps_per_rank, sig_ptr, val);
}

}  // namespace device
}  // namespace mooncake
