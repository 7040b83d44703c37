// kernels/put_kernels.cuh — put and putWithSignal: a grid-cooperative copy over NVLink.
//
// Every thread of the grid copies an interleaved share (mc_copy_cooperative: 16-byte vector body
// when source and destination are congruent mod 16, byte head/tail otherwise), so each block
// copies its part of the buffer.
//
// putWithSignal signals ONCE per operation, after every block's part is visible:
//   each block:  bar.sync (its threads' stores happen before thread 0's next step)
//                thread 0: fence.acq_rel.sys, then atomic add on scratch->arrivals
//   last block (the one that sees arrivals == gridDim.x - 1):
//                fence.acq_rel.sys (acquire side: all blocks' copies happen before what follows)
//                reset arrivals to 0 (stream order makes it 0 for the next op on this stream)
//                release atomic add of `value` on the destination signal word
// A receiver that acquires the signal therefore sees the whole buffer.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "stream/kernels/rdma_route.cuh"
#include "stream/kernels/stream_state.cuh"
#include "transport/device/comm_device.cuh"
#include "transport/device/detail/copy.cuh"

namespace te4j {
namespace cuda {

__device__ __forceinline__ void mc_grid_copy(void* dst, const void* src, size_t nbytes) {
  const size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  const size_t nthreads = (size_t)gridDim.x * blockDim.x;
  mooncake::device::mc_copy_cooperative(dst, src, nbytes, tid, nthreads);
}

// Why mc_route_put found no plain-store route (RDMA routes were taken before it was asked).
__device__ __forceinline__ int mc_put_route_status(const mooncake::device::CommCtx& ctx) {
  return mooncake::device::mc_rdma_available(ctx.ibgda) ? mooncake::device::kMcRdmaUnsupported
                                                        : mooncake::device::kMcNoRoute;
}

__global__ void mc_put_kernel(mooncake::device::CommCtx ctx, int dst_rank, void* recv_ptr,
                              const void* send_ptr, size_t nbytes, McStreamScratch* scratch,
                              McStreamStatus* status) {
  if (mc_stream_aborted_block(scratch)) return;
  if (mc_stream_rdma_route(ctx, dst_rank)) {  // uniform; one thread posts (rdma_route.cuh)
    if (blockIdx.x == 0 && threadIdx.x == 0)
      mc_stream_rdma_op(ctx, dst_rank, recv_ptr, send_ptr, nbytes, nullptr, 0, kMcOpPut, scratch,
                        status);
    return;
  }
  void* dst = mooncake::device::mc_route_put(ctx, dst_rank, recv_ptr);
  if (dst == nullptr) {  // uniform: every thread computed the same route
    if (blockIdx.x == 0 && threadIdx.x == 0) {
      mc_stream_record(scratch, status,
                       mc_no_route_error(kMcOpPut, dst_rank, recv_ptr, mc_put_route_status(ctx)));
    }
    return;
  }
  mc_grid_copy(dst, send_ptr, nbytes);
}

__global__ void mc_put_signal_kernel(mooncake::device::CommCtx ctx, int dst_rank, void* recv_ptr,
                                     const void* send_ptr, size_t nbytes, uint32_t* sig_ptr,
                                     uint32_t value, McStreamScratch* scratch,
                                     McStreamStatus* status) {
  using namespace mooncake::device;
  if (mc_stream_aborted_block(scratch)) return;
  if (mc_stream_rdma_route(ctx, dst_rank)) {  // uniform; one thread posts (rdma_route.cuh)
    if (blockIdx.x == 0 && threadIdx.x == 0)
      mc_stream_rdma_op(ctx, dst_rank, recv_ptr, send_ptr, nbytes, sig_ptr, value,
                        kMcOpPutWithSignal, scratch, status);
    return;
  }
  if (nbytes > 0) {
    void* dst = mc_route_put(ctx, dst_rank, recv_ptr);
    if (dst == nullptr) {
      if (blockIdx.x == 0 && threadIdx.x == 0) {
        mc_stream_record(
            scratch, status,
            mc_no_route_error(kMcOpPutWithSignal, dst_rank, recv_ptr, mc_put_route_status(ctx)));
      }
      return;
    }
    mc_grid_copy(dst, send_ptr, nbytes);
  }
  mc_bar_sync();
  if (threadIdx.x != 0) return;
  if (!mc_block_arrive_last(scratch)) return;
  const int rc = mc_signal(ctx, dst_rank, 0, 1, sig_ptr, value);
  if (rc != kMcRouteOk) {
    mc_stream_record(scratch, status, mc_no_route_error(kMcOpPutWithSignal, dst_rank, sig_ptr, rc));
  }
}

}  // namespace cuda
}  // namespace te4j
