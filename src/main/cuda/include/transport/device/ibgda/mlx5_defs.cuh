// ibgda/mlx5_defs.cuh — mlx5 constants the device code and the software NIC share.
//
// Values are those of the mlx5 Programmer's Reference Manual (PRM) as rdma-core's mlx5dv.h
// names them (MLX5_OPCODE_*, MLX5_CQE_*, MLX5_CQE_SYNDROME_*); the exact-format tests compare
// them with mlx5dv.h where it is installed. te4j does not include mlx5dv.h itself: device code
// must compile without rdma-core.
#pragma once

#include <stdint.h>

namespace mooncake {
namespace device {
namespace mlx5 {

// Work-queue geometry: a WQE is built of 16-byte segments ("DS" units) and occupies one or more
// 64-byte basic blocks (WQEBB) of the send ring.
constexpr uint32_t kSendWqeBB = 64;
constexpr uint32_t kSendWqeShift = 6;
constexpr uint32_t kDsUnit = 16;
constexpr uint32_t kCqeSize = 64;

// Send opcodes (ctrl segment, low byte of opmod_idx_opcode).
constexpr uint8_t kOpcodeNop = 0x00;
constexpr uint8_t kOpcodeRdmaWrite = 0x08;
constexpr uint8_t kOpcodeRdmaWriteImm = 0x09;
constexpr uint8_t kOpcodeSend = 0x0a;
constexpr uint8_t kOpcodeRdmaRead = 0x10;
constexpr uint8_t kOpcodeAtomicCs = 0x11;
constexpr uint8_t kOpcodeAtomicFa = 0x12;
constexpr uint8_t kOpcodeAtomicMaskedCs = 0x14;
constexpr uint8_t kOpcodeAtomicMaskedFa = 0x15;

// opmod of the extended (masked) atomics: 0x08 | (log2(operand bytes) - 2). 32-bit = 0x08.
constexpr uint8_t kOpmodExtAtomic32 = 0x08;
constexpr uint8_t kOpmodExtAtomic64 = 0x09;

// ctrl segment fm_ce_se bits.
constexpr uint8_t kCtrlCqUpdate = 2 << 2;  // generate a CQE for this WQE
constexpr uint8_t kCtrlSolicited = 1 << 1;
constexpr uint8_t kCtrlFence = 4 << 5;  // wait for earlier reads/atomics of this QP
constexpr uint8_t kCtrlSmallFence = 1 << 5;

// Bit 31 of a data segment's byte_count marks inline data (te4j never posts inline data).
constexpr uint32_t kInlineSeg = 0x80000000u;

// CQE opcodes (high nibble of op_own); the low bit of op_own is the owner bit.
constexpr uint8_t kCqeReq = 0x0;
constexpr uint8_t kCqeRespWrImm = 0x1;
constexpr uint8_t kCqeRespSend = 0x2;
constexpr uint8_t kCqeReqErr = 0xd;
constexpr uint8_t kCqeRespErr = 0xe;
constexpr uint8_t kCqeInvalid = 0xf;
constexpr uint8_t kCqeOwnerMask = 0x1;

// Error CQE syndromes.
constexpr uint8_t kSyndromeLocalLengthErr = 0x01;
constexpr uint8_t kSyndromeLocalQpOpErr = 0x02;
constexpr uint8_t kSyndromeLocalProtErr = 0x04;
constexpr uint8_t kSyndromeWrFlushErr = 0x05;
constexpr uint8_t kSyndromeMwBindErr = 0x06;
constexpr uint8_t kSyndromeBadRespErr = 0x10;
constexpr uint8_t kSyndromeLocalAccessErr = 0x11;
constexpr uint8_t kSyndromeRemoteInvalReqErr = 0x12;
constexpr uint8_t kSyndromeRemoteAccessErr = 0x13;
constexpr uint8_t kSyndromeRemoteOpErr = 0x14;
constexpr uint8_t kSyndromeTransportRetryExcErr = 0x15;
constexpr uint8_t kSyndromeRnrRetryExcErr = 0x16;
constexpr uint8_t kSyndromeRemoteAbortedErr = 0x22;

// Doorbell record: two big-endian 32-bit counters; the send queue's is the second one.
constexpr uint32_t kRcvDbr = 0;
constexpr uint32_t kSndDbr = 1;

// Largest message one WRITE WQE carries (a port's max_msg_sz is 1 GiB on ConnectX).
constexpr uint64_t kMaxMessageBytes = 1ull << 30;

}  // namespace mlx5
}  // namespace device
}  // namespace mooncake
