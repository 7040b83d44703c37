// ibgda/wqe_segments.cuh — the mlx5 WQE segments te4j posts, one setter per segment.
//
// Every segment is 16 bytes (one DS unit) with big-endian fields, laid out as the PRM and
// rdma-core's mlx5dv.h define them (struct mlx5_wqe_ctrl_seg / _raddr_seg / _data_seg). The
// setters only store byte-swapped values: they are checked byte for byte against
// mlx5dv_set_ctrl_seg / mlx5dv_set_data_seg by test_rdma_wqe_format.cpp.
//
// The structs use only naturally aligned 32/64-bit members so that GPU stores are aligned: the
// ctrl segment's bytes 8..11 {signature, dci_stream_channel_id (be16), fm_ce_se} are one word.
#pragma once

#include <stdint.h>

#include "transport/device/platform.cuh"
#include "transport/device/device_ops.cuh"

namespace mooncake {
namespace device {
namespace mlx5 {

/// Control segment: the first 16 bytes of every WQE.
///   bytes 0-3   opmod(8) | wqe_index(16) | opcode(8)      big-endian
///   bytes 4-7   qpn(24) | ds(8)                           big-endian; ds = WQE size in 16-B units
///   byte  8     signature                                 (0: no WQE signature)
///   bytes 9-10  dci_stream_channel_id                     big-endian, 0 for RC
///   byte  11    fm_ce_se                                  fence mode / CQ update / solicited
///   bytes 12-15 imm                                       stored as given (already ordered)
struct alignas(16) CtrlSeg {
  uint32_t opmod_idx_opcode;
  uint32_t qpn_ds;
  uint32_t signature_dci_fm;
  uint32_t imm;
};

/// Remote-address segment (RDMA and atomics): remote virtual address and its rkey.
struct alignas(16) RaddrSeg {
  uint64_t raddr;     // big-endian byte address on the responder
  uint32_t rkey;      // big-endian memory key of the responder's region
  uint32_t reserved;  // 0
};

/// Memory-pointer data segment: one local gather/scatter entry.
struct alignas(16) DataSeg {
  uint32_t byte_count;  // big-endian length in bytes; bit 31 set would mean inline data
  uint32_t lkey;        // big-endian local memory key
  uint64_t addr;        // big-endian local virtual address
};

/// Masked fetch-and-add on 32 bits (opcode 0x15, opmod 0x08): the add operand and the field
/// boundary mask (a set bit i stops the carry out of bit i; 0 = one plain 32-bit add), padded to
/// one DS unit.
struct alignas(16) MaskedFa32Seg {
  uint32_t add_data;        // big-endian
  uint32_t field_boundary;  // big-endian
  uint64_t reserved;        // 0
};

/// Standard 8-byte atomic (opcode 0x11 compare-and-swap, 0x12 fetch-and-add; opmod 0): the swap
/// (or add) operand and the compare operand, as rdma-core's struct mlx5_wqe_atomic_seg.
struct alignas(16) AtomicSeg {
  uint64_t swap_add;  // big-endian
  uint64_t compare;   // big-endian; ignored by fetch-and-add
};

static_assert(sizeof(CtrlSeg) == 16, "ctrl segment is one DS unit");
static_assert(sizeof(RaddrSeg) == 16, "raddr segment is one DS unit");
static_assert(sizeof(DataSeg) == 16, "data segment is one DS unit");
static_assert(sizeof(MaskedFa32Seg) == 16, "masked FA segment is one DS unit");
static_assert(sizeof(AtomicSeg) == 16, "atomic segment is one DS unit");

/// Fills a control segment. pi: the WQE index (the producer counter, wraps at 0xffff);
/// ds: WQE size in 16-byte units (6 bits used); qpn: 24-bit QP number; imm is stored as given,
/// as mlx5dv_set_ctrl_seg does (the caller orders it for its opcode).
MC_DEVICE_INLINE void set_ctrl_seg(CtrlSeg* seg, uint16_t pi, uint8_t opcode, uint8_t opmod,
                                   uint32_t qpn, uint8_t fm_ce_se, uint8_t ds, uint8_t signature,
                                   uint32_t imm) {
  seg->opmod_idx_opcode =
      mc_bswap32(((uint32_t)opmod << 24) | ((uint32_t)pi << 8) | (uint32_t)opcode);
  seg->qpn_ds = mc_bswap32((qpn << 8) | (uint32_t)ds);
  // Little-endian word of bytes 8..11: signature, dci id (0, two bytes), fm_ce_se.
  seg->signature_dci_fm = (uint32_t)signature | ((uint32_t)fm_ce_se << 24);
  seg->imm = imm;
}

/// The doorbell word of a WQE: its control segment's first 8 bytes as they lie in memory (the
/// value one 64-bit store puts in the UAR register), computed from the same inputs as
/// set_ctrl_seg so that ringing never reads the WQE back (on CUDA the ring is host memory
/// across PCIe: a read-back costs a round trip while the QP lock is held).
MC_DEVICE_INLINE uint64_t ctrl_doorbell_word(uint16_t pi, uint8_t opcode, uint8_t opmod,
                                             uint32_t qpn, uint8_t ds) {
  const uint32_t w0 = mc_bswap32(((uint32_t)opmod << 24) | ((uint32_t)pi << 8) | (uint32_t)opcode);
  const uint32_t w1 = mc_bswap32((qpn << 8) | (uint32_t)ds);
  return ((uint64_t)w1 << 32) | (uint64_t)w0;
}

/// Fills a remote-address segment: raddr is the responder's byte address, rkey its region key.
MC_DEVICE_INLINE void set_raddr_seg(RaddrSeg* seg, uint64_t raddr, uint32_t rkey) {
  seg->raddr = mc_bswap64(raddr);
  seg->rkey = mc_bswap32(rkey);
  seg->reserved = 0;
}

/// Fills a data segment: length in bytes (< 2^31), lkey of the local region, local address.
MC_DEVICE_INLINE void set_data_seg(DataSeg* seg, uint32_t length, uint32_t lkey, uint64_t addr) {
  seg->byte_count = mc_bswap32(length);
  seg->lkey = mc_bswap32(lkey);
  seg->addr = mc_bswap64(addr);
}

/// Fills a 32-bit masked fetch-and-add segment: add operand and field-boundary mask.
MC_DEVICE_INLINE void set_masked_fa32_seg(MaskedFa32Seg* seg, uint32_t add,
                                          uint32_t field_boundary) {
  seg->add_data = mc_bswap32(add);
  seg->field_boundary = mc_bswap32(field_boundary);
  seg->reserved = 0;
}

/// Fills an 8-byte atomic segment: the swap (or add) operand and the compare operand.
MC_DEVICE_INLINE void set_atomic_seg(AtomicSeg* seg, uint64_t swap_add, uint64_t compare) {
  seg->swap_add = mc_bswap64(swap_add);
  seg->compare = mc_bswap64(compare);
}

}  // namespace mlx5
}  // namespace device
}  // namespace mooncake
