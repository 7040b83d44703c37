// cuda_ops.cuh — the CUDA platform's ops table (contract in device_ops.cuh).
//
// One PTX instruction (one asm statement) per function, system scope throughout, PTX ISA >= 7.0
// and sm_70+ (the .acquire/.release qualifiers, L1::no_allocate, nanosleep); te4j builds sm_90.
// Included through device_ops.cuh (or transport/device/cuda/cuda_ops.cuh, which adds upstream
// Mooncake's names on top of this table).
#pragma once

#if !defined(MC_PLATFORM_CUDA)
#error "cuda_ops.cuh is the CUDA platform's table: include transport/device/device_ops.cuh"
#endif

#include <stdint.h>

namespace mooncake {
namespace device {

typedef int4 mc_int4;

MC_DEVICE_INLINE uint32_t mc_ld_acquire_u32(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

MC_DEVICE_INLINE uint64_t mc_ld_acquire_u64(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

MC_DEVICE_INLINE uint64_t mc_ld_relaxed_u64(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

MC_DEVICE_INLINE void mc_st_relaxed_u64(uint64_t* p, uint64_t v) {
  asm volatile("st.relaxed.sys.global.u64 [%0], %1;" : : "l"(p), "l"(v) : "memory");
}

MC_DEVICE_INLINE void mc_st_release_u32(const uint32_t* p, uint32_t v) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" : : "l"(p), "r"(v) : "memory");
}

MC_DEVICE_INLINE void mc_st_release_u64(const uint64_t* p, uint64_t v) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" : : "l"(p), "l"(v) : "memory");
}

MC_DEVICE_INLINE uint32_t mc_atomic_add_release_u32(uint32_t* p, uint32_t v) {
  uint32_t old;
  asm volatile("atom.release.sys.global.add.u32 %0, [%1], %2;"
               : "=r"(old)
               : "l"(p), "r"(v)
               : "memory");
  return old;
}

// The same add without a return value (PTX red): the issuing thread never waits for the old
// value, so it can go on (poll, exit) while the add travels. Same release ordering.
MC_DEVICE_INLINE void mc_red_release_u32(uint32_t* p, uint32_t v) {
  asm volatile("red.release.sys.global.add.u32 [%0], %1;" : : "l"(p), "r"(v) : "memory");
}

// Non-coherent (read-only path) load: the texture/L1 path may serve stale data if the location
// is written during the kernel, so only a put's source buffer (stable while the put runs) uses it.
MC_DEVICE_INLINE mc_int4 mc_ld_nc(const mc_int4* p) {
  mc_int4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.s32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// Streamed store: copied data is not re-read by this block, keep it out of L1.
MC_DEVICE_INLINE void mc_st_na(const mc_int4* p, const mc_int4& v) {
  asm volatile("st.global.L1::no_allocate.v4.s32 [%0], {%1, %2, %3, %4};"
               :
               : "l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
               : "memory");
}

// fence.acq_rel.sys, not fence.sc.sys: te4j's patterns are message passing (write data, fence,
// then a relaxed/release atomic; or atomic, fence, then read), for which an acq_rel fence makes
// the release/acquire pattern of the PTX memory model. fence.sc is only needed for store->load
// ordering between independent locations (Dekker-style), which no te4j op relies on, and it is
// markedly slower at system scope.
MC_DEVICE_INLINE void mc_fence() { asm volatile("fence.acq_rel.sys;" : : : "memory"); }

// Barrier 0 over the whole block, as __syncthreads(); also orders memory at block scope.
MC_DEVICE_INLINE void mc_bar_sync() { asm volatile("bar.sync 0;" : : : "memory"); }

// Back-off inside a bounded spin: lets other warps use the memory system.
MC_DEVICE_INLINE void mc_pause() { asm volatile("nanosleep.u32 32;" : : : "memory"); }

// prmt selector: nibble i names the source byte of result byte i (4 = a byte of the zero operand).
MC_DEVICE_INLINE uint16_t mc_bswap16(uint16_t v) {
  uint32_t r;
  asm("prmt.b32 %0, %1, 0, 0x4401;" : "=r"(r) : "r"((uint32_t)v));
  return (uint16_t)r;
}

MC_DEVICE_INLINE uint32_t mc_bswap32(uint32_t v) {
  uint32_t r;
  asm("prmt.b32 %0, %1, 0, 0x0123;" : "=r"(r) : "r"(v));
  return r;
}

MC_DEVICE_INLINE uint64_t mc_bswap64(uint64_t v) {
  uint64_t r;
  asm("{\n\t"
      ".reg .b32 lo, hi, rlo, rhi;\n\t"
      "mov.b64 {lo, hi}, %1;\n\t"
      "prmt.b32 rlo, hi, 0, 0x0123;\n\t"
      "prmt.b32 rhi, lo, 0, 0x0123;\n\t"
      "mov.b64 %0, {rlo, rhi};\n\t"
      "}"
      : "=l"(r)
      : "l"(v));
  return r;
}

// %globaltimer: nanoseconds, monotonic per GPU (updates every ~1 us on some parts).
MC_DEVICE_INLINE uint64_t mc_globaltimer_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

}  // namespace device
}  // namespace mooncake
