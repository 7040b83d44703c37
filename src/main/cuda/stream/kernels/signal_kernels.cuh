// kernels/signal_kernels.cuh — signal and redAdd: one thread, one release-ordered atomic add.
// Launched <<<1, 1>>>: the op is a single atomic; more threads would only add launch cost.
#pragma once

#include <stdint.h>

#include "stream/kernels/rdma_route.cuh"
#include "stream/kernels/stream_state.cuh"
#include "transport/device/comm_device.cuh"

namespace te4j {
namespace cuda {

/// op: kMcOpSignal (mc_signal) or kMcOpRedAdd (mc_red_add); the same add, named by the caller.
__global__ void mc_atomic_add_kernel(mooncake::device::CommCtx ctx, int dst_rank, uint32_t* ptr,
                                     uint32_t value, uint32_t op, McStreamScratch* scratch,
                                     McStreamStatus* status) {
  using namespace mooncake::device;
  if (mc_stream_aborted(scratch)) return;
  if (mc_stream_rdma_route(ctx, dst_rank)) {
    mc_stream_rdma_op(ctx, dst_rank, nullptr, nullptr, 0, ptr, value, (McStreamOp)op, scratch,
                      status);
    return;
  }
  const int rc = op == kMcOpSignal ? mc_signal(ctx, dst_rank, 0, 1, ptr, value)
                                   : mc_red_add(ctx, dst_rank, 0, 1, ptr, value);
  if (rc != kMcRouteOk) {
    mc_stream_record(scratch, status, mc_no_route_error((McStreamOp)op, dst_rank, ptr, rc));
  }
}

/// The stream's quiet of the QP of (dst_rank, channel 0) after pipelined RDMA posts (see
/// rdma_route.cuh); op names the last operation posted on it, for the message. Runs also on a
/// failed stream, so that what was posted is retired before the stream is used again.
__global__ void mc_rdma_quiet_kernel(mooncake::device::CommCtx ctx, int dst_rank, uint32_t op,
                                     McStreamScratch* scratch, McStreamStatus* status) {
  mc_stream_rdma_quiet(ctx, dst_rank, (McStreamOp)op, scratch, status);
}

}  // namespace cuda
}  // namespace te4j
