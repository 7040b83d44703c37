// detail/copy_bulk.cuh — bulk-copy building blocks for large puts (CUDA only; the bulk put
// variants).
//
//   mc_copy_int4_unrolled<U>   16-byte words, U independent loads in flight per participant
//                              before their stores (copy.cuh uses U = 4)
//   mc_bulk_*                  the Hopper bulk copy engine (TMA, plain sm_90): cp.async.bulk
//                              global -> shared (completes on an mbarrier) and shared -> global
//                              (bulk async-group), which moves large chunks per instruction and
//                              keeps many bytes in flight from one thread
//   mc_bulk_block_copy<S, C>   one block's share of a copy through S shared-memory stages of C
//                              bytes, driven by thread 0 of the block
//
// Requirements of the bulk path: source and destination 16-byte aligned, byte counts multiples
// of 16 (callers copy the unaligned head/tail another way), the source stable while the copy
// runs (as for every put). The destination may be a peer-mapped (NVLink) address.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "copy.cuh"

#if defined(MC_PLATFORM_CUDA)

namespace mooncake {
namespace device {
namespace detail {

template <int kUnroll>
MC_DEVICE_INLINE void mc_copy_int4_unrolled(mc_int4* dst, const mc_int4* src, size_t nwords,
                                            size_t tid, size_t nthreads) {
  size_t i = tid;
  for (; i + (size_t)(kUnroll - 1) * nthreads < nwords; i += (size_t)kUnroll * nthreads) {
    mc_int4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) v[u] = mc_ld_nc(src + i + (size_t)u * nthreads);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) mc_st_na(dst + i + (size_t)u * nthreads, v[u]);
  }
  for (; i < nwords; i += nthreads) mc_st_na(dst + i, mc_ld_nc(src + i));
}

/// Any-alignment copy with the U-deep 16-byte body (falls back to copy.cuh's narrower words when
/// dst and src are not congruent modulo 16).
template <int kUnroll>
MC_DEVICE_INLINE void mc_copy_cooperative_unrolled(void* dst, const void* src, size_t n, size_t tid,
                                                   size_t nthreads) {
  uint8_t* d = (uint8_t*)dst;
  const uint8_t* s = (const uint8_t*)src;
  if ((((uintptr_t)d ^ (uintptr_t)s) & 15u) != 0) {
    mc_copy_cooperative(dst, src, n, tid, nthreads);
    return;
  }
  size_t head = (16 - ((uintptr_t)d & 15u)) & 15u;
  if (head > n) head = n;
  const size_t nwords = (n - head) / 16;
  const size_t body_end = head + nwords * 16;
  for (size_t i = tid; i < head; i += nthreads) d[i] = s[i];
  mc_copy_int4_unrolled<kUnroll>((mc_int4*)(d + head), (const mc_int4*)(s + head), nwords, tid,
                                 nthreads);
  for (size_t i = body_end + tid; i < n; i += nthreads) d[i] = s[i];
}

// ---- bulk copy engine (TMA) primitives: one PTX instruction each

MC_DEVICE_INLINE uint32_t mc_smem_addr(const void* p) {
  return (uint32_t)__cvta_generic_to_shared(p);
}

MC_DEVICE_INLINE void mc_mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;"
               :
               : "r"(mc_smem_addr(bar)), "r"(count)
               : "memory");
}

/// Makes mbarrier initialisation visible to the async proxy (the bulk copy engine).
MC_DEVICE_INLINE void mc_mbar_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;" : : : "memory");
}

MC_DEVICE_INLINE void mc_mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
               :
               : "r"(mc_smem_addr(bar)), "r"(bytes)
               : "memory");
}

MC_DEVICE_INLINE bool mc_mbar_try_wait(uint64_t* bar, uint32_t parity) {
  uint32_t done;
  asm volatile(
      "{\n\t.reg .pred p;\n\t"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
      "selp.u32 %0, 1, 0, p;\n\t}"
      : "=r"(done)
      : "r"(mc_smem_addr(bar)), "r"(parity)
      : "memory");
  return done != 0;
}

/// global -> this CTA's shared memory; completes `bytes` of transaction count on `bar`.
MC_DEVICE_INLINE void mc_bulk_load(void* smem_dst, const void* gsrc, uint32_t bytes,
                                   uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
      :
      : "r"(mc_smem_addr(smem_dst)), "l"(gsrc), "r"(bytes), "r"(mc_smem_addr(bar))
      : "memory");
}

/// shared memory -> global (any global address, peer-mapped included), in the current
/// bulk async-group.
MC_DEVICE_INLINE void mc_bulk_store(void* gdst, const void* smem_src, uint32_t bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;"
               :
               : "l"(gdst), "r"(mc_smem_addr(smem_src)), "r"(bytes)
               : "memory");
}

MC_DEVICE_INLINE void mc_bulk_commit() {
  asm volatile("cp.async.bulk.commit_group;" : : : "memory");
}

/// Waits until at most N bulk groups still READ their shared-memory source.
template <int N>
MC_DEVICE_INLINE void mc_bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" : : "n"(N) : "memory");
}

/// Waits until at most N bulk groups are incomplete (their writes performed).
template <int N>
MC_DEVICE_INLINE void mc_bulk_wait() {
  asm volatile("cp.async.bulk.wait_group %0;" : : "n"(N) : "memory");
}

/// Orders the async proxy's (bulk copies') memory accesses with this thread's later generic ones.
MC_DEVICE_INLINE void mc_fence_proxy_async() { asm volatile("fence.proxy.async;" : : : "memory"); }

/// Bounded wait on an mbarrier phase: false once mc_globaltimer_ns() passes deadline_ns.
MC_DEVICE_INLINE bool mc_mbar_wait(uint64_t* bar, uint32_t parity, uint64_t deadline_ns) {
  for (uint32_t tries = 1; !mc_mbar_try_wait(bar, parity); ++tries) {
    if ((tries & 1023u) == 0 && mc_globaltimer_ns() > deadline_ns) return false;
  }
  return true;
}

/// This block's share of a 16-byte aligned copy of `bytes` (a multiple of 16): chunks of kChunk
/// bytes go to blocks round-robin; thread 0 of the block pipelines them through kStages stages
/// of `smem` (kStages * kChunk bytes, 16-byte aligned) with `bars` (kStages mbarriers). Call
/// with every thread of the block (it synchronises the block once at entry); only thread 0
/// moves data. On return thread 0's bulk stores are complete and ordered before its later
/// generic memory operations. Returns false (thread 0) when a chunk load did not complete by
/// deadline_ns: the copy is then incomplete.
template <int kStages, int kChunk>
__device__ __forceinline__ bool mc_bulk_block_copy(uint8_t* dst, const uint8_t* src, size_t bytes,
                                                   uint8_t* smem, uint64_t* bars,
                                                   uint64_t deadline_ns) {
  static_assert(kChunk % 16 == 0 && kChunk > 0, "chunk must be a multiple of 16");
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) mc_mbar_init(&bars[s], 1);
    mc_mbar_init_fence();
  }
  __syncthreads();
  if (threadIdx.x != 0) return true;
  const size_t nchunks = (bytes + kChunk - 1) / kChunk;
  const size_t first = blockIdx.x;
  const size_t step = gridDim.x;
  if (first >= nchunks) return true;
  const size_t mine = (nchunks - first + step - 1) / step;  // chunks of this block
  auto chunk_bytes = [&](size_t j) -> uint32_t {
    const size_t off = j * (size_t)kChunk;
    const size_t left = bytes - off;
    return (uint32_t)(left < (size_t)kChunk ? left : (size_t)kChunk);
  };
  auto issue_load = [&](size_t k) {  // k-th chunk of this block into stage k % kStages
    const int s = (int)(k % kStages);
    const size_t j = first + k * step;
    const uint32_t n = chunk_bytes(j);
    mc_mbar_arrive_expect_tx(&bars[s], n);
    mc_bulk_load(smem + (size_t)s * kChunk, src + j * (size_t)kChunk, n, &bars[s]);
  };
  const size_t prologue = mine < (size_t)kStages ? mine : (size_t)kStages;
  for (size_t k = 0; k < prologue; ++k) issue_load(k);
  bool ok = true;
  for (size_t k = 0; k < mine; ++k) {
    const int s = (int)(k % kStages);
    if (!mc_mbar_wait(&bars[s], (uint32_t)((k / kStages) & 1u), deadline_ns)) {
      ok = false;
      break;
    }
    const size_t j = first + k * step;
    mc_bulk_store(dst + j * (size_t)kChunk, smem + (size_t)s * kChunk, chunk_bytes(j));
    mc_bulk_commit();
    // Refill the stage of the previous chunk once its store has read it (this chunk's store
    // may still be reading).
    if (k >= 1 && k - 1 + kStages < mine) {
      mc_bulk_wait_read<1>();
      issue_load(k - 1 + kStages);
    }
  }
  // Shared memory must outlive every read of it, and the writes must be performed before the
  // caller's signal. (After a timed-out load — a hardware fault — loads may still be pending;
  // nothing can wait for them any more.)
  mc_bulk_wait<0>();
  mc_fence_proxy_async();
  return ok;
}

}  // namespace detail
}  // namespace device
}  // namespace mooncake

#endif  // MC_PLATFORM_CUDA
