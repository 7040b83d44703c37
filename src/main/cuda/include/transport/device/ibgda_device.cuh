// ibgda_device.cuh — the RDMA (IBGDA) part of the device context and the device-side RDMA
// primitives: mc_rdma_put, mc_rdma_atomic_add (the RDMA branch of mc_signal / mc_red_add) and
// mc_rdma_quiet. Single source: g++ (host platform, executor threads) and nvcc.
//
// A zeroed IbgdaContext means "no RDMA route". RdmaTransport::fillIbgdaContext fills it.
// Upstream Mooncake's kernels fill only its first five fields (upstream's names) and leave
// te4j's zero. Upstream's functions (mc_ibgda_*, and mc_rdma_put / the int* mc_signal on a
// CommCtx in detail/routing.cuh) then derive what they need: the QP stride from the caller's
// qps_per_rank, the local key from rkeys[own rank] (upstream's convention), the symmetric base
// from p2p.local_base. te4j's status-returning functions need a context te4j filled and return
// kMcRdmaInvalid on others. Both bound their waits by kMcDefaultTimeoutNs when timeout_ns is 0.
// QP of (dst_rank, channel): qps[dst_rank * qps_per_rank + channel % qps_per_rank]. Requests on
// one QP execute in order at the responder (a signal after a put on the same channel is never
// visible before the put's data); across channels, order needs mc_rdma_quiet.
//
// Atomics and transports: a ConnectX atomic is atomic only against atomics through the same
// adapter, not against a GPU's atom.add on the same word. With kIbgdaAtomicsViaNic (the mlx5
// backend's default) every add on a rank with a connected QP goes through the NIC, the own
// rank's and P2P peers' included (own rank: the loopback QP), so a signal word never mixes
// the two. Without it (TE4J_RDMA_ATOMICS=local, and the software NIC, whose atomics are
// system-scope GPU/CPU atomics) self and P2P adds are load/store atomics, and a word must then
// have writers on one transport only.
#pragma once

#include <stdint.h>

#include "platform.cuh"
#include "device_ops.cuh"
#include "transport/device/ibgda/completion.cuh"
#include "transport/device/ibgda/doorbell.cuh"
#include "transport/device/ibgda/error_record.cuh"
#include "transport/device/ibgda/mlx5_defs.cuh"
#include "transport/device/ibgda/qp_context.cuh"
#include "transport/device/ibgda/qp_lock.cuh"
#include "transport/device/ibgda/status.cuh"
#include "transport/device/ibgda/wqe_builders.cuh"

namespace mooncake {
namespace device {

struct IbgdaContext {
  // Upstream Mooncake's fields, in its order.
  union {
    mlx5gda_qp_devctx* qp_devctxs;  // QP contexts [num_ranks * qps_per_rank], platform memory
    void* qps;                      // te4j's name of the same table
  };
  const uint64_t* raddrs;          // remote base address of each rank's registered buffer
  const uint32_t* rkeys;           // remote key of each rank's registered buffer
  const void* local_atomic_base;   // upstream's atomic-result scratch (te4j: per-QP scratch)
  const void* remote_atomic_base;  // upstream's symmetric signal base (te4j: unused)
  // te4j's fields; 0 in a context built the upstream way (see the file comment).
  void* local_base;             // local registered buffer (symmetric offsets are relative to it)
  int num_ranks;                // 0: unknown, dst_rank is not range-checked
  int qps_per_rank;             // the table's stride; 0: the caller's qps_per_rank
  uint32_t lkey;                // local key of the registered buffer (sources of puts)
  uint32_t flags;               // kIbgda* bits
  uint64_t timeout_ns;          // bound of every device-side wait: QP lock, ring slot, quiet
  McErrorRecord* error_record;  // failures of the void (upstream) functions; see error_record.cuh
};

/// Where a failed post of a void function goes: the context's record, else the one the QP
/// table's transport gave its QPs (the QP of the post, or the table's first when the index was
/// out of range), else nowhere (error_record.cuh: trap on CUDA).
MC_DEVICE_INLINE McErrorRecord* mc_error_record_of(const IbgdaContext& ibgda, const IbgdaQp* qp);

/// The bound of device-side waits when a context carries none (as te4j's RdmaTransport's default).
constexpr uint64_t kMcDefaultTimeoutNs = 10000000000ull;

MC_DEVICE_INLINE bool mc_rdma_available(const IbgdaContext& ibgda) { return ibgda.qps != nullptr; }

MC_DEVICE_INLINE McErrorRecord* mc_error_record_of(const IbgdaContext& ibgda, const IbgdaQp* qp) {
  if (ibgda.error_record != nullptr) return ibgda.error_record;
  if (qp == nullptr) qp = (const IbgdaQp*)ibgda.qps;
  return qp != nullptr ? qp->error_record : nullptr;
}

/// IbgdaContext::flags: adds on any rank with a connected QP are posted to the NIC (see above).
constexpr uint32_t kIbgdaAtomicsViaNic = 1u;

/// Whether an add on dst_rank's words must go through the NIC although a load/store route may
/// exist: kIbgdaAtomicsViaNic is set and dst_rank has a connected QP (a non-zero rkey).
MC_DEVICE_INLINE bool mc_rdma_owns_atomics(const IbgdaContext& ibgda, int dst_rank) {
  return (ibgda.flags & kIbgdaAtomicsViaNic) != 0 && ibgda.qps != nullptr && dst_rank >= 0 &&
         dst_rank < ibgda.num_ranks && ibgda.rkeys[dst_rank] != 0;
}

/// The QP carrying (dst_rank, channel), or nullptr when out of range. qps_per_rank must be
/// 1 .. ibgda.qps_per_rank (a kernel may spread over fewer QPs than were created). te4j's own
/// functions need a context te4j filled (num_ranks, qps_per_rank); upstream's derive them
/// (mc_ibgda_channel).
MC_DEVICE_INLINE IbgdaQp* mc_rdma_qp(const IbgdaContext& ibgda, int channel, int dst_rank,
                                     int qps_per_rank) {
  if (ibgda.qps == nullptr || dst_rank < 0 || dst_rank >= ibgda.num_ranks || channel < 0 ||
      qps_per_rank <= 0 || qps_per_rank > ibgda.qps_per_rank)
    return nullptr;
  return (IbgdaQp*)ibgda.qps + (dst_rank * ibgda.qps_per_rank + channel % qps_per_rank);
}

/// Upstream's QP choice: table[dst_rank * stride + channel % qps_per_rank], stride being the
/// table's shape (ibgda.qps_per_rank) where te4j filled it, else the caller's qps_per_rank
/// (upstream's indexing); dst_rank bounded by num_ranks where known. nullptr when out of range.
MC_DEVICE_INLINE IbgdaQp* mc_ibgda_channel(const IbgdaContext& ibgda, int channel, int dst_rank,
                                           int qps_per_rank) {
  if (ibgda.qps == nullptr || dst_rank < 0 || channel < 0 || qps_per_rank <= 0) return nullptr;
  if (ibgda.num_ranks > 0 && dst_rank >= ibgda.num_ranks) return nullptr;
  if (ibgda.qps_per_rank > 0 && qps_per_rank > ibgda.qps_per_rank) return nullptr;
  const int stride = ibgda.qps_per_rank > 0 ? ibgda.qps_per_rank : qps_per_rank;
  return (IbgdaQp*)ibgda.qps + (dst_rank * stride + channel % qps_per_rank);
}

/// dst_rank's address of a local symmetric address.
MC_DEVICE_INLINE uint64_t mc_rdma_remote_addr(const IbgdaContext& ibgda, int dst_rank,
                                              const void* local_ptr) {
  return ibgda.raddrs[dst_rank] +
         ((uint64_t)(uintptr_t)local_ptr - (uint64_t)(uintptr_t)ibgda.local_base);
}

MC_DEVICE_INLINE uint64_t mc_rdma_deadline(const IbgdaContext& ibgda) {
  return mc_globaltimer_ns() + (ibgda.timeout_ns != 0 ? ibgda.timeout_ns : kMcDefaultTimeoutNs);
}

/// Posts the WQEs of one RDMA transfer of nbytes between laddr and raddr on qp, split at 1 GiB
/// into one WQE per chunk, ringing the doorbell once (or whenever the ring fills). Takes and
/// releases the QP lock. build(wqe, index, laddr, raddr, length) writes one chunk's WQE into the
/// WQEBB at wqe and returns its doorbell word (the builders of wqe_builders.cuh).
template <typename BuildWqe>
MC_DEVICE_INLINE int ibgda_post_chunked(IbgdaQp* qp, uint64_t laddr, uint64_t raddr,
                                        uint64_t nbytes, uint64_t deadline, BuildWqe build) {
  if (!ibgda_lock(&qp->lock, deadline)) return kMcRdmaTimeout;
  int status = qp->err_count != 0 ? kMcRdmaQpError : kMcRdmaOk;
  uint64_t last = 0;  // doorbell word of the last WQE not yet rung (0: none; a word is never 0)
  while (status == kMcRdmaOk && nbytes > 0) {
    status = ibgda_wait_ring_slot(qp, deadline);
    if (status != kMcRdmaOk) break;
    const uint64_t chunk = nbytes < mlx5::kMaxMessageBytes ? nbytes : mlx5::kMaxMessageBytes;
    void* wqe = qp->sq_buf + (size_t)(qp->sq_pi & qp->sq_mask) * mlx5::kSendWqeBB;
    last = build(wqe, (uint16_t)qp->sq_pi, laddr, raddr, (uint32_t)chunk);
    ++qp->sq_pi;
    raddr += chunk;
    laddr += chunk;
    nbytes -= chunk;
    // A full ring needs its doorbell before waiting for completions of the WQEs it holds.
    if (nbytes > 0 && qp->sq_pi - qp->sq_ci > qp->sq_mask) {
      ibgda_ring_doorbell(qp, last);
      last = 0;
    }
  }
  if (last != 0) ibgda_ring_doorbell(qp, last);
  ibgda_unlock(&qp->lock);
  return status;
}

/// Posts RDMA WRITEs of nbytes from laddr (lkey) to raddr (rkey) on qp (ibgda_post_chunked).
MC_DEVICE_INLINE int ibgda_post_write(IbgdaQp* qp, uint64_t laddr, uint32_t lkey, uint64_t raddr,
                                      uint32_t rkey, uint64_t nbytes, uint64_t deadline) {
  const uint32_t qpn = qp->qpn;
  return ibgda_post_chunked(qp, laddr, raddr, nbytes, deadline,
                            [=](void* wqe, uint16_t index, uint64_t la, uint64_t ra, uint32_t n) {
                              return ibgda_build_rdma_write(wqe, index, qpn, ra, rkey, la, lkey, n);
                            });
}

/// Posts RDMA READs of nbytes from raddr (rkey) into laddr (lkey) on qp (ibgda_post_chunked).
MC_DEVICE_INLINE int ibgda_post_read(IbgdaQp* qp, uint64_t laddr, uint32_t lkey, uint64_t raddr,
                                     uint32_t rkey, uint64_t nbytes, uint64_t deadline) {
  const uint32_t qpn = qp->qpn;
  return ibgda_post_chunked(qp, laddr, raddr, nbytes, deadline,
                            [=](void* wqe, uint16_t index, uint64_t la, uint64_t ra, uint32_t n) {
                              return ibgda_build_rdma_read(wqe, index, qpn, ra, rkey, la, lkey, n);
                            });
}

/// Posts a 32-bit atomic add of value on raddr (rkey) on qp, as ATOMIC_MASKED_FA (opcode 0x15,
/// opmod 0x08, field boundary 0), the fetched value landing in the QP's scratch word.
MC_DEVICE_INLINE int ibgda_post_atomic_add(IbgdaQp* qp, uint64_t raddr, uint32_t rkey,
                                           uint32_t value, uint64_t deadline) {
  if (!ibgda_lock(&qp->lock, deadline)) return kMcRdmaTimeout;
  int status = qp->err_count != 0 ? kMcRdmaQpError : ibgda_wait_ring_slot(qp, deadline);
  if (status == kMcRdmaOk) {
    void* wqe = qp->sq_buf + (size_t)(qp->sq_pi & qp->sq_mask) * mlx5::kSendWqeBB;
    const uint64_t word = ibgda_build_masked_fa32(wqe, (uint16_t)qp->sq_pi, qp->qpn, raddr, rkey,
                                                  qp->scratch_addr, qp->scratch_lkey, value, 0u);
    ++qp->sq_pi;
    ibgda_ring_doorbell(qp, word);
  }
  ibgda_unlock(&qp->lock);
  return status;
}

/// Posts an RDMA WRITE of nbytes from send_ptr (local, inside the registered buffer) to
/// dst_rank's copy of recv_ptr (a local symmetric address). Non-blocking: completion is
/// observed by mc_rdma_quiet. All lanes of a warp may call it with the same arguments: lane 0
/// posts, the others return kMcRdmaOk at once. Messages over 1 GiB are split. Returns kMcRdmaOk
/// or a negative kMcRdma* status (meaningful on lane 0).
MC_DEVICE_INLINE int mc_rdma_put(const IbgdaContext& ibgda, int channel, int dst_rank,
                                 int qps_per_rank, const void* send_ptr, void* recv_ptr,
                                 uint64_t nbytes, int lane_id) {
  if (lane_id != 0 || nbytes == 0) return kMcRdmaOk;
  IbgdaQp* qp = mc_rdma_qp(ibgda, channel, dst_rank, qps_per_rank);
  if (qp == nullptr) return kMcRdmaInvalid;
  return ibgda_post_write(qp, (uint64_t)(uintptr_t)send_ptr, ibgda.lkey,
                          mc_rdma_remote_addr(ibgda, dst_rank, recv_ptr), ibgda.rkeys[dst_rank],
                          nbytes, mc_rdma_deadline(ibgda));
}

/// Posts an RDMA READ of nbytes from src_rank's copy of remote_ptr (a local symmetric address)
/// into recv_ptr (local, inside the registered buffer). Non-blocking like mc_rdma_put: the bytes
/// are in recv_ptr once mc_rdma_quiet returns kMcRdmaOk for the channel. Lane 0 posts.
MC_DEVICE_INLINE int mc_rdma_get(const IbgdaContext& ibgda, int channel, int src_rank,
                                 int qps_per_rank, void* recv_ptr, const void* remote_ptr,
                                 uint64_t nbytes, int lane_id) {
  if (lane_id != 0 || nbytes == 0) return kMcRdmaOk;
  IbgdaQp* qp = mc_rdma_qp(ibgda, channel, src_rank, qps_per_rank);
  if (qp == nullptr) return kMcRdmaInvalid;
  return ibgda_post_read(qp, (uint64_t)(uintptr_t)recv_ptr, ibgda.lkey,
                         mc_rdma_remote_addr(ibgda, src_rank, remote_ptr), ibgda.rkeys[src_rank],
                         nbytes, mc_rdma_deadline(ibgda));
}
#define MC_HAVE_RDMA_GET 1

/// The RDMA branch of mc_signal / mc_red_add: a 32-bit atomic add of `value` on dst_rank's copy
/// of local_ptr (a local symmetric address, 4-byte aligned), posted as ATOMIC_MASKED_FA
/// (opcode 0x15, opmod 0x08, field boundary 0). Executed after every earlier request of the
/// same QP. Non-blocking; returns kMcRdmaOk when posted.
MC_DEVICE_INLINE int mc_rdma_atomic_add(const IbgdaContext& ibgda, int channel, int dst_rank,
                                        int qps_per_rank, uint32_t* local_ptr, uint32_t value) {
  IbgdaQp* qp = mc_rdma_qp(ibgda, channel, dst_rank, qps_per_rank);
  if (qp == nullptr) return kMcRdmaInvalid;
  return ibgda_post_atomic_add(qp, mc_rdma_remote_addr(ibgda, dst_rank, local_ptr),
                               ibgda.rkeys[dst_rank], value, mc_rdma_deadline(ibgda));
}
#define MC_HAVE_RDMA_ATOMIC_ADD 1

/// Waits (bounded by ibgda.timeout_ns) until every request posted so far on the QP of
/// (dst_rank, channel) has completed. kMcRdmaOk; kMcRdmaQpError when the QP saw an error CQE
/// (details: RdmaTransport::queryQpError); kMcRdmaTimeout; kMcRdmaFatal.
MC_DEVICE_INLINE int mc_rdma_quiet(const IbgdaContext& ibgda, int channel, int dst_rank,
                                   int qps_per_rank) {
  IbgdaQp* qp = mc_rdma_qp(ibgda, channel, dst_rank, qps_per_rank);
  if (qp == nullptr) return kMcRdmaInvalid;
  const uint64_t deadline = mc_rdma_deadline(ibgda);
  if (!ibgda_lock(&qp->lock, deadline)) return kMcRdmaTimeout;
  const uint32_t target = qp->sq_pi;  // everything posted (and rung) before this quiet
  ibgda_unlock(&qp->lock);
  // Without the lock (completion.cuh, I4): other posters and quiets of the QP keep going.
  return ibgda_wait_completed(qp, target, deadline);
}

/// mc_rdma_quiet over every QP of every rank; returns the first non-ok status.
MC_DEVICE_INLINE int mc_rdma_quiet_all(const IbgdaContext& ibgda) {
  int first = kMcRdmaOk;
  for (int rank = 0; rank < ibgda.num_ranks; ++rank) {
    for (int ch = 0; ch < ibgda.qps_per_rank; ++ch) {
      const int s = mc_rdma_quiet(ibgda, ch, rank, ibgda.qps_per_rank);
      if (first == kMcRdmaOk) first = s;
    }
  }
  return first;
}

/// What an op stream needs from one RDMA operation: a WRITE of nbytes (none when 0), then
/// (sig_ptr != nullptr) a 32-bit add of `value` on dst_rank's copy of sig_ptr, both on the QP
/// of (dst_rank, channel 0), then a bounded quiet of that QP. The add follows the WRITE on the
/// same QP, so the responder applies it after the data; the quiet makes errors (error CQEs)
/// visible to the caller before the operation counts as done. On kMcRdmaQpError, *err_first
/// (optional) receives the QP's first error record (syndrome | vendor << 8 | opcode << 16).
MC_DEVICE_INLINE int mc_rdma_put_signal_quiet(const IbgdaContext& ibgda, int dst_rank,
                                              const void* send_ptr, void* recv_ptr, uint64_t nbytes,
                                              uint32_t* sig_ptr, uint32_t value,
                                              uint32_t* err_first) {
  int status = kMcRdmaOk;
  if (nbytes > 0) status = mc_rdma_put(ibgda, 0, dst_rank, 1, send_ptr, recv_ptr, nbytes, 0);
  if (status == kMcRdmaOk && sig_ptr != nullptr)
    status = mc_rdma_atomic_add(ibgda, 0, dst_rank, 1, sig_ptr, value);
  // Quiet even after a failed post: it retires what was posted and records the error CQE.
  const int quiet = mc_rdma_quiet(ibgda, 0, dst_rank, 1);
  if (status == kMcRdmaOk || status == kMcRdmaQpError) status = quiet != kMcRdmaOk ? quiet : status;
  if (status == kMcRdmaQpError && err_first != nullptr) {
    IbgdaQp* qp = mc_rdma_qp(ibgda, 0, dst_rank, 1);
    // Written under the QP lock by completion polling; the lock's release/acquire orders it.
    *err_first = qp != nullptr ? mc_ld_acquire_u32(&qp->err_first) : 0u;
  }
  return status;
}

// ---------------------------------------------------------------------------------------------
// Upstream Mooncake's IBGDA-level names. Same arguments and meaning as upstream's, over te4j's QP
// contexts; failures go to ibgda.error_record (error_record.cuh) since these return nothing.
// Upstream's WQE-level helpers (mc_ibgda_lock/unlock, mc_ibgda_poll_cq, mc_ibgda_post_send_db,
// mc_ibgda_write_rdma_*_wqe) are not provided: they are written against mlx5gda's ring fields,
// which te4j's QP context does not have (te4j's equivalents are the ibgda_* functions above).

/// The local key of a context: its lkey, or upstream's convention rkeys[src_rank] (the window is
/// registered once; mlx5 and te4j's software NIC give it equal local and remote keys).
MC_DEVICE_INLINE uint32_t mc_ibgda_lkey(const IbgdaContext& ibgda, int src_rank) {
  return ibgda.lkey != 0 ? ibgda.lkey : ibgda.rkeys[src_rank];
}

/// RDMA WRITE of nbytes from send_ptr to recv_raddr (an address in dst_rank's registered buffer).
/// Called by one thread (upstream: lane 0).
MC_DEVICE_INLINE void mc_ibgda_put(const IbgdaContext& ibgda, int channel, int dst_rank,
                                   int src_rank, int qps_per_rank, const void* send_ptr,
                                   uint64_t recv_raddr, uint32_t nbytes) {
  IbgdaQp* qp = mc_ibgda_channel(ibgda, channel, dst_rank, qps_per_rank);
  int status = kMcRdmaInvalid;
  if (qp != nullptr && ibgda.rkeys != nullptr) {
    status = ibgda_post_write(qp, (uint64_t)(uintptr_t)send_ptr, mc_ibgda_lkey(ibgda, src_rank),
                              recv_raddr, ibgda.rkeys[dst_rank], nbytes, mc_rdma_deadline(ibgda));
  }
  if (status != kMcRdmaOk) {
    mc_record_post_failure(mc_error_record_of(ibgda, qp), status, dst_rank, kMcOpRdmaWrite);
  }
}

/// 32-bit atomic add of value on recv_raddr (dst_rank's registered buffer). laddr is upstream's
/// result scratch and is not used: te4j's QPs carry their own.
MC_DEVICE_INLINE void mc_ibgda_red_add(const IbgdaContext& ibgda, int channel, int dst_rank,
                                       int src_rank, int qps_per_rank, uint64_t laddr,
                                       uint64_t recv_raddr, int32_t value) {
  (void)src_rank;
  (void)laddr;
  IbgdaQp* qp = mc_ibgda_channel(ibgda, channel, dst_rank, qps_per_rank);
  int status = kMcRdmaInvalid;
  if (qp != nullptr && ibgda.rkeys != nullptr) {
    status = ibgda_post_atomic_add(qp, recv_raddr, ibgda.rkeys[dst_rank], (uint32_t)value,
                                   mc_rdma_deadline(ibgda));
  }
  if (status != kMcRdmaOk) {
    mc_record_post_failure(mc_error_record_of(ibgda, qp), status, dst_rank, kMcOpRdmaAtomicAdd);
  }
}

}  // namespace device
}  // namespace mooncake
