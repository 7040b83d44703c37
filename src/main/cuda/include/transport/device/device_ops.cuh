// device_ops.cuh — the low-level ops table of te4j's single-source device code.
//
// The table is chosen at compile time (no function pointers: a device-side indirect call would
// defeat inlining and cost registers). Every platform header defines the same names, in
// namespace mooncake::device, with the same contract:
//
// Memory order is in the name; the scope is always SYSTEM (other GPUs over NVLink, the CPU and
// other processes may observe these words). Pointers are global memory: cudaMalloc'ed, IPC- or
// peer-mapped, or mapped pinned host memory on CUDA; shared-memory segments on host. 32-bit
// words are 4-byte aligned, 64-bit words 8-byte aligned, mc_int4 accesses 16-byte aligned.
//
//   mc_ld_acquire_u32/_u64(p)      load; later loads/stores of this thread are not reordered
//                                  before it. Pairs with mc_st_release / mc_atomic_add_release.
//   mc_st_release_u32/_u64(p, v)   store; earlier loads/stores (and, being cumulative, what this
//                                  thread has observed) are visible before it.
//   mc_ld_relaxed_u64(p)           load that is single-copy atomic (never torn) and not cached
//                                  stale: a polled word. No ordering of other accesses.
//   mc_st_relaxed_u64(p, v)        store that is single-copy atomic: a reader sees all 8 bytes
//                                  of v or none. No ordering (the LL put: data and its flag
//                                  travel in one such word, ll_put.cuh).
//   mc_atomic_add_release_u32(p,v) atomic *p += v with release order; returns the old value.
//                                  The signal primitive: 32-bit, wraps modulo 2^32.
//   mc_red_release_u32(p, v)       the same add with no return value (PTX red; host: as above).
//   mc_ld_nc(p)                    16-byte load through the non-coherent path. ONLY for data that
//                                  nobody writes while the kernel runs (a put's source buffer).
//   mc_st_na(p, v)                 16-byte store that does not allocate in L1 (streamed data).
//   mc_fence()                     acq_rel fence at system scope (see cuda_ops.cuh for why not sc).
//   mc_bar_sync()                  all threads of the block meet (a no-op on host: one executor
//                                  thread is one "thread" and one "block"). Upstream's named
//                                  form mc_bar_sync(bar_id, num_threads) is an overload.
//   mc_pause()                     a short back-off inside a bounded spin.
//   mc_bswap16/32/64(v)            byte swap (network/big-endian fields of RDMA descriptors).
//   mc_globaltimer_ns()            a monotonic nanosecond clock for deadlines, comparable only
//                                  with itself on the same platform.
//   mc_int4                        the 16-byte vector type (CUDA: int4).
//
// Upstream Mooncake's names (mc_ld_acquire, mc_st_release, mc_atomic_add_release on int words,
// mc_ld_nc_s32/_f32/_s64, mc_bar_init, mc_bar_sync(bar_id, num_threads), mc_grid_sync,
// mc_fence_barrier_fence) are in every table too, with upstream's signatures and meaning: see
// cuda/cuda_ops.cuh. The selector below has upstream's shape; MUSA and MACA stop with an error
// (te4j has neither platform), the host platform is te4j's own.
#pragma once

#include "platform.cuh"

#if defined(MOONCAKE_EP_USE_MUSA)
#include "transport/device/musa/musa_ops.cuh"
#elif defined(MOONCAKE_EP_USE_MACA)
#include "transport/device/maca/maca_ops.cuh"
#elif defined(MC_PLATFORM_CUDA)
#include "transport/device/cuda/cuda_ops.cuh"
#elif defined(MC_PLATFORM_HOST)
#include "host_ops.cuh"
#else
#error "platform.cuh defined no MC_PLATFORM_*"
#endif
