// ibgda/wqe_builders.cuh — the work requests te4j posts, each one 64-byte WQEBB.
//
//   RDMA WRITE        ctrl | raddr | data                 ds = 3 (48 bytes), opcode 0x08
//   RDMA READ         ctrl | raddr | data                 ds = 3 (48 bytes), opcode 0x10
//   masked FA 32-bit  ctrl | raddr | masked-FA | data     ds = 4 (64 bytes), opcode 0x15 opmod 0x08
//   CAS 64-bit        ctrl | raddr | atomic | data        ds = 4 (64 bytes), opcode 0x11 opmod 0
// A READ's data segment is the local scatter entry the remote bytes land in. All request a CQE
// (CQ_UPDATE) so completion polling can retire every WQE. Each returns the WQE's doorbell word
// (ctrl_doorbell_word) for ibgda_ring_doorbell.
#pragma once

#include <stdint.h>

#include "transport/device/platform.cuh"
#include "mlx5_defs.cuh"
#include "wqe_segments.cuh"

namespace mooncake {
namespace device {

/// Writes the WQE of a one-segment RDMA WRITE or READ (`opcode`, ds = 3): ctrl, then the
/// responder's raddr/rkey, then the local gather (WRITE) or scatter (READ) entry laddr/lkey of
/// `length` bytes (1 .. 2^31-1), into the WQEBB at `wqe`, with WQE index `index` on QP `qpn`.
MC_DEVICE_INLINE uint64_t ibgda_build_rdma_rw(void* wqe, uint8_t opcode, uint16_t index,
                                              uint32_t qpn, uint64_t raddr, uint32_t rkey,
                                              uint64_t laddr, uint32_t lkey, uint32_t length) {
  mlx5::CtrlSeg* ctrl = (mlx5::CtrlSeg*)wqe;
  mlx5::RaddrSeg* raddr_seg = (mlx5::RaddrSeg*)(ctrl + 1);
  mlx5::DataSeg* data = (mlx5::DataSeg*)(raddr_seg + 1);
  mlx5::set_ctrl_seg(ctrl, index, opcode, 0, qpn, mlx5::kCtrlCqUpdate, 3, 0, 0);
  mlx5::set_raddr_seg(raddr_seg, raddr, rkey);
  mlx5::set_data_seg(data, length, lkey, laddr);
  return mlx5::ctrl_doorbell_word(index, opcode, 0, qpn, 3);
}

/// Writes an RDMA WRITE of `length` bytes (1 .. 2^31-1) from laddr/lkey to raddr/rkey into the
/// WQEBB at `wqe`, with WQE index `index` on QP `qpn`.
MC_DEVICE_INLINE uint64_t ibgda_build_rdma_write(void* wqe, uint16_t index, uint32_t qpn,
                                                 uint64_t raddr, uint32_t rkey, uint64_t laddr,
                                                 uint32_t lkey, uint32_t length) {
  return ibgda_build_rdma_rw(wqe, mlx5::kOpcodeRdmaWrite, index, qpn, raddr, rkey, laddr, lkey,
                             length);
}

/// Writes an RDMA READ of `length` bytes (1 .. 2^31-1) from raddr/rkey into laddr/lkey into the
/// WQEBB at `wqe`, with WQE index `index` on QP `qpn`. The QP must allow remote reads (RRE) and
/// the remote region remote read access.
MC_DEVICE_INLINE uint64_t ibgda_build_rdma_read(void* wqe, uint16_t index, uint32_t qpn,
                                                uint64_t raddr, uint32_t rkey, uint64_t laddr,
                                                uint32_t lkey, uint32_t length) {
  return ibgda_build_rdma_rw(wqe, mlx5::kOpcodeRdmaRead, index, qpn, raddr, rkey, laddr, lkey,
                             length);
}

/// Writes a 32-bit masked fetch-and-add of `add` on raddr/rkey (4-byte aligned) into the WQEBB
/// at `wqe`; the fetched old value lands at fetch_addr/fetch_lkey. field_boundary 0 = a plain
/// 32-bit add modulo 2^32.
MC_DEVICE_INLINE uint64_t ibgda_build_masked_fa32(void* wqe, uint16_t index, uint32_t qpn,
                                                  uint64_t raddr, uint32_t rkey,
                                                  uint64_t fetch_addr, uint32_t fetch_lkey,
                                                  uint32_t add, uint32_t field_boundary) {
  mlx5::CtrlSeg* ctrl = (mlx5::CtrlSeg*)wqe;
  mlx5::RaddrSeg* raddr_seg = (mlx5::RaddrSeg*)(ctrl + 1);
  mlx5::MaskedFa32Seg* fa = (mlx5::MaskedFa32Seg*)(raddr_seg + 1);
  mlx5::DataSeg* data = (mlx5::DataSeg*)(fa + 1);
  mlx5::set_ctrl_seg(ctrl, index, mlx5::kOpcodeAtomicMaskedFa, mlx5::kOpmodExtAtomic32, qpn,
                     mlx5::kCtrlCqUpdate, 4, 0, 0);
  mlx5::set_raddr_seg(raddr_seg, raddr, rkey);
  mlx5::set_masked_fa32_seg(fa, add, field_boundary);
  mlx5::set_data_seg(data, 4, fetch_lkey, fetch_addr);
  return mlx5::ctrl_doorbell_word(index, mlx5::kOpcodeAtomicMaskedFa, mlx5::kOpmodExtAtomic32, qpn,
                                  4);
}

/// Writes an 8-byte compare-and-swap of the word at raddr/rkey (8-byte aligned) into the WQEBB at
/// `wqe`: the word becomes `swap` if it held `compare`; its old value lands at
/// fetch_addr/fetch_lkey either way, so the poster learns whether the swap happened. `fence`
/// is 0 or mlx5::kCtrlFence (the NIC starts this WQE only after every earlier READ and atomic
/// of the QP completed); CQ_UPDATE is always set.
MC_DEVICE_INLINE uint64_t ibgda_build_atomic_cs64(void* wqe, uint16_t index, uint32_t qpn,
                                                  uint64_t raddr, uint32_t rkey,
                                                  uint64_t fetch_addr, uint32_t fetch_lkey,
                                                  uint64_t compare, uint64_t swap, uint8_t fence) {
  mlx5::CtrlSeg* ctrl = (mlx5::CtrlSeg*)wqe;
  mlx5::RaddrSeg* raddr_seg = (mlx5::RaddrSeg*)(ctrl + 1);
  mlx5::AtomicSeg* atomic = (mlx5::AtomicSeg*)(raddr_seg + 1);
  mlx5::DataSeg* data = (mlx5::DataSeg*)(atomic + 1);
  mlx5::set_ctrl_seg(ctrl, index, mlx5::kOpcodeAtomicCs, 0, qpn,
                     (uint8_t)(mlx5::kCtrlCqUpdate | fence), 4, 0, 0);
  mlx5::set_raddr_seg(raddr_seg, raddr, rkey);
  mlx5::set_atomic_seg(atomic, swap, compare);
  mlx5::set_data_seg(data, 8, fetch_lkey, fetch_addr);
  return mlx5::ctrl_doorbell_word(index, mlx5::kOpcodeAtomicCs, 0, qpn, 4);
}

}  // namespace device
}  // namespace mooncake
