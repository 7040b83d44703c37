// cuda/cuda_ops.cuh — the CUDA ops table at the path upstream Mooncake's device_ops.cuh selects.
//
// It is te4j's CUDA table (transport/device/cuda_ops.cuh, contract in device_ops.cuh) plus the
// names upstream's table has and te4j's lacks, with upstream's signatures and meaning:
//
//   mc_ld_acquire(const int*)              acquire load of a signed word (system scope)
//   mc_st_release(const int*, int)         release STORE (not an add) of a signed word
//   mc_atomic_add_release(const int*, int) release atomic add, returns the old value; negative
//                                          values subtract (two's complement)
//   mc_ld_nc_s32/_f32/_s64(p)              scalar loads through the non-coherent path (the same
//                                          restriction as mc_ld_nc: data nobody writes meanwhile)
//   mc_bar_init()                          nothing to set up for hardware named barriers
//   mc_bar_sync(bar_id, num_threads)       named barrier bar_id (0..15) over num_threads threads
//                                          (a multiple of 32): warp groups of one block meet on
//                                          their own ids while other warps run on
//   mc_grid_sync()                         every thread of the grid meets; the kernel must be
//                                          launched cooperatively (cudaLaunchCooperativeKernel),
//                                          as cooperative groups require
//   mc_fence_barrier_fence()               block barrier that also orders memory at block scope
//
// Pointers are const where upstream's are (the stores write through them anyway: upstream's
// clients pass read-only views of buffers they own).
#pragma once

#include <stdint.h>

// nvcc always finds the toolkit's headers. NVRTC has the device built-ins but not the toolkit's
// headers unless the include path names them, and only mc_grid_sync needs one (cooperative
// groups): without it every other op still compiles, and mc_grid_sync fails at the call with a
// message that names the fix (te4j's KernelCompiler acts on it by adding the toolkit's folder).
#if !defined(__CUDACC_RTC__)
#include <cooperative_groups.h>
#include <cuda_runtime.h>
#define MC_HAVE_COOPERATIVE_GROUPS 1
#elif defined(__has_include)
#if __has_include(<cooperative_groups.h>)
#include <cooperative_groups.h>
#define MC_HAVE_COOPERATIVE_GROUPS 1
#endif
#endif

#include "transport/device/platform.cuh"
#include "transport/device/cuda_ops.cuh"

namespace mooncake {
namespace device {

MC_DEVICE_INLINE int mc_ld_acquire(const int* p) {
  int v;
  asm volatile("ld.acquire.sys.global.s32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

MC_DEVICE_INLINE void mc_st_release(const int* p, int v) {
  asm volatile("st.release.sys.global.s32 [%0], %1;" : : "l"(p), "r"(v) : "memory");
}

MC_DEVICE_INLINE int mc_atomic_add_release(const int* p, int v) {
  int old;
  asm volatile("atom.release.sys.global.add.s32 %0, [%1], %2;"
               : "=r"(old)
               : "l"(p), "r"(v)
               : "memory");
  return old;
}

MC_DEVICE_INLINE int mc_ld_nc_s32(const int* p) {
  int v;
  asm volatile("ld.global.nc.L1::no_allocate.s32 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
}

MC_DEVICE_INLINE float mc_ld_nc_f32(const float* p) {
  float v;
  asm volatile("ld.global.nc.L1::no_allocate.f32 %0, [%1];" : "=f"(v) : "l"(p));
  return v;
}

MC_DEVICE_INLINE int64_t mc_ld_nc_s64(const int64_t* p) {
  int64_t v;
  asm volatile("ld.global.nc.L1::no_allocate.s64 %0, [%1];" : "=l"(v) : "l"(p));
  return v;
}

MC_DEVICE_INLINE void mc_bar_init() {}

// The "memory" clobber keeps the compiler from moving shared-memory accesses across the barrier,
// which is what callers of a named barrier rely on.
MC_DEVICE_INLINE void mc_bar_sync(int bar_id, int num_threads) {
  asm volatile("bar.sync %0, %1;" : : "r"(bar_id), "r"(num_threads) : "memory");
}

#if defined(MC_HAVE_COOPERATIVE_GROUPS)
MC_DEVICE_INLINE void mc_grid_sync() { cooperative_groups::this_grid().sync(); }
#else
// A template, so that the assertion fires only where a kernel calls it.
template <int kNeedsToolkitHeaders = 0>
MC_DEVICE_INLINE void mc_grid_sync() {
  static_assert(kNeedsToolkitHeaders != 0,
                "te4j: mc_grid_sync needs <cooperative_groups.h> from the CUDA toolkit's headers");
}
#endif

MC_DEVICE_INLINE void mc_fence_barrier_fence() { __syncthreads(); }

}  // namespace device
}  // namespace mooncake
