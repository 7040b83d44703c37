// host_ops.cuh — the host platform's ops table (contract in device_ops.cuh).
//
// "Device" code runs on executor threads of processes that share memory segments, so the
// orders map onto GCC's __atomic builtins on plain words (well defined for naturally aligned,
// lock-free sizes, also across processes), and the block is a single thread.
// Included through device_ops.cuh only.
#pragma once

#if !defined(MC_PLATFORM_HOST)
#error "host_ops.cuh is the host platform's table: include transport/device/device_ops.cuh"
#endif

#include <stdint.h>
#include <string.h>
#include <time.h>

namespace mooncake {
namespace device {

struct alignas(16) mc_int4 {
  int32_t x, y, z, w;
};

MC_DEVICE_INLINE uint32_t mc_ld_acquire_u32(const uint32_t* p) {
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

MC_DEVICE_INLINE uint64_t mc_ld_acquire_u64(const uint64_t* p) {
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

MC_DEVICE_INLINE uint64_t mc_ld_relaxed_u64(const uint64_t* p) {
  return __atomic_load_n(p, __ATOMIC_RELAXED);
}

MC_DEVICE_INLINE void mc_st_relaxed_u64(uint64_t* p, uint64_t v) {
  __atomic_store_n(p, v, __ATOMIC_RELAXED);
}

MC_DEVICE_INLINE void mc_st_release_u32(const uint32_t* p, uint32_t v) {
  __atomic_store_n(const_cast<uint32_t*>(p), v, __ATOMIC_RELEASE);
}

MC_DEVICE_INLINE void mc_st_release_u64(const uint64_t* p, uint64_t v) {
  __atomic_store_n(const_cast<uint64_t*>(p), v, __ATOMIC_RELEASE);
}

MC_DEVICE_INLINE uint32_t mc_atomic_add_release_u32(uint32_t* p, uint32_t v) {
  return __atomic_fetch_add(p, v, __ATOMIC_RELEASE);
}

// No "no return" form on a CPU (x86: lock add either way): the same release add.
MC_DEVICE_INLINE void mc_red_release_u32(uint32_t* p, uint32_t v) {
  (void)__atomic_fetch_add(p, v, __ATOMIC_RELEASE);
}

// No non-coherent path on a CPU: a plain 16-byte copy (memcpy keeps it free of aliasing UB).
MC_DEVICE_INLINE mc_int4 mc_ld_nc(const mc_int4* p) {
  mc_int4 v;
  memcpy(&v, p, sizeof(v));
  return v;
}

MC_DEVICE_INLINE void mc_st_na(const mc_int4* p, const mc_int4& v) {
  memcpy(const_cast<mc_int4*>(p), &v, sizeof(v));
}

// Same strength as the CUDA table's fence.acq_rel.sys.
MC_DEVICE_INLINE void mc_fence() { __atomic_thread_fence(__ATOMIC_ACQ_REL); }

// One executor thread is the whole "block".
MC_DEVICE_INLINE void mc_bar_sync() {}

MC_DEVICE_INLINE void mc_pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#else
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
#endif
}

MC_DEVICE_INLINE uint16_t mc_bswap16(uint16_t v) { return __builtin_bswap16(v); }
MC_DEVICE_INLINE uint32_t mc_bswap32(uint32_t v) { return __builtin_bswap32(v); }
MC_DEVICE_INLINE uint64_t mc_bswap64(uint64_t v) { return __builtin_bswap64(v); }

// CLOCK_MONOTONIC: never jumps with wall-clock changes, so deadlines stay bounded.
MC_DEVICE_INLINE uint64_t mc_globaltimer_ns() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

// Upstream Mooncake's names (meaning in cuda/cuda_ops.cuh). The int words use the same GCC
// atomics as the unsigned ones; a block is one thread and a grid one block, so the barriers
// have nobody to wait for.
MC_DEVICE_INLINE int mc_ld_acquire(const int* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }

MC_DEVICE_INLINE void mc_st_release(const int* p, int v) {
  __atomic_store_n(const_cast<int*>(p), v, __ATOMIC_RELEASE);
}

MC_DEVICE_INLINE int mc_atomic_add_release(const int* p, int v) {
  return __atomic_fetch_add(const_cast<int*>(p), v, __ATOMIC_RELEASE);
}

MC_DEVICE_INLINE int mc_ld_nc_s32(const int* p) { return *p; }
MC_DEVICE_INLINE float mc_ld_nc_f32(const float* p) { return *p; }
MC_DEVICE_INLINE int64_t mc_ld_nc_s64(const int64_t* p) { return *p; }

MC_DEVICE_INLINE void mc_bar_init() {}
MC_DEVICE_INLINE void mc_bar_sync(int bar_id, int num_threads) {
  (void)bar_id;
  (void)num_threads;
}
MC_DEVICE_INLINE void mc_grid_sync() {}
MC_DEVICE_INLINE void mc_fence_barrier_fence() { mc_fence(); }

}  // namespace device
}  // namespace mooncake
