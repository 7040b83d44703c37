// devx_layout.h — te4j's own table of the mlx5 PRM fields its DevX builders set or read.
//
// A Field is a bit offset and a width in the PRM's numbering: bit 0 is the most significant bit
// of the first big-endian 32-bit word (what the kernel's MLX5_SET and rdma-core's DEVX_SET
// address). Context fields (cqc, qpc, ads, cmd_hca_cap, atomic_caps) are relative to their
// context; at() places a context inside a mailbox.
//
// test_devx_layout checks every entry of kFields, kSizes and kValues against the Linux kernel's
// include/linux/mlx5/mlx5_ifc.h (values: also device.h and qp.h). An entry with a citation in
// `golden` is a field that header does not declare (it leaves the bits reserved).
#pragma once

#include <cstddef>
#include <cstdint>

#include "rdma/mlx5/devx_commands.h"

namespace te4j {
namespace rdma {
namespace devx {

struct Field {
  uint32_t offset;  // bits from the start of the enclosing struct
  uint32_t bits;
};
constexpr Field at(Field base, Field f) { return Field{base.offset + f.offset, f.bits}; }

// ---- every command: input header, output header --------------------------------------------
constexpr Field kInOpcode{0x00, 16};
constexpr Field kInUid{0x10, 16};
constexpr Field kInOpMod{0x30, 16};
constexpr Field kOutStatus{0x00, 8};
constexpr Field kOutSyndrome{0x20, 32};

// ---- CREATE_CQ ------------------------------------------------------------------------------
constexpr Field kCreateCqInCqContext{0x80, 0x200};
constexpr Field kCreateCqInUmemOffset{0x280, 64};  // golden
constexpr Field kCreateCqInUmemId{0x2c0, 32};      // golden
constexpr Field kCreateCqInUmemValid{0x2e0, 1};
constexpr Field kCreateCqOutCqn{0x48, 24};

// cqc: completion queue context
constexpr Field kCqcDbrUmemValid{0x06, 1};
constexpr Field kCqcCqeSz{0x08, 3};
constexpr Field kCqcDbrUmemId{0x20, 32};  // golden
constexpr Field kCqcLogCqSize{0x63, 5};
constexpr Field kCqcUarPage{0x68, 24};
// The kernel calls it c_eqn_or_apu_element; older layouts had an 8-bit c_eqn in its low byte,
// so writing an EQ number into the whole word is right for both.
constexpr Field kCqcCEqn{0xa0, 32};
constexpr Field kCqcLogPageSize{0xc3, 5};
constexpr Field kCqcDbrAddr{0x1c0, 64};

// ---- CREATE_QP ------------------------------------------------------------------------------
constexpr Field kCreateQpInQpc{0xc0, 0x740};
constexpr Field kCreateQpInWqUmemOffset{0x800, 64};
constexpr Field kCreateQpInWqUmemId{0x840, 32};
constexpr Field kCreateQpInWqUmemValid{0x860, 1};
constexpr Field kCreateQpOutQpn{0x48, 24};

// qpc: queue pair context
constexpr Field kQpcSt{0x08, 8};
constexpr Field kQpcPmState{0x13, 2};
constexpr Field kQpcPd{0x28, 24};
constexpr Field kQpcMtu{0x40, 3};
constexpr Field kQpcLogMsgMax{0x43, 5};
constexpr Field kQpcLogRqSize{0x49, 4};
constexpr Field kQpcLogRqStride{0x4d, 3};
constexpr Field kQpcNoSq{0x50, 1};
constexpr Field kQpcLogSqSize{0x51, 4};
constexpr Field kQpcTsFormat{0x58, 2};
constexpr Field kQpcUarPage{0x68, 24};
constexpr Field kQpcLogPageSize{0xa3, 5};
constexpr Field kQpcRemoteQpn{0xa8, 24};
constexpr Field kQpcPrimaryAddressPath{0xc0, 0x160};
constexpr Field kQpcLogSraMax{0x388, 3};
constexpr Field kQpcRetryCount{0x38d, 3};
constexpr Field kQpcRnrRetry{0x390, 3};
constexpr Field kQpcNextSendPsn{0x3c8, 24};
constexpr Field kQpcCqnSnd{0x3e8, 24};
constexpr Field kQpcLogRraMax{0x488, 3};
constexpr Field kQpcAtomicMode{0x48c, 4};
constexpr Field kQpcRre{0x490, 1};
constexpr Field kQpcRwe{0x491, 1};
constexpr Field kQpcRae{0x492, 1};
constexpr Field kQpcMinRnrNak{0x4a3, 5};
constexpr Field kQpcNextRcvPsn{0x4a8, 24};
constexpr Field kQpcCqnRcv{0x4e8, 24};
constexpr Field kQpcDbrAddr{0x500, 64};
constexpr Field kQpcRqType{0x565, 3};
constexpr Field kQpcDbrUmemValid{0x683, 1};
constexpr Field kQpcDbrUmemId{0x720, 32};         // golden
constexpr Field kQpcState{0x00, 4};               // QUERY_QP output only
constexpr Field kQpcHwSqWqebbCounter{0x5a0, 16};  // QUERY_QP: WQEBBs the NIC has fetched
constexpr Field kQpcSwSqWqebbCounter{0x5b0, 16};  // QUERY_QP: WQEBBs the doorbells announced

// ads: address path (inside qpc)
constexpr Field kAdsPkeyIndex{0x10, 16};
constexpr Field kAdsGrh{0x28, 1};
constexpr Field kAdsRlid{0x30, 16};
constexpr Field kAdsAckTimeout{0x40, 5};
constexpr Field kAdsSrcAddrIndex{0x48, 8};
constexpr Field kAdsHopLimit{0x58, 8};
constexpr Field kAdsTclass{0x64, 8};
constexpr Field kAdsRgidRip{0x80, 128};
constexpr Field kAdsDscp{0x10a, 6};
constexpr Field kAdsUdpSport{0x110, 16};
constexpr Field kAdsEthPrio{0x121, 3};
constexpr Field kAdsSl{0x124, 4};
constexpr Field kAdsVhcaPortNum{0x128, 8};
constexpr Field kAdsRmac47_32{0x130, 16};
constexpr Field kAdsRmac31_0{0x140, 32};

// ---- RST2INIT / INIT2RTR / RTR2RTS: one input layout; 2ERR / 2RST: header + qpn -----------
constexpr Field kModifyQpInQpn{0x48, 24};
constexpr Field kModifyQpInOptParamMask{0x80, 32};
constexpr Field kModifyQpInQpc{0xc0, 0x740};

// ---- QUERY_QP (a DevX object query: mlx5dv_devx_obj_query) ---------------------------------
constexpr Field kQueryQpInQpn{0x48, 24};
constexpr Field kQueryQpOutQpc{0xc0, 0x740};

// ---- QUERY_HCA_CAP --------------------------------------------------------------------------
constexpr Field kQueryHcaCapOutCapability{0x80, 0x8000};
// cmd_hca_cap: general device capabilities
constexpr Field kCapLogMaxQpSz{0x88, 8};
constexpr Field kCapLogMaxCqSz{0xc8, 8};
constexpr Field kCapLogMaxRaReqQp{0x14a, 6};
constexpr Field kCapLogMaxRaResQp{0x15a, 6};
constexpr Field kCapPortType{0x1b6, 2};
constexpr Field kCapLogMaxMsg{0x1c3, 5};
constexpr Field kCapAtomic{0x21e, 1};
constexpr Field kCapUmemUid0{0x252, 1};
constexpr Field kCapLogBfRegSize{0x26b, 5};
constexpr Field kCapSqTsFormat{0x440, 2};
// roce_cap
constexpr Field kRoceCapQpTsFormat{0x1e, 2};
// atomic_caps
constexpr Field kAtomicCapOperations{0x90, 16};
constexpr Field kAtomicCapSizeQp{0xb0, 16};

// ---- constant values (opcodes, op_mods, enums) ---------------------------------------------
constexpr uint16_t kOpQueryHcaCap = 0x100;
constexpr uint16_t kOpCreateCq = 0x400;
constexpr uint16_t kOpCreateQp = 0x500;
constexpr uint16_t kOpRst2InitQp = 0x502;
constexpr uint16_t kOpInit2RtrQp = 0x503;
constexpr uint16_t kOpRtr2RtsQp = 0x504;
constexpr uint16_t kOp2ErrQp = 0x507;
constexpr uint16_t kOp2RstQp = 0x50a;
constexpr uint16_t kOpQueryQp = 0x50b;
constexpr uint16_t kCapTypeGeneral = 0x0;  // QUERY_HCA_CAP op_mod = type << 1 | current
constexpr uint16_t kCapTypeAtomic = 0x3;
constexpr uint16_t kCapTypeRoce = 0x4;
constexpr uint16_t kCapCurrent = 0x1;
constexpr uint32_t kQpStRc = 0x0;
constexpr uint32_t kQpPmMigrated = 0x3;
constexpr uint32_t kRqTypeZeroLength = 0x3;
constexpr uint32_t kCqeSize64 = 0x0;
constexpr uint32_t kTsFormatFreeRunning = 0x0;
constexpr uint32_t kTsFormatDefault = 0x1;
constexpr uint32_t kAtomicModeUpTo8B = 0x3;
constexpr uint32_t kAdapterPageShift = 12;  // log_page_size counts in 4 KiB units
// qpc.state as QUERY_QP reports it.
constexpr uint32_t kQpStateRst = 0x0;
constexpr uint32_t kQpStateInit = 0x1;
constexpr uint32_t kQpStateRtr = 0x2;
constexpr uint32_t kQpStateRts = 0x3;
constexpr uint32_t kQpStateSqer = 0x4;
constexpr uint32_t kQpStateSqd = 0x5;
constexpr uint32_t kQpStateErr = 0x6;
constexpr uint32_t kQpStateSqDraining = 0x7;
constexpr uint32_t kQpStateSuspended = 0x9;

// Command status (first byte of every output).
constexpr uint8_t kStatusOk = 0x0;
constexpr uint8_t kStatusInternalError = 0x1;
constexpr uint8_t kStatusBadOp = 0x2;
constexpr uint8_t kStatusBadParam = 0x3;
constexpr uint8_t kStatusBadSysState = 0x4;
constexpr uint8_t kStatusBadResource = 0x5;
constexpr uint8_t kStatusResourceBusy = 0x6;
constexpr uint8_t kStatusNotReady = 0x7;
constexpr uint8_t kStatusLimitsExceeded = 0x8;
constexpr uint8_t kStatusBadResourceState = 0x9;
constexpr uint8_t kStatusBadIndex = 0xa;
constexpr uint8_t kStatusNoResources = 0xf;
constexpr uint8_t kStatusBadQpState = 0x10;
constexpr uint8_t kStatusBadPacket = 0x30;
constexpr uint8_t kStatusBadSizeOutstandingCqes = 0x40;
constexpr uint8_t kStatusBadInputLength = 0x50;
constexpr uint8_t kStatusBadOutputLength = 0x51;

// ---- mailbox sizes in bytes (the PRM structs; the flexible pas[] arrays are not used) -------
constexpr size_t kCreateCqInBytes = 272;
constexpr size_t kCreateQpInBytes = 272;
constexpr size_t kModifyQpInBytes = 272;  // RST2INIT, INIT2RTR, RTR2RTS
constexpr size_t kQpStateInBytes = 16;    // 2ERR, 2RST
constexpr size_t kQueryHcaCapInBytes = 16;
constexpr size_t kQueryQpInBytes = 16;
constexpr size_t kQueryQpOutBytes = 464;
constexpr size_t kQueryHcaCapOutBytes = 4112;
constexpr size_t kCmdOutBytes = 16;      // CREATE_CQ, CREATE_QP and every modify-QP output
constexpr size_t kCapStructBytes = 256;  // cmd_hca_cap, atomic_caps (inside capability)

// ---- the table the exact-format test iterates ----------------------------------------------
/// name: "<kernel struct without mlx5_ifc_ and _bits>.<member path>"; golden: nullptr when
/// mlx5_ifc.h declares the field, else where its offset comes from.
struct NamedField {
  const char* name;
  Field field;
  const char* golden;
};
struct NamedSize {
  const char* name;  // kernel struct
  size_t bytes;      // te4j's mailbox size (flexible pas[] arrays excluded)
};
struct NamedValue {
  const char* name;  // kernel enum constant
  uint32_t value;
};

extern const NamedField kFields[];
extern const size_t kFieldCount;
extern const NamedSize kSizes[];
extern const size_t kSizeCount;
extern const NamedValue kValues[];
extern const size_t kValueCount;

// ---- big-endian bit fields in a mailbox ----------------------------------------------------
/// Writes the low f.bits of value at f, most significant bit first, like MLX5_SET (wider values
/// are truncated). Fields up to 64 bits; false and nothing written when f lies outside m.
bool setField(Mailbox& m, Field f, uint64_t value);
/// Reads f (up to 64 bits); 0 when f lies outside m (e.g. a short error output).
uint64_t getField(const Mailbox& m, Field f);
/// Copies f.bits / 8 bytes to a byte-aligned field (a GID, a MAC); false when outside m.
bool setBytes(Mailbox& m, Field f, const uint8_t* bytes);

}  // namespace devx
}  // namespace rdma
}  // namespace te4j
