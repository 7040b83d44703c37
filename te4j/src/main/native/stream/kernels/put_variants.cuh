// kernels/put_variants.cuh — the put / putWithSignal kernel variants, selected at run
// time by the tuning knob `put` (te4j/tuning.h) and measured side by side by te4j-bench.
//
//   u8 / u16   grid-stride 16-byte copy with 8 / 16 loads in flight per thread
//   u8c        each block copies one contiguous slab (8 in flight)
//   tma*       Hopper bulk copies (cp.async.bulk) global -> shared -> peer, S stages x C bytes
//              per block, driven by thread 0 (detail/copy_bulk.cuh); puts under 256 KiB use u8
//   tmah/tmaq  hybrid: thread 0 moves 1/2 (1/4) of the body through tma8's bulk pipeline while
//              warps 1.. copy the rest with 16-byte LSU stores (does the SM's bulk path add to
//              its store path, or share its limit?)
//   auto       (default) mc_put_lean_kernel below kAutoBulkBytes, tma8 from there on
//
// mc_put_lean_kernel (put=auto, < 32 MiB) is the kernel for per-op latency:
//   * no block barrier before the copy: every thread issues its first 16-byte source loads, the
//     abort-word load and the route loads back to back, so their latencies overlap (before: abort
//     load -> bar.sync -> route loads -> source loads, three dependent memory trips);
//   * one block: bar.sync, then thread 0's release add (red.release.sys: fence + red) only;
//   * several blocks: per block atom.inc.acq_rel.gpu on the arrival counter (atom.inc wraps to 0
//     on the last arrival: no reset store); the last block then signals with one release add,
//     whose system-scope fence covers every block's stores (arrival=gpu, the default;
//     arrival=sys adds a per-block fence.acq_rel.sys). docs/PERFORMANCE.md has the variants
//     this replaced and their figures.
// Launches per op: one kernel, nothing else (no memset, no bookkeeping kernel).
//
// Every variant keeps the production contract of kernels/put_kernels.cuh: an op is skipped when
// the stream is aborted, a missing route is recorded, and putWithSignal signals once, after
// every block's data is visible (same arrival protocol). Differences that are not the copy:
//   * entry: griddepcontrol.wait (a no-op unless launched with programmatic dependent launch,
//     knob pdl=1), then griddepcontrol.launch_dependents so that the next PDL launch on the
//     stream can be scheduled while this one runs; the next kernel still waits, in its own
//     griddepcontrol.wait, for this grid's completion and memory flush, so stream order holds;
//   * the abort flag is read with ld.relaxed.gpu (only kernels of this stream write it, and
//     kernel boundaries order them), not an acquire at system scope;
//   * the signal may be a red (no return value; knob signal=red);
//   * P2P and own-rank routes only: a rank that only RDMA reaches is recorded as
//     kMcRdmaUnsupported (the production kernels, put=base, the default, post RDMA ops).
#pragma once

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include <atomic>

#include "stream_state.cuh"
#include "te4j/tuning.h"
#include "transport/device/comm_device.cuh"
#include "transport/device/detail/copy.cuh"
#include "transport/device/detail/copy_bulk.cuh"

namespace te4j {
namespace cuda {

enum : uint32_t {
  kPutVariantRedSignal = 1u,  // knob signal=red (or set): the release add without return value
  kPutVariantGpuArrival = 2u,  // knob arrival=gpu: no per-block system-scope fence (lean kernel)
};

/// The kernel flags the current knobs ask for.
inline uint32_t mc_put_variant_flags() {
  using namespace te4j::tuning;
  uint32_t flags = 0;
  if (get(kSignal) != kSignalAtom) flags |= kPutVariantRedSignal;
  if (get(kArrival) == kArrivalGpu) flags |= kPutVariantGpuArrival;
  return flags;
}

enum PutVariantKind : int {
  kVariantGrid = 0,
  kVariantContig = 1,
  kVariantTma = 2,
  kVariantTmaHybrid = 3,  // kBulkQuarters / 4 of the body via the bulk pipeline, the rest LSU
};

// Below this a bulk (TMA) variant uses the u8 grid kernel: too few chunks to spread over blocks.
constexpr size_t kBulkMinBytes = 256 * 1024;
// Bound of a bulk chunk's completion wait (only a hardware fault gets near it).
constexpr uint64_t kBulkDeadlineNs = 10000000000ull;
// put=auto: from this size on the tma8 kernel (it won at 1 GiB on 16 SMs, tied at 64 MiB), below
// it the lean kernel.
constexpr size_t kAutoBulkBytes = 32u << 20;
// Source words each thread of the lean kernel loads before it knows the route (registers: 4 x 4).
constexpr int kLeanPreload = 4;
// put=cluster: blocks of its single cluster (8: the portable cluster size).
constexpr unsigned kMaxClusterBlocks = 8;

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

// Registers: U in-flight 16-byte words need 4U registers; the bound keeps 1024-thread blocks
// legal for U <= 8 (64 registers) and gives U = 16 up to 128 (blocks of at most 512 threads).
template <int kKind, int kUnroll, int kStages, int kChunk, int kBulkQuarters = 4>
__global__ void __launch_bounds__(kUnroll > 8 ? 512 : 1024, 1)
    mc_put_variant_kernel(mooncake::device::CommCtx ctx, int dst_rank, void* recv_ptr,
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
    if (kKind == kVariantContig) {
      const size_t slab = ((nbytes + gridDim.x - 1) / gridDim.x + 15) / 16 * 16;
      const size_t lo = (size_t)blockIdx.x * slab;
      if (lo < nbytes) {
        const size_t n = nbytes - lo < slab ? nbytes - lo : slab;
        detail::mc_copy_cooperative_unrolled<kUnroll>(dst + lo, src + lo, n, threadIdx.x,
                                                      blockDim.x);
      }
    } else if ((kKind == kVariantTma || kKind == kVariantTmaHybrid) &&
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
      if (kKind == kVariantTmaHybrid) {
        bulk = body / 4 * kBulkQuarters / (size_t)kChunk * (size_t)kChunk;
        if (blockDim.x <= 32) bulk = body;  // no warp 1: all bulk
      }
      const uint64_t deadline = mc_globaltimer_ns() + kBulkDeadlineNs;
      const bool bulk_ok = detail::mc_bulk_block_copy<kStages, kChunk>(
          dst + head, src + head, bulk, mc_bulk_smem, s_bars, deadline);
      if (kKind == kVariantTmaHybrid && bulk < body && threadIdx.x >= 32) {
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
  const int rc = (flags & kPutVariantRedSignal) != 0
                     ? mc_signal_noret(ctx, dst_rank, 0, 1, sig_ptr, value)
                     : mc_signal(ctx, dst_rank, 0, 1, sig_ptr, value);
  if (rc != kMcRouteOk) {
    mc_stream_record(scratch, status, mc_no_route_error(op, dst_rank, sig_ptr, rc));
  }
}

/// Cluster barrier of every thread of the cluster: the arrive releases, the wait acquires, at
/// cluster scope (Hopper thread-block clusters; the hardware barrier, no memory round trip).
__device__ __forceinline__ void mc_cluster_sync_acq_rel() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;"
               :
               :
               : "memory");
}

__device__ __forceinline__ uint32_t mc_cluster_ctarank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}

/// put=auto below kAutoBulkBytes: put / putWithSignal with the shortest per-op latency chain (see
/// the file comment). Same contract as the other variants (abort skip, no-route record, one
/// signal after every block's data is visible); P2P and own-rank routes only.
/// kClusterArrival (knob put=cluster): the grid is ONE thread-block cluster and the blocks meet
/// at the cluster barrier instead of the arrival counter (an L2 atomic round trip) before one
/// block signals.
template <bool kClusterArrival>
__global__ void __launch_bounds__(1024, 1)
    mc_put_lean_kernel(mooncake::device::CommCtx ctx, int dst_rank, void* recv_ptr,
                       const void* send_ptr, size_t nbytes, uint32_t* sig_ptr, uint32_t value,
                       uint32_t flags, McStreamScratch* scratch, McStreamStatus* status) {
  using namespace mooncake::device;
  asm volatile("griddepcontrol.wait;" : : : "memory");
  asm volatile("griddepcontrol.launch_dependents;" : : : "memory");
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
  if (aborted != 0) return;
  const McStreamOp op = sig_ptr != nullptr ? kMcOpPutWithSignal : kMcOpPut;
  if ((nbytes > 0 && dst == nullptr) || (sig_ptr != nullptr && sig == nullptr)) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {  // uniform: every thread computed the same route
      const int route = mc_rdma_available(ctx.ibgda) ? kMcRdmaUnsupported : kMcNoRoute;
      mc_stream_record(scratch, status,
                       mc_no_route_error(op, dst_rank, nbytes > 0 ? recv_ptr : (void*)sig_ptr,
                                         route));
    }
    return;
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
  if (sig_ptr == nullptr) return;
  // 3. The signal, once, after every block's stores (the bar.sync makes the block's stores
  // happen before thread 0's fences, which are cumulative).
  mc_bar_sync();
  if (kClusterArrival && gridDim.x > 1) {
    // Each block's stores performed at system scope by its thread 0 before it arrives (unless
    // arrival=gpu, see below); the signalling thread's wait acquires every arrival, so every
    // block's stores happen before its release add (the counter's argument, with a cluster-scope
    // barrier).
    if (threadIdx.x == 0 && (flags & kPutVariantGpuArrival) == 0) mc_fence();
    mc_cluster_sync_acq_rel();
    if (threadIdx.x != 0 || mc_cluster_ctarank() != 0) return;
  } else if (threadIdx.x != 0) {
    return;
  } else if (gridDim.x > 1) {
    // arrival=sys: this block's stores performed at system scope, then the arrival;
    // the acquire half of the last arrival makes every block's (already performed) stores happen
    // before its signal.
    // arrival=gpu (default): no system-scope fence here. The arrival atom is a release at GPU scope
    // (bar.sync made the block's stores precede it), the last arrival acquires them, and the
    // signal's release at system scope is cumulative: in the PTX memory model causality order
    // is transitive across these scopes, so a receiver that acquires the signal still sees every
    // block's stores. One system-scope fence per op (the signal's) instead of one per block,
    // then one more. Run 9 (2xH200): 64 KiB per op 3.455 -> 2.605 us (Java graph).
    if ((flags & kPutVariantGpuArrival) == 0) mc_fence();
    if (mc_atom_inc_acq_rel_gpu_u32(&scratch->arrivals, gridDim.x - 1) != gridDim.x - 1) return;
  }
  // Release add: its fence orders this block's stores (one block) or everything the arrival
  // acquired (several) before the add.
  if ((flags & kPutVariantRedSignal) != 0) {
    mc_red_release_u32(sig, value);
  } else {
    mc_atomic_add_release_u32(sig, value);
  }
}

using PutVariantFn = void (*)(mooncake::device::CommCtx, int, void*, const void*, size_t,
                              uint32_t*, uint32_t, uint32_t, McStreamScratch*, McStreamStatus*);

struct PutVariantLaunch {
  PutVariantFn fn;
  size_t smem;  // dynamic shared memory per block
};

/// The kernel of a `put` knob value for nbytes (nullptr fn: the production kernels).
inline PutVariantLaunch mc_put_variant_for(int put_knob, size_t nbytes) {
  using namespace te4j::tuning;
  const bool bulk = nbytes >= kBulkMinBytes;
  switch (put_knob) {
    case kPutU8: return {mc_put_variant_kernel<kVariantGrid, 8, 1, 16>, 0};
    case kPutU16: return {mc_put_variant_kernel<kVariantGrid, 16, 1, 16>, 0};
    case kPutU8Contig: return {mc_put_variant_kernel<kVariantContig, 8, 1, 16>, 0};
    case kPutTma:
      if (bulk) return {mc_put_variant_kernel<kVariantTma, 8, 4, 32768>, 4 * 32768};
      return {mc_put_variant_kernel<kVariantGrid, 8, 1, 16>, 0};
    case kPutTma8:
      if (bulk) return {mc_put_variant_kernel<kVariantTma, 8, 8, 16384>, 8 * 16384};
      return {mc_put_variant_kernel<kVariantGrid, 8, 1, 16>, 0};
    case kPutTma3:
      if (bulk) return {mc_put_variant_kernel<kVariantTma, 8, 3, 65536>, 3 * 65536};
      return {mc_put_variant_kernel<kVariantGrid, 8, 1, 16>, 0};
    case kPutTmaHalf:
      if (bulk) return {mc_put_variant_kernel<kVariantTmaHybrid, 8, 8, 16384, 2>, 8 * 16384};
      return {mc_put_variant_kernel<kVariantGrid, 8, 1, 16>, 0};
    case kPutTmaQuarter:
      if (bulk) return {mc_put_variant_kernel<kVariantTmaHybrid, 8, 8, 16384, 1>, 8 * 16384};
      return {mc_put_variant_kernel<kVariantGrid, 8, 1, 16>, 0};
    case kPutAuto:
      if (nbytes >= kAutoBulkBytes) return {mc_put_variant_kernel<kVariantTma, 8, 8, 16384>, 8 * 16384};
      return {mc_put_lean_kernel<false>, 0};
    case kPutCluster: return {mc_put_lean_kernel<true>, 0};
    default: return {nullptr, 0};
  }
}

/// Raises the dynamic shared-memory limit of a bulk kernel on the current device, once per
/// (knob value, device < 64).
inline cudaError_t mc_allow_smem(int put_knob, PutVariantFn fn, size_t smem, int device) {
  if (smem <= 48 * 1024) return cudaSuccess;
  static std::atomic<uint64_t> done[16];  // kPutAuto shares tma8's kernel: its own bit set
  const uint64_t bit = 1ull << (device & 63);
  std::atomic<uint64_t>& d = done[put_knob & 15];
  if ((d.load(std::memory_order_acquire) & bit) != 0) return cudaSuccess;
  const cudaError_t e =
      cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
  if (e == cudaSuccess) d.fetch_or(bit, std::memory_order_acq_rel);
  return e;
}

/// Launches the variant kernel of `put_knob` (not kPutBase) on the current device; sig_ptr
/// nullptr = put, else putWithSignal. pdl: programmatic stream serialization; flags: kPutVariant*
/// (mc_put_variant_flags()).
inline cudaError_t mc_launch_put_variant(int put_knob, bool pdl, uint32_t flags, int device,
                                         unsigned blocks, unsigned threads, cudaStream_t stream,
                                         const mooncake::device::CommCtx& ctx, int dst_rank,
                                         void* recv_ptr, const void* send_ptr, size_t nbytes,
                                         uint32_t* sig_ptr, uint32_t value,
                                         McStreamScratch* scratch, McStreamStatus* status) {
  const PutVariantLaunch v = mc_put_variant_for(put_knob, nbytes);
  if (v.fn == nullptr) return cudaErrorInvalidValue;
  if (put_knob == te4j::tuning::kPutU16 && threads > 512) {  // its register bound (see above)
    blocks *= (threads + 511) / 512;
    threads = 512;
  }
  cudaError_t e = mc_allow_smem(put_knob, v.fn, v.smem, device);
  if (e != cudaSuccess) return e;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(blocks);
  cfg.blockDim = dim3(threads);
  cfg.dynamicSmemBytes = v.smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[2];
  cfg.attrs = attr;
  if (pdl) {
    attr[cfg.numAttrs].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[cfg.numAttrs].val.programmaticStreamSerializationAllowed = 1;
    ++cfg.numAttrs;
  }
  if (put_knob == te4j::tuning::kPutCluster) {
    // One cluster of the whole grid: at most 8 blocks (the portable cluster size) take part.
    if (blocks > kMaxClusterBlocks) blocks = kMaxClusterBlocks;
    cfg.gridDim = dim3(blocks);
    attr[cfg.numAttrs].id = cudaLaunchAttributeClusterDimension;
    attr[cfg.numAttrs].val.clusterDim.x = blocks;
    attr[cfg.numAttrs].val.clusterDim.y = 1;
    attr[cfg.numAttrs].val.clusterDim.z = 1;
    ++cfg.numAttrs;
  }
  return cudaLaunchKernelEx(&cfg, v.fn, ctx, dst_rank, recv_ptr, send_ptr, nbytes, sig_ptr, value,
                            flags, scratch, status);
}

}  // namespace cuda
}  // namespace te4j
