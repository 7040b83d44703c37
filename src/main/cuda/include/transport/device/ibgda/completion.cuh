// ibgda/completion.cuh — consuming CQEs: retiring WQEs, recording errors, never trapping.
//
// A requester CQE (opcode kCqeReq) retires WQEs up to its wqe_counter. A requester error CQE
// (kCqeReqErr, 0xD) carries a syndrome: the first one is recorded for the host (remote access,
// remote operation, remote invalid request, local protection...), after which the QP is in the
// error state and every later WQE completes with kSyndromeWrFlushErr. Any other opcode cannot
// reach a send-only QP's CQ: it is counted as fatal and retires nothing, and the caller
// reports kMcRdmaFatal instead of trapping.
//
// Protocol of one QP shared by any number of posters and pollers (threads, warps, kernels on
// other streams and SMs):
//   I1  sq_pi, cq_ci, bf_offset, err_first, err_wqe_counter, err_fatal and the CQ doorbell
//       record change only with the QP lock held; so does every CQE read that advances cq_ci
//       (one consumer at a time: a CQE is consumed exactly once, in order).
//   I2  sq_ci and err_count also change only under the lock, but with release stores, so that
//       a waiter may read them WITHOUT the lock (acquire): sq_ci only grows (mod 2^32), and
//       err_count is stored before the sq_ci that retires the error CQE's WQE.
//   I3  a poster holds the lock from reserving a ring slot to ringing the doorbell of what it
//       wrote; a slot is reused only after the CQE of its previous WQE (so after the NIC
//       fetched it); the doorbell record only grows and covers every WQE written before it.
//   I4  nobody holds the lock while waiting for the network except a poster whose ring is
//       full (it must, to keep its slot); a quiet takes the lock only for one poll of the CQ
//       at a time (ibgda_wait_completed), so concurrent quiets and posts interleave instead of
//       queueing behind one waiter's round trip (and an unfair spin lock cannot starve them).
//   I5  every wait is bounded by a deadline, and every path that took the lock releases it.
// ibgda_poll_cq and ibgda_wait_ring_slot run with the lock held; ibgda_wait_completed without.
#pragma once

#include <stdint.h>

#include "transport/device/platform.cuh"
#include "transport/device/device_ops.cuh"
#include "cqe.cuh"
#include "mlx5_defs.cuh"
#include "qp_context.cuh"
#include "qp_lock.cuh"
#include "status.cuh"

namespace mooncake {
namespace device {

/// Consumes every CQE that is ready and publishes the new consumer index to the CQ doorbell
/// record (so the NIC never overruns the CQ). Returns the number consumed, or kMcRdmaFatal
/// after a CQE with an unexpected opcode.
MC_DEVICE_INLINE int ibgda_poll_cq(IbgdaQp* qp) {
  const uint32_t cqe_count = qp->cq_mask + 1u;
  int consumed = 0;
  int status = kMcRdmaOk;
  for (;;) {
    mlx5::Cqe64* cqe = (mlx5::Cqe64*)(qp->cq_buf + (size_t)(qp->cq_ci & qp->cq_mask) * 64u);
    const uint32_t dw15 = mc_ld_acquire_u32(&cqe->dw[mlx5::kCqeDwOwner]);
    if (!mlx5::cqe_ready(dw15, qp->cq_ci, cqe_count)) break;
    const uint8_t opcode = mlx5::cqe_opcode(dw15);
    const uint16_t wqe_counter = mlx5::cqe_wqe_counter(dw15);
    if (opcode == mlx5::kCqeReq || opcode == mlx5::kCqeReqErr) {
      if (opcode == mlx5::kCqeReqErr) {
        const uint32_t dw13 = mlx5::cqe_ld_relaxed_u32(&cqe->dw[mlx5::kCqeDwSyndrome]);
        if (qp->err_count == 0) {
          qp->err_first = (uint32_t)mlx5::cqe_syndrome(dw13) |
                          ((uint32_t)mlx5::cqe_vendor_syndrome(dw13) << 8) |
                          ((uint32_t)opcode << 16);
          qp->err_wqe_counter = wqe_counter;
        }
        mc_st_release_u32(&qp->err_count, qp->err_count + 1u);  // I2: before sq_ci
      }
      // Single-WQEBB WQEs: the CQE of WQE w retires everything up to w + 1 (mod 2^16).
      // Release (I2): quiets read sq_ci without the lock.
      mc_st_release_u32(&qp->sq_ci,
                        qp->sq_ci + (uint32_t)(uint16_t)(wqe_counter + 1u - (uint16_t)qp->sq_ci));
    } else {
      ++qp->err_fatal;
      status = kMcRdmaFatal;
    }
    ++qp->cq_ci;
    ++consumed;
  }
  if (consumed > 0) mc_st_release_u32(&qp->cq_dbrec[0], mc_bswap32(qp->cq_ci & 0xffffffu));
  return status != kMcRdmaOk ? status : consumed;
}

/// Polls until fewer than `ring size` WQEBBs are outstanding (a slot is free) or deadline_ns.
MC_DEVICE_INLINE int ibgda_wait_ring_slot(IbgdaQp* qp, uint64_t deadline_ns) {
  for (uint32_t polls = 0; qp->sq_pi - qp->sq_ci > qp->sq_mask; ++polls) {
    const int r = ibgda_poll_cq(qp);
    if (r < 0) return r;
    if (r == 0) {
      if ((polls & 15u) == 15u && mc_globaltimer_ns() > deadline_ns) return kMcRdmaTimeout;
      ibgda_backoff(polls);
    }
  }
  return kMcRdmaOk;
}

/// Waits until every WQEBB posted before `target` (a free-running sq_pi value) has completed.
/// Called WITHOUT the lock (I4): reads sq_ci lock-free and takes the lock for one poll at a
/// time; whoever holds it (another quiet, a poster waiting for a ring slot) may be the one that
/// consumes the awaited CQE, which this waiter then sees in sq_ci.
MC_DEVICE_INLINE int ibgda_wait_completed(IbgdaQp* qp, uint32_t target, uint64_t deadline_ns) {
  for (uint32_t polls = 0; (int32_t)(mc_ld_acquire_u32(&qp->sq_ci) - target) < 0; ++polls) {
    if (!ibgda_lock(&qp->lock, deadline_ns)) return kMcRdmaTimeout;
    const int r = ibgda_poll_cq(qp);
    ibgda_unlock(&qp->lock);
    if (r < 0) return r;
    if (r == 0) {
      if ((polls & 15u) == 15u && mc_globaltimer_ns() > deadline_ns) return kMcRdmaTimeout;
      ibgda_backoff(polls);
    }
  }
  return mc_ld_acquire_u32(&qp->err_count) != 0 ? kMcRdmaQpError : kMcRdmaOk;
}

}  // namespace device
}  // namespace mooncake
