// kernels/bulk_put_kernel.cuh — the put / putWithSignal kernel of te4j for P2P and own-rank
// routes from 32 MiB that the copy engine does not take (put_launch.cu): Hopper bulk copies
// (cp.async.bulk) global -> shared -> peer, kStages stages x kChunk bytes per block, driven by
// thread 0 (detail/copy_bulk.cuh); te4j launches 8 stages x 16 KiB.
//
// The kernel takes its body copy as a policy (McBulkPutBody here): te4j-bench's experiment
// variants supply other bodies to the same kernel, so the contract below lives once.
// Contract and entry as kernels/lean_put_kernel.cuh (abort skip, no-route record, one signal
// after every block's data is visible, griddepcontrol for programmatic dependent launch).
#pragma once

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "stream/kernels/lean_put_kernel.cuh"
#include "stream/kernels/stream_state.cuh"
#include "transport/device/comm_device.cuh"
#include "transport/device/detail/copy.cuh"
#include "transport/device/detail/copy_bulk.cuh"

namespace te4j {
namespace cuda {

// Bound of a bulk chunk's completion wait (only a hardware fault gets near it).
constexpr uint64_t kBulkDeadlineNs = 10000000000ull;

/// The edges of a bulk body: block 0 copies the < 16-byte head and tail around the 16-byte
/// aligned middle of dst with generic stores. Returns the middle's offset, *middle its length
/// (a multiple of 16).
__device__ __forceinline__ size_t mc_put_copy_edges(uint8_t* dst, const uint8_t* src, size_t nbytes,
                                                    size_t* middle) {
  size_t head = (16 - ((uintptr_t)dst & 15u)) & 15u;
  if (head > nbytes) head = nbytes;
  *middle = (nbytes - head) & ~(size_t)15;
  if (blockIdx.x == 0) {
    for (size_t i = threadIdx.x; i < head; i += blockDim.x) dst[i] = src[i];
    for (size_t i = head + *middle + threadIdx.x; i < nbytes; i += blockDim.x) dst[i] = src[i];
  }
  return head;
}

/// The bulk body: the edges by mc_put_copy_edges, the aligned middle by the bulk pipeline of
/// each block; a body whose source and destination are not congruent modulo 16 takes the
/// cooperative copy. copy() returns false when a chunk missed its deadline.
template <int kStagesN, int kChunk>
struct McBulkPutBody {
  static constexpr int kStages = kStagesN;
  static constexpr unsigned kMaxThreads = 1024;
  static constexpr size_t kSharedBytes = (size_t)kStagesN * kChunk;

  __device__ static bool copy(uint8_t* dst, const uint8_t* src, size_t nbytes, uint64_t* bars,
                              uint64_t deadline) {
    if ((((uintptr_t)dst ^ (uintptr_t)src) & 15u) != 0) {
      mooncake::device::detail::mc_copy_cooperative_unrolled<8>(
          dst, src, nbytes, (size_t)blockIdx.x * blockDim.x + threadIdx.x,
          (size_t)gridDim.x * blockDim.x);
      return true;
    }
    extern __shared__ __align__(128) uint8_t mc_bulk_smem[];
    size_t middle = 0;
    const size_t head = mc_put_copy_edges(dst, src, nbytes, &middle);
    return mooncake::device::detail::mc_bulk_block_copy<kStagesN, kChunk>(
        dst + head, src + head, middle, mc_bulk_smem, bars, deadline);
  }
};

/// put / putWithSignal whose body `Body` copies (Body::copy(dst, src, nbytes, bars, deadline),
/// Body::kStages mbarriers in shared memory, blocks of at most Body::kMaxThreads).
template <class Body>
__global__ void __launch_bounds__(Body::kMaxThreads, 1)
    mc_put_copy_kernel(mooncake::device::CommCtx ctx, int dst_rank, void* recv_ptr,
                       const void* send_ptr, size_t nbytes, uint32_t* sig_ptr, uint32_t value,
                       uint32_t flags, McStreamScratch* scratch, McStreamStatus* status) {
  using namespace mooncake::device;
  asm volatile("griddepcontrol.wait;" : : : "memory");
  asm volatile("griddepcontrol.launch_dependents;" : : : "memory");
  __shared__ uint32_t s_aborted;
  __shared__ __align__(8) uint64_t s_bars[Body::kStages > 0 ? Body::kStages : 1];
  if (threadIdx.x == 0) s_aborted = mc_ld_relaxed_gpu_u32(&scratch->aborted);
  __syncthreads();
  if (s_aborted != 0) return;
  const McStreamOp op = sig_ptr != nullptr ? kMcOpPutWithSignal : kMcOpPut;
  if (nbytes > 0) {
    uint8_t* dst = (uint8_t*)mc_route_put(ctx, dst_rank, recv_ptr);
    if (dst == nullptr) {  // uniform: every thread computed the same route
      if (blockIdx.x == 0 && threadIdx.x == 0) {
        const int route = mc_rdma_available(ctx.ibgda) ? kMcRdmaUnsupported : kMcNoRoute;
        mc_stream_record(scratch, status, mc_no_route_error(op, dst_rank, recv_ptr, route));
      }
      return;
    }
    const uint64_t deadline = mc_globaltimer_ns() + kBulkDeadlineNs;
    if (!Body::copy(dst, (const uint8_t*)send_ptr, nbytes, s_bars, deadline)) {
      McStreamStatus e = {};
      e.code = kMcStreamWaitTimeout;
      e.op = op;
      e.addr = (uint64_t)(uintptr_t)recv_ptr;
      e.timeout_ns = kBulkDeadlineNs;
      e.rank = dst_rank;
      mc_stream_record(scratch, status, e);  // sets `aborted`: no signal below
    }
  }
  if (sig_ptr == nullptr) return;
  mc_bar_sync();
  if (threadIdx.x != 0) return;
  if (!mc_block_arrive_last(scratch)) return;
  // An aborted stream (a block of this op timed out above) gets no signal.
  if (mc_ld_relaxed_gpu_u32(&scratch->aborted) != 0) return;
  const int rc = (flags & kPutFlagRedSignal) != 0
                     ? mc_signal_noret(ctx, dst_rank, 0, 1, sig_ptr, value)
                     : mc_signal(ctx, dst_rank, 0, 1, sig_ptr, value);
  if (rc != kMcRouteOk) {
    mc_stream_record(scratch, status, mc_no_route_error(op, dst_rank, sig_ptr, rc));
  }
}

}  // namespace cuda
}  // namespace te4j
