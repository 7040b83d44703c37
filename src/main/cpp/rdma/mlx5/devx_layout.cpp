// devx_layout.cpp — the named list of devx_layout.h's fields, sizes and values (what the
// exact-format test iterates), and the big-endian bit-field accessors.
#include "rdma/mlx5/devx_layout.h"

#include <cstring>

namespace te4j {
namespace rdma {
namespace devx {

namespace {

// Where the golden offsets come from. The kernel's mlx5_ifc.h keeps these bits reserved; the
// PRM defines them for DevX umem objects, and two public transcriptions of the PRM agree:
// rdma-core (providers/mlx5/mlx5_ifc.h, tests/mlx5_prm_structs.py) and DPDK
// (drivers/common/mlx5/mlx5_prm.h).
constexpr const char* kCiteCqUmem =
    "PRM CREATE_CQ input layout: cq_umem_offset 0x280..0x2bf, cq_umem_id 0x2c0..0x2df "
    "(rdma-core tests/mlx5_prm_structs.py CreateCqIn; DPDK mlx5_prm.h create_cq_in)";
constexpr const char* kCiteCqcDbrUmemId =
    "PRM CQC (completion queue context): dbr_umem_id at 0x20, 32 bits "
    "(rdma-core tests/mlx5_prm_structs.py SwCqc; DPDK mlx5_prm.h cqc)";
constexpr const char* kCiteQpcDbrUmemId =
    "PRM QPC (queue pair context): dbr_umem_id at 0x720, 32 bits, the context's last word "
    "(rdma-core providers/mlx5/mlx5_ifc.h qpc; DPDK mlx5_prm.h qpc)";

}  // namespace

const NamedField kFields[] = {
    // command headers, per command the builders send or parse
    {"create_cq_in.opcode", kInOpcode, nullptr},
    {"create_cq_in.uid", kInUid, nullptr},
    {"create_cq_in.op_mod", kInOpMod, nullptr},
    {"create_qp_in.opcode", kInOpcode, nullptr},
    {"create_qp_in.op_mod", kInOpMod, nullptr},
    {"rst2init_qp_in.opcode", kInOpcode, nullptr},
    {"rst2init_qp_in.op_mod", kInOpMod, nullptr},
    {"init2rtr_qp_in.opcode", kInOpcode, nullptr},
    {"init2rtr_qp_in.op_mod", kInOpMod, nullptr},
    {"rtr2rts_qp_in.opcode", kInOpcode, nullptr},
    {"rtr2rts_qp_in.op_mod", kInOpMod, nullptr},
    {"qp_2err_in.opcode", kInOpcode, nullptr},
    {"qp_2err_in.op_mod", kInOpMod, nullptr},
    {"qp_2rst_in.opcode", kInOpcode, nullptr},
    {"qp_2rst_in.op_mod", kInOpMod, nullptr},
    {"query_hca_cap_in.opcode", kInOpcode, nullptr},
    {"query_hca_cap_in.op_mod", kInOpMod, nullptr},
    {"create_cq_out.status", kOutStatus, nullptr},
    {"create_cq_out.syndrome", kOutSyndrome, nullptr},
    {"create_qp_out.status", kOutStatus, nullptr},
    {"create_qp_out.syndrome", kOutSyndrome, nullptr},
    {"rst2init_qp_out.status", kOutStatus, nullptr},
    {"rst2init_qp_out.syndrome", kOutSyndrome, nullptr},
    {"init2rtr_qp_out.status", kOutStatus, nullptr},
    {"init2rtr_qp_out.syndrome", kOutSyndrome, nullptr},
    {"rtr2rts_qp_out.status", kOutStatus, nullptr},
    {"rtr2rts_qp_out.syndrome", kOutSyndrome, nullptr},
    {"qp_2err_out.status", kOutStatus, nullptr},
    {"qp_2err_out.syndrome", kOutSyndrome, nullptr},
    {"qp_2rst_out.status", kOutStatus, nullptr},
    {"qp_2rst_out.syndrome", kOutSyndrome, nullptr},
    {"query_qp_in.opcode", kInOpcode, nullptr},
    {"query_qp_in.op_mod", kInOpMod, nullptr},
    {"query_qp_out.status", kOutStatus, nullptr},
    {"query_qp_out.syndrome", kOutSyndrome, nullptr},
    {"query_hca_cap_out.status", kOutStatus, nullptr},
    {"query_hca_cap_out.syndrome", kOutSyndrome, nullptr},
    // CREATE_CQ
    {"create_cq_in.cq_context", kCreateCqInCqContext, nullptr},
    {"create_cq_in.cq_umem_offset", kCreateCqInUmemOffset, kCiteCqUmem},
    {"create_cq_in.cq_umem_id", kCreateCqInUmemId, kCiteCqUmem},
    {"create_cq_in.cq_umem_valid", kCreateCqInUmemValid, nullptr},
    {"create_cq_out.cqn", kCreateCqOutCqn, nullptr},
    {"cqc.dbr_umem_valid", kCqcDbrUmemValid, nullptr},
    {"cqc.cqe_sz", kCqcCqeSz, nullptr},
    {"cqc.dbr_umem_id", kCqcDbrUmemId, kCiteCqcDbrUmemId},
    {"cqc.log_cq_size", kCqcLogCqSize, nullptr},
    {"cqc.uar_page", kCqcUarPage, nullptr},
    {"cqc.c_eqn_or_apu_element", kCqcCEqn, nullptr},
    {"cqc.log_page_size", kCqcLogPageSize, nullptr},
    {"cqc.dbr_addr", kCqcDbrAddr, nullptr},
    // CREATE_QP
    {"create_qp_in.qpc", kCreateQpInQpc, nullptr},
    {"create_qp_in.wq_umem_offset", kCreateQpInWqUmemOffset, nullptr},
    {"create_qp_in.wq_umem_id", kCreateQpInWqUmemId, nullptr},
    {"create_qp_in.wq_umem_valid", kCreateQpInWqUmemValid, nullptr},
    {"create_qp_out.qpn", kCreateQpOutQpn, nullptr},
    {"qpc.st", kQpcSt, nullptr},
    {"qpc.pm_state", kQpcPmState, nullptr},
    {"qpc.pd", kQpcPd, nullptr},
    {"qpc.mtu", kQpcMtu, nullptr},
    {"qpc.log_msg_max", kQpcLogMsgMax, nullptr},
    {"qpc.log_rq_size", kQpcLogRqSize, nullptr},
    {"qpc.log_rq_stride", kQpcLogRqStride, nullptr},
    {"qpc.no_sq", kQpcNoSq, nullptr},
    {"qpc.log_sq_size", kQpcLogSqSize, nullptr},
    {"qpc.ts_format", kQpcTsFormat, nullptr},
    {"qpc.uar_page", kQpcUarPage, nullptr},
    {"qpc.log_page_size", kQpcLogPageSize, nullptr},
    {"qpc.remote_qpn", kQpcRemoteQpn, nullptr},
    {"qpc.primary_address_path", kQpcPrimaryAddressPath, nullptr},
    {"qpc.log_sra_max", kQpcLogSraMax, nullptr},
    {"qpc.retry_count", kQpcRetryCount, nullptr},
    {"qpc.rnr_retry", kQpcRnrRetry, nullptr},
    {"qpc.next_send_psn", kQpcNextSendPsn, nullptr},
    {"qpc.cqn_snd", kQpcCqnSnd, nullptr},
    {"qpc.log_rra_max", kQpcLogRraMax, nullptr},
    {"qpc.atomic_mode", kQpcAtomicMode, nullptr},
    {"qpc.rre", kQpcRre, nullptr},
    {"qpc.rwe", kQpcRwe, nullptr},
    {"qpc.rae", kQpcRae, nullptr},
    {"qpc.min_rnr_nak", kQpcMinRnrNak, nullptr},
    {"qpc.next_rcv_psn", kQpcNextRcvPsn, nullptr},
    {"qpc.cqn_rcv", kQpcCqnRcv, nullptr},
    {"qpc.dbr_addr", kQpcDbrAddr, nullptr},
    {"qpc.rq_type", kQpcRqType, nullptr},
    {"qpc.dbr_umem_valid", kQpcDbrUmemValid, nullptr},
    {"qpc.dbr_umem_id", kQpcDbrUmemId, kCiteQpcDbrUmemId},
    {"qpc.state", kQpcState, nullptr},
    {"qpc.hw_sq_wqebb_counter", kQpcHwSqWqebbCounter, nullptr},
    {"qpc.sw_sq_wqebb_counter", kQpcSwSqWqebbCounter, nullptr},
    {"ads.pkey_index", kAdsPkeyIndex, nullptr},
    {"ads.grh", kAdsGrh, nullptr},
    {"ads.rlid", kAdsRlid, nullptr},
    {"ads.ack_timeout", kAdsAckTimeout, nullptr},
    {"ads.src_addr_index", kAdsSrcAddrIndex, nullptr},
    {"ads.hop_limit", kAdsHopLimit, nullptr},
    {"ads.tclass", kAdsTclass, nullptr},
    {"ads.rgid_rip", kAdsRgidRip, nullptr},
    {"ads.dscp", kAdsDscp, nullptr},
    {"ads.udp_sport", kAdsUdpSport, nullptr},
    {"ads.eth_prio", kAdsEthPrio, nullptr},
    {"ads.sl", kAdsSl, nullptr},
    {"ads.vhca_port_num", kAdsVhcaPortNum, nullptr},
    {"ads.rmac_47_32", kAdsRmac47_32, nullptr},
    {"ads.rmac_31_0", kAdsRmac31_0, nullptr},
    // modify QP
    {"rst2init_qp_in.qpn", kModifyQpInQpn, nullptr},
    {"rst2init_qp_in.opt_param_mask", kModifyQpInOptParamMask, nullptr},
    {"rst2init_qp_in.qpc", kModifyQpInQpc, nullptr},
    {"init2rtr_qp_in.qpn", kModifyQpInQpn, nullptr},
    {"init2rtr_qp_in.opt_param_mask", kModifyQpInOptParamMask, nullptr},
    {"init2rtr_qp_in.qpc", kModifyQpInQpc, nullptr},
    {"rtr2rts_qp_in.qpn", kModifyQpInQpn, nullptr},
    {"rtr2rts_qp_in.opt_param_mask", kModifyQpInOptParamMask, nullptr},
    {"rtr2rts_qp_in.qpc", kModifyQpInQpc, nullptr},
    {"qp_2err_in.qpn", kModifyQpInQpn, nullptr},
    {"qp_2rst_in.qpn", kModifyQpInQpn, nullptr},
    // QUERY_QP
    {"query_qp_in.qpn", kQueryQpInQpn, nullptr},
    {"query_qp_out.qpc", kQueryQpOutQpc, nullptr},
    // QUERY_HCA_CAP
    {"query_hca_cap_out.capability", kQueryHcaCapOutCapability, nullptr},
    {"cmd_hca_cap.log_max_qp_sz", kCapLogMaxQpSz, nullptr},
    {"cmd_hca_cap.log_max_cq_sz", kCapLogMaxCqSz, nullptr},
    {"cmd_hca_cap.log_max_ra_req_qp", kCapLogMaxRaReqQp, nullptr},
    {"cmd_hca_cap.log_max_ra_res_qp", kCapLogMaxRaResQp, nullptr},
    {"cmd_hca_cap.port_type", kCapPortType, nullptr},
    {"cmd_hca_cap.log_max_msg", kCapLogMaxMsg, nullptr},
    {"cmd_hca_cap.atomic", kCapAtomic, nullptr},
    {"cmd_hca_cap.umem_uid_0", kCapUmemUid0, nullptr},
    {"cmd_hca_cap.sq_ts_format", kCapSqTsFormat, nullptr},
    {"cmd_hca_cap.log_bf_reg_size", kCapLogBfRegSize, nullptr},
    {"roce_cap.qp_ts_format", kRoceCapQpTsFormat, nullptr},
    {"atomic_caps.atomic_operations", kAtomicCapOperations, nullptr},
    {"atomic_caps.atomic_size_qp", kAtomicCapSizeQp, nullptr},
};
const size_t kFieldCount = sizeof(kFields) / sizeof(kFields[0]);

const NamedSize kSizes[] = {
    {"create_cq_in", kCreateCqInBytes},
    {"create_cq_out", kCmdOutBytes},
    {"cqc", kCreateCqInCqContext.bits / 8},
    {"create_qp_in", kCreateQpInBytes},
    {"create_qp_out", kCmdOutBytes},
    {"qpc", kCreateQpInQpc.bits / 8},
    {"ads", kQpcPrimaryAddressPath.bits / 8},
    {"rst2init_qp_in", kModifyQpInBytes},
    {"rst2init_qp_out", kCmdOutBytes},
    {"init2rtr_qp_in", kModifyQpInBytes},
    {"init2rtr_qp_out", kCmdOutBytes},
    {"rtr2rts_qp_in", kModifyQpInBytes},
    {"rtr2rts_qp_out", kCmdOutBytes},
    {"qp_2err_in", kQpStateInBytes},
    {"qp_2err_out", kCmdOutBytes},
    {"qp_2rst_in", kQpStateInBytes},
    {"qp_2rst_out", kCmdOutBytes},
    {"query_qp_in", kQueryQpInBytes},
    {"query_qp_out", kQueryQpOutBytes},
    {"query_hca_cap_in", kQueryHcaCapInBytes},
    {"query_hca_cap_out", kQueryHcaCapOutBytes},
    {"cmd_hca_cap", kCapStructBytes},
    {"atomic_caps", kCapStructBytes},
    {"roce_cap", kCapStructBytes},
};
const size_t kSizeCount = sizeof(kSizes) / sizeof(kSizes[0]);

const NamedValue kValues[] = {
    {"MLX5_CMD_OP_QUERY_HCA_CAP", kOpQueryHcaCap},
    {"MLX5_CMD_OP_CREATE_CQ", kOpCreateCq},
    {"MLX5_CMD_OP_CREATE_QP", kOpCreateQp},
    {"MLX5_CMD_OP_RST2INIT_QP", kOpRst2InitQp},
    {"MLX5_CMD_OP_INIT2RTR_QP", kOpInit2RtrQp},
    {"MLX5_CMD_OP_RTR2RTS_QP", kOpRtr2RtsQp},
    {"MLX5_CMD_OP_2ERR_QP", kOp2ErrQp},
    {"MLX5_CMD_OP_2RST_QP", kOp2RstQp},
    {"MLX5_CMD_OP_QUERY_QP", kOpQueryQp},
    {"MLX5_SET_HCA_CAP_OP_MOD_GENERAL_DEVICE", kCapTypeGeneral},
    {"MLX5_SET_HCA_CAP_OP_MOD_ATOMIC", kCapTypeAtomic},
    {"MLX5_SET_HCA_CAP_OP_MOD_ROCE", kCapTypeRoce},
    {"HCA_CAP_OPMOD_GET_CUR", kCapCurrent},
    {"MLX5_QPC_ST_RC", kQpStRc},
    {"MLX5_QPC_PM_STATE_MIGRATED", kQpPmMigrated},
    {"MLX5_ZERO_LEN_RQ", kRqTypeZeroLength},
    {"MLX5_CQC_CQE_SZ_64_BYTES", kCqeSize64},
    {"MLX5_TIMESTAMP_FORMAT_FREE_RUNNING", kTsFormatFreeRunning},
    {"MLX5_TIMESTAMP_FORMAT_DEFAULT", kTsFormatDefault},
    {"MLX5_QPC_ATOMIC_MODE_UP_TO_8B", kAtomicModeUpTo8B},
    {"MLX5_ADAPTER_PAGE_SHIFT", kAdapterPageShift},
    {"MLX5_QP_STATE_RST", kQpStateRst},
    {"MLX5_QP_STATE_INIT", kQpStateInit},
    {"MLX5_QP_STATE_RTR", kQpStateRtr},
    {"MLX5_QP_STATE_RTS", kQpStateRts},
    {"MLX5_QP_STATE_SQER", kQpStateSqer},
    {"MLX5_QP_STATE_SQD", kQpStateSqd},
    {"MLX5_QP_STATE_ERR", kQpStateErr},
    {"MLX5_QP_STATE_SQ_DRAINING", kQpStateSqDraining},
    {"MLX5_QP_STATE_SUSPENDED", kQpStateSuspended},
    {"MLX5_CMD_STAT_OK", kStatusOk},
    {"MLX5_CMD_STAT_INT_ERR", kStatusInternalError},
    {"MLX5_CMD_STAT_BAD_OP_ERR", kStatusBadOp},
    {"MLX5_CMD_STAT_BAD_PARAM_ERR", kStatusBadParam},
    {"MLX5_CMD_STAT_BAD_SYS_STATE_ERR", kStatusBadSysState},
    {"MLX5_CMD_STAT_BAD_RES_ERR", kStatusBadResource},
    {"MLX5_CMD_STAT_RES_BUSY", kStatusResourceBusy},
    {"MLX5_CMD_STAT_NOT_READY", kStatusNotReady},
    {"MLX5_CMD_STAT_LIM_ERR", kStatusLimitsExceeded},
    {"MLX5_CMD_STAT_BAD_RES_STATE_ERR", kStatusBadResourceState},
    {"MLX5_CMD_STAT_IX_ERR", kStatusBadIndex},
    {"MLX5_CMD_STAT_NO_RES_ERR", kStatusNoResources},
    {"MLX5_CMD_STAT_BAD_QP_STATE_ERR", kStatusBadQpState},
    {"MLX5_CMD_STAT_BAD_PKT_ERR", kStatusBadPacket},
    {"MLX5_CMD_STAT_BAD_SIZE_OUTS_CQES_ERR", kStatusBadSizeOutstandingCqes},
    {"MLX5_CMD_STAT_BAD_INP_LEN_ERR", kStatusBadInputLength},
    {"MLX5_CMD_STAT_BAD_OUTP_LEN_ERR", kStatusBadOutputLength},
};
const size_t kValueCount = sizeof(kValues) / sizeof(kValues[0]);

namespace {
bool inside(size_t bytes, Field f) {
  return f.bits > 0 && uint64_t(f.offset) + f.bits <= uint64_t(bytes) * 8;
}
}  // namespace

// Bit k of the PRM numbering is bit (7 - k % 8) of byte k / 8: in a big-endian word the most
// significant bit is in the first byte, so a plain MSB-first walk over bytes matches MLX5_SET.
bool setField(Mailbox& m, Field f, uint64_t value) {
  if (f.bits > 64 || !inside(m.size(), f)) return false;
  for (uint32_t i = 0; i < f.bits; ++i) {
    const uint32_t bit = f.offset + i;
    const uint8_t mask = uint8_t(0x80u >> (bit % 8));
    if ((value >> (f.bits - 1 - i)) & 1u) {
      m[bit / 8] |= mask;
    } else {
      m[bit / 8] &= uint8_t(~mask);
    }
  }
  return true;
}

uint64_t getField(const Mailbox& m, Field f) {
  if (f.bits > 64 || !inside(m.size(), f)) return 0;
  uint64_t value = 0;
  for (uint32_t i = 0; i < f.bits; ++i) {
    const uint32_t bit = f.offset + i;
    value = (value << 1) | ((m[bit / 8] >> (7 - bit % 8)) & 1u);
  }
  return value;
}

bool setBytes(Mailbox& m, Field f, const uint8_t* bytes) {
  if (f.offset % 8 != 0 || f.bits % 8 != 0 || !inside(m.size(), f)) return false;
  std::memcpy(m.data() + f.offset / 8, bytes, f.bits / 8);
  return true;
}

}  // namespace devx
}  // namespace rdma
}  // namespace te4j
