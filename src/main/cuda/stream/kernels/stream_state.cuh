// kernels/stream_state.cuh — the per-stream state shared by te4j's kernels and the CUDA OpStream.
//
// Two areas per stream, because they are read at very different rates:
//
//  McStreamScratch — device memory (cudaMalloc), read by every te4j kernel at entry (an L2 hit):
//    +0    aborted   nonzero after an op failed: later te4j kernels on the stream exit at entry
//    +128  arrivals  putWithSignal's block counter: 0 between ops; the last block resets it
//  (each word on its own 128-byte line: the counter's atomics do not slow the abort check)
//
//  McStreamStatus — mapped pinned host memory (cudaHostAlloc(cudaHostAllocMapped)), written only
//  by the kernel that fails and read by synchronize() without a device copy (64 bytes):
//    +0   code       McStreamCode; written LAST, with a release store, after the fields below
//    +4   op         McStreamOp of the failing operation
//    +8   expected   waitSignal: the awaited value
//    +12  seen       waitSignal: the last value read
//    +16  addr       waitSignal: the signal word; no-route: the target word or buffer
//    +24  waited_ns  waitSignal: how long it spun
//    +32  timeout_ns waitSignal: the requested bound
//    +40  rank       no-route: the destination rank
//    +44  route      no-route: mc_signal's status (kMcNoRoute, kMcRdmaUnsupported, kMcRdma*)
//
// Only one kernel can write an error: a kernel runs its body only while `aborted` is 0, kernels
// on one stream run one after another, and within a kernel a single thread records. The host
// clears both areas in synchronize() once the stream is idle.
#pragma once

#include <stdint.h>

#include "transport/device/comm_device.cuh"

namespace te4j {
namespace cuda {

enum McStreamCode : uint32_t {
  kMcStreamOk = 0,
  kMcStreamWaitTimeout = 1,
  kMcStreamNoRoute = 2,
  kMcStreamRdmaError = 3,  // route: kMcRdma* status; expected: the QP's first error record
};

enum McStreamOp : uint32_t {
  kMcOpPut = 1,
  kMcOpPutWithSignal = 2,
  kMcOpSignal = 3,
  kMcOpRedAdd = 4,
  kMcOpWaitSignal = 5,
};

struct McStreamScratch {
  uint32_t aborted;
  uint32_t pad0[31];
  uint32_t arrivals;
  uint32_t pad1[31];
};
static_assert(sizeof(McStreamScratch) == 256, "scratch layout");

struct McStreamStatus {
  uint32_t code;
  uint32_t op;
  uint32_t expected;
  uint32_t seen;
  uint64_t addr;
  uint64_t waited_ns;
  uint64_t timeout_ns;
  int32_t rank;
  int32_t route;
  uint32_t pad[4];
};
static_assert(sizeof(McStreamStatus) == 64, "status word layout");

#if defined(__CUDACC__)

/// Whether an earlier op on this stream failed. One acquire load; uniform across the kernel.
__device__ __forceinline__ bool mc_stream_aborted(McStreamScratch* scratch) {
  return mooncake::device::mc_ld_acquire_u32(&scratch->aborted) != 0;
}

/// Block-uniform version: thread 0 loads, the block agrees (callers return together).
__device__ __forceinline__ bool mc_stream_aborted_block(McStreamScratch* scratch) {
  __shared__ uint32_t s_aborted;
  if (threadIdx.x == 0) s_aborted = mc_stream_aborted(scratch) ? 1u : 0u;
  mooncake::device::mc_bar_sync();
  return s_aborted != 0;
}

/// Records an error: details first, then the host-visible code (release), then the abort flag.
/// Called by one thread of one kernel (see above).
__device__ __forceinline__ void mc_stream_record(McStreamScratch* scratch, McStreamStatus* status,
                                                 McStreamStatus error) {
  volatile McStreamStatus* s = status;
  s->op = error.op;
  s->expected = error.expected;
  s->seen = error.seen;
  s->addr = error.addr;
  s->waited_ns = error.waited_ns;
  s->timeout_ns = error.timeout_ns;
  s->rank = error.rank;
  s->route = error.route;
  mooncake::device::mc_st_release_u32(&status->code, error.code);
  mooncake::device::mc_st_release_u32(&scratch->aborted, 1u);
}

/// The no-route record of an op on dst_rank.
__device__ __forceinline__ McStreamStatus mc_no_route_error(McStreamOp op, int dst_rank,
                                                            const void* addr, int route) {
  McStreamStatus e = {};
  e.code = kMcStreamNoRoute;
  e.op = op;
  e.addr = (uint64_t)(uintptr_t)addr;
  e.rank = dst_rank;
  e.route = route;
  return e;
}

/// putWithSignal's arrival, by thread 0 of each block after the block's bar.sync: performs the
/// block's stores at system scope and counts the block in. True only for the grid's last block,
/// which resets the counter for the next op and then signals (its acquire covers every block).
__device__ __forceinline__ bool mc_block_arrive_last(McStreamScratch* scratch) {
  using namespace mooncake::device;
  mc_fence();
  if (gridDim.x == 1) return true;
  const uint32_t arrived = mc_atomic_add_release_u32(&scratch->arrivals, 1u);
  if (arrived != gridDim.x - 1) return false;  // not the last block: the last one signals
  mc_fence();
  mc_st_release_u32(&scratch->arrivals, 0u);
  return true;
}

#endif  // __CUDACC__

}  // namespace cuda
}  // namespace te4j
