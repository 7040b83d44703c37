// devx_commands.cpp — the DevX command mailboxes of devx_commands.h, written field by field
// through devx_layout.h's table. Every field not written stays zero, which the PRM reads as
// "reserved" or "default".
#include "rdma/mlx5/devx_commands.h"

#include <cstdio>

#include "rdma/mlx5/devx_layout.h"

namespace te4j {
namespace rdma {
namespace devx {

namespace {

Mailbox command(size_t bytes, uint16_t opcode, uint16_t op_mod) {
  Mailbox m(bytes, 0);
  setField(m, kInOpcode, opcode);
  setField(m, kInOpMod, op_mod);
  return m;
}

// log_page_size counts pages of the umem in units above the adapter's 4 KiB page.
uint32_t logPageSize(uint8_t log_umem_page) {
  return log_umem_page > kAdapterPageShift ? log_umem_page - kAdapterPageShift : 0;
}

bool anyByte(const uint8_t* bytes, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (bytes[i] != 0) return true;
  }
  return false;
}

// Primary address path, as the kernel's mlx5_set_path fills it for the two link layers.
void writePath(Mailbox& m, Field path, const AddressPath& p) {
  setField(m, at(path, kAdsVhcaPortNum), p.port);
  setField(m, at(path, kAdsPkeyIndex), p.pkey_index);
  const bool global = p.is_roce || anyByte(p.rgid, sizeof(p.rgid));
  if (p.is_roce) {
    // RoCE always routes by GID; the firmware needs the next hop's MAC.
    setField(m, at(path, kAdsRmac47_32), uint32_t(p.rmac[0]) << 8 | p.rmac[1]);
    setField(m, at(path, kAdsRmac31_0),
             uint32_t(p.rmac[2]) << 24 | uint32_t(p.rmac[3]) << 16 | uint32_t(p.rmac[4]) << 8 |
                 p.rmac[5]);
    setField(m, at(path, kAdsUdpSport), p.udp_sport);
    setField(m, at(path, kAdsDscp), p.traffic_class >> 2);
    setField(m, at(path, kAdsEthPrio), p.sl & 0x7u);
  } else {
    setField(m, at(path, kAdsRlid), p.rlid);
    setField(m, at(path, kAdsSl), p.sl);
    setField(m, at(path, kAdsGrh), global ? 1 : 0);  // IB: a GRH only when a GID is given
  }
  if (global) {
    setBytes(m, at(path, kAdsRgidRip), p.rgid);
    setField(m, at(path, kAdsSrcAddrIndex), p.gid_index);
    setField(m, at(path, kAdsHopLimit), p.hop_limit);
    setField(m, at(path, kAdsTclass), p.traffic_class);
  }
}

Mailbox modifyQp(uint16_t opcode, uint32_t qpn) {
  Mailbox m = command(kModifyQpInBytes, opcode, 0);
  setField(m, kModifyQpInQpn, qpn);
  return m;
}

Mailbox qpStateCommand(uint16_t opcode, uint32_t qpn) {
  Mailbox m = command(kQpStateInBytes, opcode, 0);
  setField(m, kModifyQpInQpn, qpn);
  return m;
}

uint32_t field(const Mailbox& m, Field f) { return uint32_t(getField(m, f)); }

}  // namespace

// ---- completion queue -------------------------------------------------------------------

Mailbox createCqIn(const CqConfig& c) {
  Mailbox m = command(kCreateCqInBytes, kOpCreateCq, 0);
  const Field cqc = kCreateCqInCqContext;
  setField(m, at(cqc, kCqcCqeSz), kCqeSize64);
  setField(m, at(cqc, kCqcLogCqSize), c.log_cq_size);
  setField(m, at(cqc, kCqcUarPage), c.uar_page);
  setField(m, at(cqc, kCqcCEqn), c.eqn);
  setField(m, at(cqc, kCqcLogPageSize), logPageSize(c.log_umem_page));
  setField(m, at(cqc, kCqcDbrUmemValid), 1);
  setField(m, at(cqc, kCqcDbrUmemId), c.dbr_umem_id);
  setField(m, at(cqc, kCqcDbrAddr), c.dbr_offset);  // an offset in the umem when umem-backed
  setField(m, kCreateCqInUmemValid, 1);
  setField(m, kCreateCqInUmemId, c.cq_umem_id);
  setField(m, kCreateCqInUmemOffset, c.cq_umem_offset);
  return m;
}

size_t createCqOutBytes() { return kCmdOutBytes; }

uint32_t createCqOutCqn(const Mailbox& out) { return field(out, kCreateCqOutCqn); }

// ---- queue pair -------------------------------------------------------------------------

Mailbox createQpIn(const QpConfig& c) {
  Mailbox m = command(kCreateQpInBytes, kOpCreateQp, 0);
  const Field qpc = kCreateQpInQpc;
  setField(m, at(qpc, kQpcSt), kQpStRc);
  setField(m, at(qpc, kQpcPmState), kQpPmMigrated);
  setField(m, at(qpc, kQpcPd), c.pdn);
  setField(m, at(qpc, kQpcUarPage), c.uar_page);
  setField(m, at(qpc, kQpcLogSqSize), c.log_sq_size);
  setField(m, at(qpc, kQpcRqType), kRqTypeZeroLength);  // log_rq_size / stride stay 0
  setField(m, at(qpc, kQpcCqnSnd), c.cqn);
  setField(m, at(qpc, kQpcCqnRcv), c.cqn);
  setField(m, at(qpc, kQpcTsFormat), c.ts_format);
  setField(m, at(qpc, kQpcLogPageSize), logPageSize(c.log_umem_page));
  setField(m, at(qpc, kQpcDbrUmemValid), 1);
  setField(m, at(qpc, kQpcDbrUmemId), c.dbr_umem_id);
  setField(m, at(qpc, kQpcDbrAddr), c.dbr_offset);
  setField(m, kCreateQpInWqUmemValid, 1);
  setField(m, kCreateQpInWqUmemId, c.wq_umem_id);
  setField(m, kCreateQpInWqUmemOffset, c.wq_umem_offset);
  return m;
}

size_t createQpOutBytes() { return kCmdOutBytes; }

uint32_t createQpOutQpn(const Mailbox& out) { return field(out, kCreateQpOutQpn); }

Mailbox rst2initIn(const InitConfig& c) {
  Mailbox m = modifyQp(kOpRst2InitQp, c.qpn);
  const Field qpc = kModifyQpInQpc;
  setField(m, at(qpc, kQpcPmState), kQpPmMigrated);
  setField(m, at(qpc, kQpcRwe), c.remote_write ? 1 : 0);
  setField(m, at(qpc, kQpcRre), c.remote_read ? 1 : 0);
  setField(m, at(qpc, kQpcRae), c.remote_atomic ? 1 : 0);
  if (c.remote_atomic) setField(m, at(qpc, kQpcAtomicMode), c.atomic_mode);
  const Field path = at(qpc, kQpcPrimaryAddressPath);
  setField(m, at(path, kAdsVhcaPortNum), c.port);
  setField(m, at(path, kAdsPkeyIndex), c.pkey_index);
  return m;
}

// ack_timeout is a send-side (RTS) attribute: rtr2rtsIn writes it, not this command.
Mailbox init2rtrIn(const RtrConfig& c) {
  Mailbox m = modifyQp(kOpInit2RtrQp, c.qpn);
  const Field qpc = kModifyQpInQpc;
  setField(m, at(qpc, kQpcMtu), c.mtu);
  setField(m, at(qpc, kQpcLogMsgMax), c.log_msg_max);
  setField(m, at(qpc, kQpcRemoteQpn), c.remote_qpn);
  setField(m, at(qpc, kQpcNextRcvPsn), c.next_rcv_psn);
  setField(m, at(qpc, kQpcLogRraMax), c.log_rra_max);
  setField(m, at(qpc, kQpcMinRnrNak), c.min_rnr_nak);
  writePath(m, at(qpc, kQpcPrimaryAddressPath), c.path);
  return m;
}

Mailbox rtr2rtsIn(const RtsConfig& c) {
  Mailbox m = modifyQp(kOpRtr2RtsQp, c.qpn);
  const Field qpc = kModifyQpInQpc;
  setField(m, at(qpc, kQpcNextSendPsn), c.next_send_psn);
  setField(m, at(qpc, kQpcRetryCount), c.retry_count);
  setField(m, at(qpc, kQpcRnrRetry), c.rnr_retry);
  setField(m, at(qpc, kQpcLogSraMax), c.log_sra_max);
  const Field path = at(qpc, kQpcPrimaryAddressPath);
  setField(m, at(path, kAdsAckTimeout), c.ack_timeout);
  setField(m, at(path, kAdsVhcaPortNum), c.port);
  return m;
}

Mailbox qp2errIn(uint32_t qpn) { return qpStateCommand(kOp2ErrQp, qpn); }

Mailbox qp2rstIn(uint32_t qpn) { return qpStateCommand(kOp2RstQp, qpn); }

size_t modifyQpOutBytes() { return kCmdOutBytes; }

Mailbox queryQpIn(uint32_t qpn) {
  Mailbox m = command(kQueryQpInBytes, kOpQueryQp, 0);
  setField(m, kQueryQpInQpn, qpn);
  return m;
}

size_t queryQpOutBytes() { return kQueryQpOutBytes; }

QpQuery parseQueryQp(const Mailbox& out) {
  const Field qpc = kQueryQpOutQpc;
  QpQuery q;
  q.state = field(out, at(qpc, kQpcState));
  q.hw_sq_wqebb_counter = field(out, at(qpc, kQpcHwSqWqebbCounter));
  q.sw_sq_wqebb_counter = field(out, at(qpc, kQpcSwSqWqebbCounter));
  q.next_send_psn = field(out, at(qpc, kQpcNextSendPsn));
  return q;
}

std::string qpStateText(uint32_t state) {
  switch (state) {
    case kQpStateRst: return "RST";
    case kQpStateInit: return "INIT";
    case kQpStateRtr: return "RTR";
    case kQpStateRts: return "RTS";
    case kQpStateSqer: return "SQER (send queue error: a work request failed)";
    case kQpStateSqd: return "SQD";
    case kQpStateErr: return "ERR (an error completion or a fatal event moved it there)";
    case kQpStateSqDraining: return "SQ_DRAINING";
    case kQpStateSuspended: return "SUSPENDED";
  }
  char text[32];
  std::snprintf(text, sizeof(text), "state 0x%x", state);
  return text;
}

// ---- capabilities -----------------------------------------------------------------------

Mailbox queryHcaCapGeneralIn() {
  return command(kQueryHcaCapInBytes, kOpQueryHcaCap, kCapTypeGeneral << 1 | kCapCurrent);
}

Mailbox queryHcaCapAtomicIn() {
  return command(kQueryHcaCapInBytes, kOpQueryHcaCap, kCapTypeAtomic << 1 | kCapCurrent);
}

Mailbox queryHcaCapRoceIn() {
  return command(kQueryHcaCapInBytes, kOpQueryHcaCap, kCapTypeRoce << 1 | kCapCurrent);
}

size_t queryHcaCapOutBytes() { return kQueryHcaCapOutBytes; }

uint32_t parseRoceQpTsFormat(const Mailbox& out) {
  return field(out, at(kQueryHcaCapOutCapability, kRoceCapQpTsFormat));
}

uint8_t qpTsFormatRoce(uint32_t roce_qp_ts_format) {
  return roce_qp_ts_format != 0 ? kTsFormatDefault : kTsFormatFreeRunning;
}

uint32_t blueFlameHalf(const GeneralCaps& caps) {
  // A register below 16 bytes cannot hold a doorbell: the capability is then not trusted.
  if (caps.log_bf_reg_size < 4 || caps.log_bf_reg_size > 16) return 256;
  return (1u << caps.log_bf_reg_size) / 2;
}

GeneralCaps parseGeneralCaps(const Mailbox& out) {
  const Field cap = kQueryHcaCapOutCapability;
  GeneralCaps g;
  g.log_max_qp_sz = field(out, at(cap, kCapLogMaxQpSz));
  g.log_max_cq_sz = field(out, at(cap, kCapLogMaxCqSz));
  g.umem_uid_0 = field(out, at(cap, kCapUmemUid0)) != 0;
  g.log_max_msg = field(out, at(cap, kCapLogMaxMsg));
  g.atomic = field(out, at(cap, kCapAtomic)) != 0;
  g.port_type = field(out, at(cap, kCapPortType));
  g.log_max_ra_req_qp = field(out, at(cap, kCapLogMaxRaReqQp));
  g.log_max_ra_res_qp = field(out, at(cap, kCapLogMaxRaResQp));
  g.sq_ts_format = field(out, at(cap, kCapSqTsFormat));
  g.log_bf_reg_size = field(out, at(cap, kCapLogBfRegSize));
  return g;
}

uint8_t qpTsFormat(const GeneralCaps& caps) {
  return caps.sq_ts_format != 0 ? kTsFormatDefault : kTsFormatFreeRunning;
}

AtomicCaps parseAtomicCaps(const Mailbox& out) {
  const Field cap = kQueryHcaCapOutCapability;
  AtomicCaps a;
  a.atomic_operations = field(out, at(cap, kAtomicCapOperations));
  a.atomic_size_qp = field(out, at(cap, kAtomicCapSizeQp));
  return a;
}

// The kernel's rule (mlx5_ib get_atomic_mode): with extended atomics, the mode is log2 of the
// largest supported size, at least 3 (up to 8 bytes); with only the IB-spec CAS and FA it is 1.
uint8_t qpAtomicMode(const GeneralCaps& general, const AtomicCaps& atomic) {
  constexpr uint32_t kCas = 1u << 0, kFa = 1u << 1, kExtCas = 1u << 2, kExtFa = 1u << 3;
  if (!general.atomic) return 0;
  const uint32_t sizes = atomic.atomic_size_qp & 0x1ffu;  // 1 byte .. 256 bytes
  if ((atomic.atomic_operations & (kExtCas | kExtFa)) != 0 && sizes != 0) {
    uint8_t log_max = 0;
    while ((sizes >> (log_max + 1)) != 0) ++log_max;
    return log_max > kAtomicModeUpTo8B ? log_max : uint8_t(kAtomicModeUpTo8B);
  }
  if ((atomic.atomic_operations & kCas) != 0 && (atomic.atomic_operations & kFa) != 0) return 1;
  return 0;
}

// ---- every command's output header ------------------------------------------------------

uint8_t outStatus(const Mailbox& out) { return uint8_t(getField(out, kOutStatus)); }

uint32_t outSyndrome(const Mailbox& out) { return field(out, kOutSyndrome); }

namespace {

struct StatusText {
  uint8_t status;
  const char* name;
  const char* hint;  // nullptr: nothing more to say
};

// PRM command status names, with what usually causes the common ones under DevX.
constexpr StatusText kStatusTexts[] = {
    {kStatusOk, "ok", "the firmware accepted it: the kernel or rdma-core refused the call (errno)"},
    {kStatusInternalError, "internal error", "firmware fault: check dmesg for a health report"},
    {kStatusBadOp, "bad operation",
     "this firmware does not know the opcode or op_mod: update the firmware"},
    {kStatusBadParam, "bad parameter",
     "a field is out of range: compare log sizes, MTU and retry counts with QUERY_HCA_CAP"},
    {kStatusBadSysState, "bad system state", "the device is in error or resetting: see dmesg"},
    {kStatusBadResource, "bad resource",
     "a referenced object (PD, CQ, UAR page, EQ, umem) is unknown or owned by another context"},
    {kStatusResourceBusy, "resource busy", "the object is still in use (e.g. a CQ a QP points at)"},
    {kStatusNotReady, "not ready", "the firmware is still initialising: retry later"},
    {kStatusLimitsExceeded, "limits exceeded",
     "a size or count above the device maximum (log_max_qp_sz, log_max_cq_sz, log_max_msg)"},
    {kStatusBadResourceState, "bad resource state",
     "the QP is not in the state this transition starts from (RST, INIT, RTR, RTS in order)"},
    {kStatusBadIndex, "bad index",
     "an index is outside its table: pkey_index, GID index (src_addr_index) or port"},
    {kStatusNoResources, "no resources", "the device is out of memory for contexts: free objects"},
    {kStatusBadQpState, "bad QP state", "the QP state does not allow this command"},
    {kStatusBadPacket, "bad packet", nullptr},
    {kStatusBadSizeOutstandingCqes, "bad size: too many outstanding CQEs",
     "the CQ is smaller than the work it may receive"},
    {kStatusBadInputLength, "bad input length",
     "the input mailbox size does not match this firmware's command layout"},
    {kStatusBadOutputLength, "bad output length",
     "the output mailbox size does not match this firmware's command layout"},
};

}  // namespace

std::string describeFailure(const char* command, const Mailbox& out) {
  std::string text = std::string(command) + " failed: ";
  if (out.size() < 8) return text + "no command output";
  const uint8_t status = outStatus(out);
  char head[96];
  std::snprintf(head, sizeof(head), "status 0x%x (", status);
  text += head;
  const StatusText* known = nullptr;
  for (const StatusText& s : kStatusTexts) {
    if (s.status == status) known = &s;
  }
  text += known != nullptr ? known->name : "unknown status";
  std::snprintf(head, sizeof(head), "), syndrome 0x%08x", outSyndrome(out));
  text += head;
  if (known != nullptr && known->hint != nullptr) text += std::string("; ") + known->hint;
  return text;
}

}  // namespace devx
}  // namespace rdma
}  // namespace te4j
