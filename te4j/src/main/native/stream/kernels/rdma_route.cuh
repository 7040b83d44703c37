// kernels/rdma_route.cuh — the RDMA branch of te4j's stream kernels: a rank that neither is this
// one nor has a P2P mapping, in a context with RDMA tables, is reached by posting WQEs.
//
// One thread does the whole op (the NIC moves the data, not the SMs): WRITE, then the signal's
// masked fetch-and-add on the same QP (the responder applies it after the data), then a bounded
// quiet, so that an error CQE is recorded in the stream status before the kernel ends and the
// next synchronize() raises it (kRemoteError, with the syndrome).
#pragma once

#include <stdint.h>

#include "stream_state.cuh"
#include "transport/device/comm_device.cuh"

namespace te4j {
namespace cuda {

#if defined(__CUDACC__)

/// Uniform across the grid: every thread evaluates it on the same kernel parameters.
__device__ __forceinline__ bool mc_stream_rdma_route(const mooncake::device::CommCtx& ctx,
                                                     int dst_rank) {
  using namespace mooncake::device;
  return dst_rank != ctx.rank && !mc_p2p_available(ctx.p2p, dst_rank) &&
         mc_rdma_available(ctx.ibgda);
}

/// Runs the op over RDMA (one thread) and records a failure: nbytes 0 = no WRITE, sig_ptr
/// nullptr = no add. The record: route = the kMcRdma* status, addr = the target, and
///   QP error / fatal: expected = the QP's first error (syndrome | vendor << 8 | opcode << 16);
///   timeout:          a snapshot of the QP for the message: expected = its lock word,
///                     seen = sq_pi (WQEBBs posted), waited_ns = sq_ci << 32 | cq_ci (WQEBBs
///                     completed, CQEs consumed), timeout_ns = the device bound that expired.
__device__ __forceinline__ void mc_stream_rdma_op(const mooncake::device::CommCtx& ctx,
                                                  int dst_rank, void* recv_ptr,
                                                  const void* send_ptr, size_t nbytes,
                                                  uint32_t* sig_ptr, uint32_t value,
                                                  McStreamOp op, McStreamScratch* scratch,
                                                  McStreamStatus* status) {
  using namespace mooncake::device;
  uint32_t err_first = 0;
  const int rc = mc_rdma_put_signal_quiet(ctx.ibgda, dst_rank, send_ptr, recv_ptr, nbytes,
                                          sig_ptr, value, &err_first);
  if (rc == kMcRdmaOk) return;
  McStreamStatus e = {};
  e.code = kMcStreamRdmaError;
  e.op = op;
  e.addr = (uint64_t)(uintptr_t)(nbytes > 0 ? (const void*)recv_ptr : (const void*)sig_ptr);
  e.rank = dst_rank;
  e.route = rc;
  e.expected = err_first;
  if (rc == kMcRdmaTimeout) {
    // Unlocked, volatile reads (the lock may be what timed out): a diagnostic snapshot only.
    const volatile IbgdaQp* qp = mc_rdma_qp(ctx.ibgda, 0, dst_rank, 1);
    if (qp != nullptr) {
      e.expected = qp->lock;
      e.seen = qp->sq_pi;
      e.waited_ns = ((uint64_t)qp->sq_ci << 32) | (uint64_t)qp->cq_ci;
    }
    e.timeout_ns = ctx.ibgda.timeout_ns;
  }
  mc_stream_record(scratch, status, e);
}

#endif  // __CUDACC__

}  // namespace cuda
}  // namespace te4j
