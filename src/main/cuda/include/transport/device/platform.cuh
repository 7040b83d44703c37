// platform.cuh — compile-time platform selection for te4j's single-source device code.
//
// The same headers compile with nvcc (CUDA platform: device code runs on the GPU) and with g++
// (host platform: "device" code runs on executor threads and memory is shared-memory segments).
// Exactly one of MC_PLATFORM_CUDA / MC_PLATFORM_HOST is defined after this header.
#pragma once

#if defined(__CUDACC__)
#define MC_PLATFORM_CUDA 1
#define MC_HOST_DEVICE __host__ __device__
#define MC_DEVICE __device__
#define MC_FORCEINLINE __forceinline__
#define MC_UNROLL _Pragma("unroll")
#else
#define MC_PLATFORM_HOST 1
#define MC_HOST_DEVICE
#define MC_DEVICE
#define MC_FORCEINLINE inline __attribute__((always_inline))
#define MC_UNROLL
#endif

// MC_UNROLL before a loop of constant trip count: nvcc unrolls it fully (an array indexed by the
// loop variable then stays in registers); g++ decides for itself.

// Code that runs where the platform's "device" code runs (GPU on CUDA, caller thread on host).
#define MC_DEVICE_INLINE MC_DEVICE MC_FORCEINLINE
