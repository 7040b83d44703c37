// kernels/rdma_route.cuh — the RDMA branch of te4j's stream kernels: a rank that neither is this
// one nor has a P2P mapping, in a context with RDMA tables, is reached by posting WQEs.
//
// One thread does the whole op (the NIC moves the data, not the SMs): WRITE, then the signal's
// masked fetch-and-add on the same QP (the responder applies it after the data). The kernel
// does not wait for them: many requests are in flight up to the ring depth, and the stream's
// quiet kernel (launched by the host side before an op that could overtake them, and at
// synchronize) records an error CQE in the stream status for the next synchronize() to raise
// (kRemoteError, with the syndrome).
#pragma once

#include <stdint.h>

#include "stream/kernels/stream_state.cuh"
#include "transport/device/comm_device.cuh"

namespace te4j {
namespace cuda {

#if defined(__CUDACC__)

/// Uniform across the grid: every thread reads the same route from the kernel parameters.
__device__ __forceinline__ bool mc_stream_rdma_route(const mooncake::device::CommCtx& ctx,
                                                     int dst_rank) {
  using namespace mooncake::device;
  return mc_rank_route(ctx, dst_rank) == kMcRankRouteRdma;
}

/// Records an RDMA failure of op (one thread). The record: route = the kMcRdma* status,
/// addr = the target, and
///   QP error / fatal: expected = the QP's first error (syndrome | vendor << 8 | opcode << 16);
///   timeout:          a snapshot of the QP for the message: expected = its lock word,
///                     seen = sq_pi (WQEBBs posted), waited_ns = sq_ci << 32 | cq_ci (WQEBBs
///                     completed, CQEs consumed), timeout_ns = the device bound that expired.
__device__ __forceinline__ void mc_stream_rdma_fail(const mooncake::device::CommCtx& ctx,
                                                    int dst_rank, uint64_t addr, int rc,
                                                    McStreamOp op, McStreamScratch* scratch,
                                                    McStreamStatus* status) {
  using namespace mooncake::device;
  McStreamStatus e = {};
  e.code = kMcStreamRdmaError;
  e.op = op;
  e.addr = addr;
  e.rank = dst_rank;
  e.route = rc;
  const volatile IbgdaQp* qp = mc_rdma_qp(ctx.ibgda, 0, dst_rank, 1);
  if (rc == kMcRdmaQpError && qp != nullptr) {
    // Written under the QP lock by completion polling; the lock's release/acquire orders it.
    e.expected = mc_ld_acquire_u32((uint32_t*)&qp->err_first);
  }
  if (rc == kMcRdmaTimeout) {
    // Unlocked, volatile reads (the lock may be what timed out): a diagnostic snapshot only.
    if (qp != nullptr) {
      e.expected = qp->lock;
      e.seen = qp->sq_pi;
      e.waited_ns = ((uint64_t)qp->sq_ci << 32) | (uint64_t)qp->cq_ci;
    }
    e.timeout_ns = ctx.ibgda.timeout_ns;
  }
  mc_stream_record(scratch, status, e);
}

/// Posts the op over RDMA (one thread) without waiting for it: nbytes 0 = no WRITE, sig_ptr
/// nullptr = no add; the add follows the WRITE on the same QP, so the responder applies it
/// after the data. The stream quiets the QP later (mc_rdma_quiet_kernel: before an op whose
/// effect could overtake it, and at synchronize), which surfaces error CQEs. A post that fails
/// (the QP already in error, the ring full past the timeout) quiets what got posted and records
/// the failure now.
__device__ __forceinline__ void mc_stream_rdma_op(const mooncake::device::CommCtx& ctx,
                                                  int dst_rank, void* recv_ptr,
                                                  const void* send_ptr, size_t nbytes,
                                                  uint32_t* sig_ptr, uint32_t value, McStreamOp op,
                                                  McStreamScratch* scratch,
                                                  McStreamStatus* status) {
  using namespace mooncake::device;
  int rc = kMcRdmaOk;
  if (nbytes > 0) rc = mc_rdma_put(ctx.ibgda, 0, dst_rank, 1, send_ptr, recv_ptr, nbytes, 0);
  if (rc == kMcRdmaOk && sig_ptr != nullptr)
    rc = mc_rdma_atomic_add(ctx.ibgda, 0, dst_rank, 1, sig_ptr, value);
  if (rc == kMcRdmaOk) return;
  const int quiet = mc_rdma_quiet(ctx.ibgda, 0, dst_rank, 1);
  if (rc == kMcRdmaQpError && quiet != kMcRdmaOk && quiet != kMcRdmaQpError) rc = quiet;
  mc_stream_rdma_fail(
      ctx, dst_rank,
      (uint64_t)(uintptr_t)(nbytes > 0 ? (const void*)recv_ptr : (const void*)sig_ptr), rc, op,
      scratch, status);
}

/// Waits (bounded by the context's timeout) for every request posted on the QP of
/// (dst_rank, channel 0) and records the first failure for the next synchronize(), unless the
/// stream already failed (one error per stream: the quiet then only retires what completed).
__device__ __forceinline__ void mc_stream_rdma_quiet(const mooncake::device::CommCtx& ctx,
                                                     int dst_rank, McStreamOp op,
                                                     McStreamScratch* scratch,
                                                     McStreamStatus* status) {
  using namespace mooncake::device;
  const bool aborted = mc_stream_aborted(scratch);
  const int rc = mc_rdma_quiet(ctx.ibgda, 0, dst_rank, 1);
  if (aborted || rc == kMcRdmaOk || rc == kMcRdmaInvalid) return;
  mc_stream_rdma_fail(ctx, dst_rank, 0, rc, op, scratch, status);
}

#endif  // __CUDACC__

}  // namespace cuda
}  // namespace te4j
