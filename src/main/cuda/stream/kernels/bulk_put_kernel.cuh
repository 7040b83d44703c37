// kernels/bulk_put_kernel.cuh — the grid-stride and bulk-copy put / putWithSignal kernel family
// for P2P and own-rank routes. te4j launches one member (put_launch.cu): the bulk copy with
// 8 stages x 16 KiB per block for puts of 32 MiB and more that the copy engine does not take.
// The other members (more loads in flight, contiguous slabs, other stage shapes, bulk + LSU
// hybrids) are the experiment variants te4j-bench measures beside it; a template member is
// compiled only where it is instantiated, so the library carries none of them.
//
//   kMcPutGrid     grid-stride 16-byte copy with kUnroll loads in flight per thread
//   kMcPutContig   each block copies one contiguous slab (kUnroll in flight)
//   kMcPutBulk     Hopper bulk copies (cp.async.bulk) global -> shared -> peer, kStages stages x
//                  kChunk bytes per block, driven by thread 0 (detail/copy_bulk.cuh)
//   kMcPutHybrid   thread 0 moves kBulkQuarters / 4 of the body through the bulk pipeline while
//                  warps 1.. copy the rest with 16-byte LSU stores
//
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

enum McPutCopyKind : int {
  kMcPutGrid = 0,
  kMcPutContig = 1,
  kMcPutBulk = 2,
  kMcPutHybrid = 3,
};

// Below this a bulk member is not worth its pipeline: too few chunks to spread over blocks.
constexpr size_t kBulkMinBytes = 256 * 1024;
// Bound of a bulk chunk's completion wait (only a hardware fault gets near it).
constexpr uint64_t kBulkDeadlineNs = 10000000000ull;

// Registers: U in-flight 16-byte words need 4U registers; the bound keeps 1024-thread blocks
// legal for U <= 8 (64 registers) and gives U = 16 up to 128 (blocks of at most 512 threads).
template <int kKind, int kUnroll, int kStages, int kChunk, int kBulkQuarters = 4>
__global__ void __launch_bounds__(kUnroll > 8 ? 512 : 1024, 1)
    mc_put_copy_kernel(mooncake::device::CommCtx ctx, int dst_rank, void* recv_ptr,
                       const void* send_ptr, size_t nbytes, uint32_t* sig_ptr, uint32_t value,
                       uint32_t flags, McStreamScratch* scratch, McStreamStatus* status) {
  using namespace mooncake::device;
  asm volatile("griddepcontrol.wait;" : : : "memory");
  asm volatile("griddepcontrol.launch_dependents;" : : : "memory");
  __shared__ uint32_t s_aborted;
  __shared__ __align__(8) uint64_t s_bars[kStages > 0 ? kStages : 1];
  if (threadIdx.x == 0) s_aborted = mc_ld_relaxed_gpu_u32(&scratch->aborted);
  __syncthreads();
  if (s_aborted != 0) return;
  const McStreamOp op = sig_ptr != nullptr ? kMcOpPutWithSignal : kMcOpPut;
  if (nbytes > 0) {
    uint8_t* dst = (uint8_t*)mc_route_put(ctx, dst_rank, recv_ptr);
    const uint8_t* src = (const uint8_t*)send_ptr;
    if (dst == nullptr) {  // uniform: every thread computed the same route
      if (blockIdx.x == 0 && threadIdx.x == 0) {
        const int route = mc_rdma_available(ctx.ibgda) ? kMcRdmaUnsupported : kMcNoRoute;
        mc_stream_record(scratch, status, mc_no_route_error(op, dst_rank, recv_ptr, route));
      }
      return;
    }
    const size_t gtid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const size_t gthreads = (size_t)gridDim.x * blockDim.x;
    if (kKind == kMcPutContig) {
      const size_t slab = ((nbytes + gridDim.x - 1) / gridDim.x + 15) / 16 * 16;
      const size_t lo = (size_t)blockIdx.x * slab;
      if (lo < nbytes) {
        const size_t n = nbytes - lo < slab ? nbytes - lo : slab;
        detail::mc_copy_cooperative_unrolled<kUnroll>(dst + lo, src + lo, n, threadIdx.x,
                                                      blockDim.x);
      }
    } else if ((kKind == kMcPutBulk || kKind == kMcPutHybrid) &&
               ((((uintptr_t)dst ^ (uintptr_t)src) & 15u) == 0)) {
      extern __shared__ __align__(128) uint8_t mc_bulk_smem[];
      size_t head = (16 - ((uintptr_t)dst & 15u)) & 15u;
      if (head > nbytes) head = nbytes;
      const size_t body = (nbytes - head) & ~(size_t)15;
      if (blockIdx.x == 0) {  // < 16 bytes each side, generic stores of block 0
        for (size_t i = threadIdx.x; i < head; i += blockDim.x) dst[i] = src[i];
        for (size_t i = head + body + threadIdx.x; i < nbytes; i += blockDim.x) dst[i] = src[i];
      }
      // Hybrid: the first `bulk` bytes of the body (whole chunks) go through thread 0's bulk
      // pipeline, the rest through warps 1.. of every block (16-byte LSU stores, 8 in flight).
      size_t bulk = body;
      if (kKind == kMcPutHybrid) {
        bulk = body / 4 * kBulkQuarters / (size_t)kChunk * (size_t)kChunk;
        if (blockDim.x <= 32) bulk = body;  // no warp 1: all bulk
      }
      const uint64_t deadline = mc_globaltimer_ns() + kBulkDeadlineNs;
      const bool bulk_ok = detail::mc_bulk_block_copy<kStages, kChunk>(
          dst + head, src + head, bulk, mc_bulk_smem, s_bars, deadline);
      if (kKind == kMcPutHybrid && bulk < body && threadIdx.x >= 32) {
        const size_t lanes = blockDim.x - 32;
        detail::mc_copy_int4_unrolled<kUnroll>(
            (mc_int4*)(dst + head + bulk), (const mc_int4*)(src + head + bulk), (body - bulk) / 16,
            (size_t)blockIdx.x * lanes + (threadIdx.x - 32), (size_t)gridDim.x * lanes);
      }
      if (!bulk_ok) {
        McStreamStatus e = {};
        e.code = kMcStreamWaitTimeout;
        e.op = op;
        e.addr = (uint64_t)(uintptr_t)recv_ptr;
        e.timeout_ns = kBulkDeadlineNs;
        e.rank = dst_rank;
        mc_stream_record(scratch, status, e);  // sets `aborted`: no signal below
      }
    } else {
      detail::mc_copy_cooperative_unrolled<kUnroll>(dst, src, nbytes, gtid, gthreads);
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
