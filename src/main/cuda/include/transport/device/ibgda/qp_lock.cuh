// ibgda/qp_lock.cuh — the bounded spin lock that serialises posters and pollers of one QP.
//
// Posting a WQE, ringing its doorbell and consuming CQEs touch shared per-QP state (sq_pi,
// bf_offset, cq_ci); one holder at a time keeps WQE indices, doorbell records and BlueFlame
// offsets consistent when many warps (or executor threads) target the same QP. Device code
// posts from one lane per warp, so lanes of a warp never contend for the lock.
#pragma once

#include <stdint.h>

#include "transport/device/platform.cuh"
#include "transport/device/device_ops.cuh"

#if defined(MC_PLATFORM_HOST)
#include <sched.h>
#endif

namespace mooncake {
namespace device {

/// Compare-and-swap with acquire order at system scope; returns the previous value.
MC_DEVICE_INLINE uint32_t ibgda_cas_acquire_u32(uint32_t* p, uint32_t expected, uint32_t desired) {
#if defined(MC_PLATFORM_CUDA)
  uint32_t old;
  asm volatile("atom.acquire.sys.global.cas.b32 %0, [%1], %2, %3;"
               : "=r"(old)
               : "l"(p), "r"(expected), "r"(desired)
               : "memory");
  return old;
#else
  __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
  return expected;
#endif
}

/// Back-off of attempt n of a bounded spin on a QP (lock, ring slot, completions). On the host
/// platform "device" code runs on OS threads that may outnumber the cores: every 16th attempt
/// also yields the CPU, so spinners cannot starve the lock holder or the NIC's threads (with
/// many posters per QP a pure pause spin let a preempted holder wait whole timeslices per
/// waiter). On CUDA, mc_pause (nanosleep) already lets other warps run.
MC_DEVICE_INLINE void ibgda_backoff(uint32_t n) {
  mc_pause();
#if defined(MC_PLATFORM_HOST)
  if ((n & 15u) == 15u) sched_yield();
#else
  (void)n;
#endif
}

/// Takes the lock before deadline_ns (mc_globaltimer_ns clock); false when it expired.
MC_DEVICE_INLINE bool ibgda_lock(uint32_t* lock, uint64_t deadline_ns) {
  for (uint32_t tries = 0;; ++tries) {
    if (ibgda_cas_acquire_u32(lock, 0u, 1u) == 0u) return true;
    // Reading the clock costs more than a CAS attempt: check it every 64 tries.
    if ((tries & 63u) == 63u && mc_globaltimer_ns() > deadline_ns) return false;
    ibgda_backoff(tries);
  }
}

/// Releases the lock: everything written while holding it is visible to the next holder.
MC_DEVICE_INLINE void ibgda_unlock(uint32_t* lock) { mc_st_release_u32(lock, 0u); }

}  // namespace device
}  // namespace mooncake
