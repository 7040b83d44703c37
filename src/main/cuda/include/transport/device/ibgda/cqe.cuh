// ibgda/cqe.cuh — the 64-byte mlx5 CQE as 16 words, and its decoding.
//
// Byte offsets (PRM; rdma-core struct mlx5_cqe64 / struct mlx5_err_cqe):
//   44..47  byte_cnt (be32)                        bytes moved (reads / atomics)
//   54      vendor_err_synd                        error CQE only
//   55      syndrome                               error CQE only (kSyndrome*)
//   56..59  opcode(8) | qpn(24) (be32)             sop_drop_qpn / s_wqe_opcode_qpn
//   60..61  wqe_counter (be16)                     index of the WQE this CQE completes
//   62      signature
//   63      op_own: CQE opcode (high nibble) | owner bit (bit 0)
// The producer writes words 0..14 first and word 15 (holding op_own) last with a release store;
// the consumer reads word 15 with an acquire load, so the rest is valid once op_own is.
//
// Owner-bit convention: with N (a power of two) entries and a free-running consumer index ci,
// the entry at ci % N is valid when its opcode is not kCqeInvalid and its owner bit equals
// (ci / N) & 1. The ring starts filled with op_own = kCqeInvalid << 4.
#pragma once

#include <stdint.h>

#include "transport/device/platform.cuh"
#include "mlx5_defs.cuh"

namespace mooncake {
namespace device {
namespace mlx5 {

struct alignas(64) Cqe64 {
  uint32_t dw[16];
};
static_assert(sizeof(Cqe64) == 64, "a CQE is 64 bytes");

constexpr int kCqeDwByteCnt = 11;
constexpr int kCqeDwSyndrome = 13;
constexpr int kCqeDwOpcodeQpn = 14;
constexpr int kCqeDwOwner = 15;

/// A load of a CQE word other than word 15, after word 15's acquire made the CQE valid: relaxed
/// at system scope, so that it is a real (uncached) read of what the NIC wrote, ordered after
/// the acquire, rather than a plain load the compiler or the L1 may serve from an older copy.
MC_DEVICE_INLINE uint32_t cqe_ld_relaxed_u32(const uint32_t* p) {
#if defined(MC_PLATFORM_CUDA)
  uint32_t v;
  asm volatile("ld.relaxed.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
#else
  return __atomic_load_n(p, __ATOMIC_RELAXED);
#endif
}

/// Fields of word 15 as loaded (little-endian host/GPU word of bytes 60..63).
MC_HOST_DEVICE inline uint8_t cqe_op_own(uint32_t dw15) { return (uint8_t)(dw15 >> 24); }
MC_HOST_DEVICE inline uint8_t cqe_opcode(uint32_t dw15) { return (uint8_t)(dw15 >> 28); }
MC_HOST_DEVICE inline uint16_t cqe_wqe_counter(uint32_t dw15) {
  return (uint16_t)(((dw15 & 0xffu) << 8) | ((dw15 >> 8) & 0xffu));
}
/// Word 13 of an error CQE.
MC_HOST_DEVICE inline uint8_t cqe_syndrome(uint32_t dw13) { return (uint8_t)(dw13 >> 24); }
MC_HOST_DEVICE inline uint8_t cqe_vendor_syndrome(uint32_t dw13) {
  return (uint8_t)((dw13 >> 16) & 0xffu);
}

/// Whether the entry at free-running index ci is owned by software (ready to consume).
/// cqe_count: N, a power of two.
MC_HOST_DEVICE inline bool cqe_ready(uint32_t dw15, uint32_t ci, uint32_t cqe_count) {
  const uint8_t op_own = cqe_op_own(dw15);
  if ((op_own >> 4) == kCqeInvalid) return false;
  const uint32_t expected_owner = (ci & cqe_count) ? 1u : 0u;
  return (uint32_t)(op_own & kCqeOwnerMask) == expected_owner;
}

/// Word 15 as the producer stores it: wqe_counter (big-endian bytes 60..61), signature 0,
/// op_own = opcode << 4 | owner.
MC_HOST_DEVICE inline uint32_t cqe_make_dw15(uint16_t wqe_counter, uint8_t opcode, uint32_t owner) {
  const uint32_t op_own = ((uint32_t)opcode << 4) | (owner & 1u);
  return ((uint32_t)(wqe_counter >> 8)) | ((uint32_t)(wqe_counter & 0xffu) << 8) | (op_own << 24);
}

}  // namespace mlx5
}  // namespace device
}  // namespace mooncake
