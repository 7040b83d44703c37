// kernels/lean_put_kernel.cuh — te4j's put / putWithSignal kernel for P2P and own-rank routes
// below 32 MiB (put_launch.cu picks it; docs/history/PERFORMANCE-notebook.md has the variants it
// beat).
//
// It is the kernel for per-op latency:
//   * no block barrier before the copy: every thread issues its first 16-byte source loads, the
//     abort-word load and the route loads back to back, so their latencies overlap (otherwise:
//     abort load -> bar.sync -> route loads -> source loads, three dependent memory trips);
//   * one block: bar.sync, then thread 0's release add (red.release.sys: fence + red) only;
//   * several blocks: per block atom.inc.acq_rel.gpu on the arrival counter (atom.inc wraps to 0
//     on the last arrival: no reset store); the last block then signals with one release add,
//     whose system-scope fence covers every block's stores (kPutFlagGpuArrival; without it each
//     block adds a fence.acq_rel.sys before it arrives).
// Launches per op: one kernel, nothing else (no memset, no bookkeeping kernel).
//
// It keeps the contract of kernels/put_kernels.cuh: an op is skipped when the stream is
// aborted, a missing route is recorded, and putWithSignal signals once, after every block's data
// is visible. Differences that are not the copy:
//   * entry: griddepcontrol.wait (a no-op unless launched with programmatic dependent launch),
//     then griddepcontrol.launch_dependents so that the next PDL launch on the stream can be
//     scheduled while this one runs; the next kernel still waits, in its own griddepcontrol.wait,
//     for this grid's completion and memory flush, so stream order holds;
//   * the abort flag is read with ld.relaxed.gpu (only kernels of this stream write it, and
//     kernel boundaries order them), not an acquire at system scope;
//   * the signal may be a red (no return value; kPutFlagRedSignal);
//   * P2P and own-rank routes only: a rank that only RDMA reaches is recorded as
//     kMcRdmaUnsupported (the op stream sends those to put_kernels.cuh, which posts RDMA ops).
#pragma once

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "stream/kernels/stream_state.cuh"
#include "transport/device/comm_device.cuh"
#include "transport/device/detail/copy.cuh"
#include "transport/device/detail/copy_bulk.cuh"

namespace te4j {
namespace cuda {

enum : uint32_t {
  kPutFlagRedSignal = 1u,   // the signal's release add without return value
  kPutFlagGpuArrival = 2u,  // no per-block system-scope fence before the arrival
};

// Source words each thread of the lean kernel loads before it knows the route (registers: 4 x 4).
constexpr int kLeanPreload = 4;

__device__ __forceinline__ uint32_t mc_ld_relaxed_gpu_u32(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

/// Wrapping increment (PTX atom.inc): returns the old value and stores old >= bound ? 0 : old + 1,
/// so the last of bound + 1 arrivals leaves the counter at 0. acq_rel at GPU scope: the counter
/// is this GPU's memory and only blocks of this grid touch it.
__device__ __forceinline__ uint32_t mc_atom_inc_acq_rel_gpu_u32(uint32_t* p, uint32_t bound) {
  uint32_t old;
  asm volatile("atom.acq_rel.gpu.global.inc.u32 %0, [%1], %2;"
               : "=r"(old)
               : "l"(p), "r"(bound)
               : "memory");
  return old;
}

/// Steps 1 and 2 of the lean kernel (see the file comment), after the kernel's griddepcontrol
/// entry: the abort check, the route and the copy. Returns whether the op goes on to its signal (a
/// putWithSignal neither skipped nor recorded), with *sig the routed signal word; the result is
/// uniform across the grid. Shared with te4j-bench's variants, which arrive at the signal another
/// way.
__device__ __forceinline__ bool mc_lean_put_copy(const mooncake::device::CommCtx& ctx, int dst_rank,
                                                 void* recv_ptr, const void* send_ptr,
                                                 size_t nbytes, uint32_t* sig_ptr,
                                                 McStreamScratch* scratch, McStreamStatus* status,
                                                 uint32_t** sig_out) {
  using namespace mooncake::device;
  const size_t gtid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  const size_t gthreads = (size_t)gridDim.x * blockDim.x;
  const uint8_t* src = (const uint8_t*)send_ptr;
  // 1. Issue before anything is known: this thread's first source words (a put's source is
  // stable while it runs, and loading it has no effect an aborted op could regret), then the
  // abort word, then the route. Their latencies overlap; the stores below wait for all three.
  // The body is laid out by recv_ptr's alignment; a route whose mapping breaks that congruence
  // (never, for page-aligned mappings) takes the generic copy instead.
  size_t head = (16 - ((uintptr_t)recv_ptr & 15u)) & 15u;
  if (head > nbytes) head = nbytes;
  const bool congruent = ((((uintptr_t)recv_ptr ^ (uintptr_t)src) & 15u) == 0);
  const size_t nwords = congruent ? (nbytes - head) / 16 : 0;
  const mc_int4* srcw = (const mc_int4*)(src + head);
  mc_int4 v[kLeanPreload];
#pragma unroll
  for (int u = 0; u < kLeanPreload; ++u) {
    const size_t i = gtid + (size_t)u * gthreads;
    if (i < nwords) v[u] = mc_ld_nc(srcw + i);
  }
  // Uniform across the grid: only earlier kernels of this stream write it, except this kernel's
  // own no-route record below, taken when every thread returns anyway.
  const uint32_t aborted = mc_ld_relaxed_gpu_u32(&scratch->aborted);
  uint8_t* dst = nbytes > 0 ? (uint8_t*)mc_route_put(ctx, dst_rank, recv_ptr) : nullptr;
  uint32_t* sig = sig_ptr != nullptr ? (uint32_t*)mc_route_put(ctx, dst_rank, sig_ptr) : nullptr;
  if (aborted != 0) return false;
  const McStreamOp op = sig_ptr != nullptr ? kMcOpPutWithSignal : kMcOpPut;
  if ((nbytes > 0 && dst == nullptr) || (sig_ptr != nullptr && sig == nullptr)) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {  // uniform: every thread computed the same route
      const int route = mc_rdma_available(ctx.ibgda) ? kMcRdmaUnsupported : kMcNoRoute;
      mc_stream_record(
          scratch, status,
          mc_no_route_error(op, dst_rank, nbytes > 0 ? recv_ptr : (void*)sig_ptr, route));
    }
    return false;
  }
  // 2. The copy.
  if (nbytes > 0) {
    if (congruent && ((((uintptr_t)dst ^ (uintptr_t)src) & 15u) == 0)) {
      mc_int4* dstw = (mc_int4*)(dst + head);
#pragma unroll
      for (int u = 0; u < kLeanPreload; ++u) {
        const size_t i = gtid + (size_t)u * gthreads;
        if (i < nwords) mc_st_na(dstw + i, v[u]);
      }
      const size_t done = (size_t)kLeanPreload * gthreads;
      if (nwords > done) {
        detail::mc_copy_int4_unrolled<8>(dstw + done, srcw + done, nwords - done, gtid, gthreads);
      }
      if (blockIdx.x == 0) {  // < 16 bytes each side
        for (size_t i = threadIdx.x; i < head; i += blockDim.x) dst[i] = src[i];
        for (size_t i = head + nwords * 16 + threadIdx.x; i < nbytes; i += blockDim.x) {
          dst[i] = src[i];
        }
      }
    } else {
      mc_copy_cooperative(dst, src, nbytes, gtid, gthreads);
    }
  }
  *sig_out = sig;
  return sig_ptr != nullptr;
}

/// The release add of a putWithSignal's signal: its fence orders this block's stores (one block)
/// or everything the arrival acquired (several) before the add.
__device__ __forceinline__ void mc_put_release_signal(uint32_t* sig, uint32_t value,
                                                      uint32_t flags) {
  using namespace mooncake::device;
  if ((flags & kPutFlagRedSignal) != 0) {
    mc_red_release_u32(sig, value);
  } else {
    mc_atomic_add_release_u32(sig, value);
  }
}

/// put / putWithSignal with the shortest per-op latency chain (see the file comment); P2P and
/// own-rank routes only.
__global__ void __launch_bounds__(1024, 1)
    mc_put_lean_kernel(mooncake::device::CommCtx ctx, int dst_rank, void* recv_ptr,
                       const void* send_ptr, size_t nbytes, uint32_t* sig_ptr, uint32_t value,
                       uint32_t flags, McStreamScratch* scratch, McStreamStatus* status) {
  using namespace mooncake::device;
  asm volatile("griddepcontrol.wait;" : : : "memory");
  asm volatile("griddepcontrol.launch_dependents;" : : : "memory");
  uint32_t* sig = nullptr;
  if (!mc_lean_put_copy(ctx, dst_rank, recv_ptr, send_ptr, nbytes, sig_ptr, scratch, status,
                        &sig)) {
    return;
  }
  // 3. The signal, once, after every block's stores (the bar.sync makes the block's stores
  // happen before thread 0's fences, which are cumulative).
  mc_bar_sync();
  if (threadIdx.x != 0) return;
  if (gridDim.x > 1) {
    // Without kPutFlagGpuArrival: this block's stores performed at system scope, then the arrival;
    // the acquire half of the last arrival makes every block's (already performed) stores happen
    // before its signal.
    // kPutFlagGpuArrival (te4j's choice): no system-scope fence here. The arrival atom is a release
    // at GPU scope (bar.sync made the block's stores precede it), the last arrival acquires them,
    // and the signal's release at system scope is cumulative: in the PTX memory model causality
    // order is transitive across these scopes, so a receiver that acquires the signal still sees
    // every block's stores. One system-scope fence per op (the signal's) instead of one per block,
    // then one more (docs/history/PERFORMANCE-notebook.md has the figures).
    if ((flags & kPutFlagGpuArrival) == 0) mc_fence();
    if (mc_atom_inc_acq_rel_gpu_u32(&scratch->arrivals, gridDim.x - 1) != gridDim.x - 1) return;
  }
  mc_put_release_signal(sig, value, flags);
}

}  // namespace cuda
}  // namespace te4j
