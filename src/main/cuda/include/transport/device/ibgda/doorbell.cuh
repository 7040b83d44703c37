// ibgda/doorbell.cuh — telling the NIC that new WQEs are in the send ring.
//
// The sequence (as rdma-core's post_send_db, with GPU-side fences):
//   1. wqe_to_dbr barrier    the WQE's stores are visible before the doorbell record;
//   2. doorbell record       send counter (next WQE index), big-endian, release store;
//   3. dbr_to_uar barrier    the record is visible before the NIC is rung;
//   4. UAR / BlueFlame       the WQE's first 8 bytes, one 64-bit store, at bf_reg + bf_offset
//                            (the poster's own copy from registers: ctrl_doorbell_word);
//   5. uar_flush barrier     the doorbell leaves this thread before the QP lock is released;
//   6. bf_offset ^= bf_size  the next doorbell uses the other BlueFlame half.
// Updating the record alone does not start a ConnectX NIC (nor te4j's software NIC); when
// bf_reg is nullptr a host proxy thread watches the record and rings the UAR instead.
// Called with the QP lock held.
#pragma once

#include <stdint.h>

#include "transport/device/platform.cuh"
#include "transport/device/device_ops.cuh"
#include "mlx5_defs.cuh"
#include "qp_context.cuh"
#include "wqe_segments.cuh"

namespace mooncake {
namespace device {

/// Prevents the NIC from fetching a WQE whose stores are still in flight after it learned of
/// the WQE from the doorbell record (it would execute a half-written work request).
MC_DEVICE_INLINE void ibgda_wqe_to_dbr_barrier() { mc_fence(); }

/// Prevents the NIC, started by the UAR write, from reading the previous doorbell record and
/// stopping short of the WQE just posted (the software NIC flags exactly that).
MC_DEVICE_INLINE void ibgda_dbr_to_uar_barrier() { mc_fence(); }

/// Prevents a doorbell from lingering in a write-combining buffer past the lock release, where
/// the next holder's doorbell (a later WQE index) could overtake it at the NIC.
MC_DEVICE_INLINE void ibgda_uar_flush_barrier() { mc_fence(); }

/// One 64-bit store to the UAR/BlueFlame register (MMIO on hardware: must not be split).
MC_DEVICE_INLINE void ibgda_uar_store_u64(uint64_t* reg, uint64_t value) {
#if defined(MC_PLATFORM_CUDA)
  asm volatile("st.mmio.relaxed.sys.global.u64 [%0], %1;" : : "l"(reg), "l"(value) : "memory");
#else
  __atomic_store_n(reg, value, __ATOMIC_RELAXED);
#endif
}

/// Rings the doorbell for every WQE up to and including the last one written (already in the
/// ring and counted in qp->sq_pi). `last_word` is that WQE's first 8 bytes as they lie in
/// memory (what its builder returned), never read back from the ring.
MC_DEVICE_INLINE void ibgda_ring_doorbell(IbgdaQp* qp, uint64_t last_word) {
  ibgda_wqe_to_dbr_barrier();
  mc_st_release_u32(&qp->sq_dbrec[mlx5::kSndDbr], mc_bswap32(qp->sq_pi & 0xffffu));
  if (qp->bf_reg == nullptr) return;  // a host proxy watches the record and rings the UAR
  ibgda_dbr_to_uar_barrier();
  ibgda_uar_store_u64((uint64_t*)((uint8_t*)qp->bf_reg + qp->bf_offset), last_word);
  ibgda_uar_flush_barrier();
  qp->bf_offset ^= qp->bf_size;
}

}  // namespace device
}  // namespace mooncake
