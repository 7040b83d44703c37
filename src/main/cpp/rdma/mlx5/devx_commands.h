// devx_commands.h — the mlx5 firmware commands te4j's hardware backend sends through DevX
// (mlx5dv_devx_obj_create / _modify / general_cmd), built as PRM mailboxes: big-endian
// bit fields at the offsets of the mlx5 Programmer's Reference Manual.
//
// Pure functions, no rdma-core or kernel header: the layout is te4j's own field table
// (devx_layout.h), and the exact-format test checks every field of it against the Linux
// kernel's include/linux/mlx5/mlx5_ifc.h (test_devx_layout.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace te4j {
namespace rdma {
namespace devx {

/// A command mailbox (input or output) as bytes in PRM order.
using Mailbox = std::vector<uint8_t>;

// ---- completion queue -------------------------------------------------------------------
struct CqConfig {
  uint32_t log_cq_size = 0;     // log2 of the CQE count
  uint32_t uar_page = 0;        // UAR page index (mlx5dv_devx_alloc_uar → page_id)
  uint32_t eqn = 0;             // completion event queue (mlx5dv_devx_query_eqn)
  uint32_t cq_umem_id = 0;      // DevX umem holding the CQE buffer
  uint64_t cq_umem_offset = 0;  // its byte offset in that umem
  uint32_t dbr_umem_id = 0;     // DevX umem holding the CQ doorbell record
  uint64_t dbr_offset = 0;      // byte offset of the record in that umem (8-byte aligned)
  uint8_t log_umem_page = 12;   // log2 of the umem's page size (host page; 12 = 4 KiB)
};
Mailbox createCqIn(const CqConfig& c);
size_t createCqOutBytes();
uint32_t createCqOutCqn(const Mailbox& out);

// ---- RC queue pair, send queue only (zero-length receive queue) --------------------------
struct QpConfig {
  uint32_t pdn = 0;  // protection domain number (mlx5dv_init_obj MLX5DV_OBJ_PD)
  uint32_t uar_page = 0;
  uint32_t log_sq_size = 0;  // log2 of the send ring's 64-byte WQEBBs
  uint32_t cqn = 0;          // CQ for send (and, unused, receive) completions
  uint32_t wq_umem_id = 0;   // DevX umem holding the send ring
  uint64_t wq_umem_offset = 0;
  uint32_t dbr_umem_id = 0;  // DevX umem holding the QP doorbell record
  uint64_t dbr_offset = 0;
  uint8_t log_umem_page = 12;  // log2 of the umem's page size (host page; 12 = 4 KiB)
  uint8_t ts_format = 0;       // qpc.ts_format: qpTsFormat(caps) (0 = free running)
};
Mailbox createQpIn(const QpConfig& c);
size_t createQpOutBytes();
uint32_t createQpOutQpn(const Mailbox& out);

// ---- QP state transitions RST→INIT→RTR→RTS, and back to RST / ERR -------------------------
struct AddressPath {
  bool is_roce = false;
  uint8_t port = 1;  // vhca_port_num
  uint16_t pkey_index = 0;
  // InfiniBand: destination LID and service level.
  uint16_t rlid = 0;
  uint8_t sl = 0;
  // RoCE (and IB with a global route): destination GID, local GID index, hop limit.
  uint8_t rgid[16] = {};
  uint8_t gid_index = 0;
  uint8_t hop_limit = 64;
  uint16_t udp_sport = 0;  // RoCE v2 UDP source port (0: firmware default)
  // The GRH traffic class byte (DSCP << 2 | ECN) with a global route; RoCE also carries its
  // DSCP (the upper six bits) in ads.dscp, which is what the switches classify by.
  uint8_t traffic_class = 0;
  // RoCE: destination MAC. The device does not resolve it (no ARP in firmware): the peer
  // sends the MAC of its GID's interface, or it comes from the host's neighbour table.
  uint8_t rmac[6] = {};
};
struct InitConfig {
  uint32_t qpn = 0;
  uint8_t port = 1;
  uint16_t pkey_index = 0;
  bool remote_write = true, remote_read = true, remote_atomic = true;
  // qpc.atomic_mode when remote_atomic: largest atomic the responder executes. 3 = up to 8
  // bytes, enough for te4j's masked fetch-add 32 (an extended atomic); see qpAtomicMode().
  uint8_t atomic_mode = 3;
};
struct RtrConfig {
  uint32_t qpn = 0;
  uint32_t remote_qpn = 0;
  uint8_t mtu = 0;  // PRM/ibverbs encoding: 1=256 .. 5=4096
  uint32_t next_rcv_psn = 0;
  uint8_t log_rra_max = 4;  // responder resources (reads/atomics in flight), log2
  uint8_t min_rnr_nak = 12;
  uint8_t log_msg_max = 30;
  AddressPath path;
};
struct RtsConfig {
  uint32_t qpn = 0;
  uint32_t next_send_psn = 0;
  uint8_t retry_count = 7;
  uint8_t rnr_retry = 7;
  uint8_t log_sra_max = 4;   // requester reads/atomics in flight, log2
  uint8_t ack_timeout = 20;  // 4.096 us << 20 (about 4.3 s) per try, as NVSHMEM and Mooncake
  uint8_t port = 1;          // vhca_port_num of the primary path (as rdma-core's DevX tests)
};
Mailbox rst2initIn(const InitConfig& c);
Mailbox init2rtrIn(const RtrConfig& c);
Mailbox rtr2rtsIn(const RtsConfig& c);
Mailbox qp2errIn(uint32_t qpn);
Mailbox qp2rstIn(uint32_t qpn);
/// Output mailbox size of every modify-QP command above.
size_t modifyQpOutBytes();

// ---- QUERY_QP (through mlx5dv_devx_obj_query on the QP object) ------------------------------
Mailbox queryQpIn(uint32_t qpn);
size_t queryQpOutBytes();
struct QpQuery {
  uint32_t state = 0;                // kQpState* (devx_layout.h): RST, INIT, RTR, RTS, SQER, ERR...
  uint32_t hw_sq_wqebb_counter = 0;  // WQEBBs the NIC has fetched (16 bits)
  uint32_t sw_sq_wqebb_counter = 0;  // WQEBBs the doorbells announced (16 bits)
  uint32_t next_send_psn = 0;
};
QpQuery parseQueryQp(const Mailbox& out);
/// "RTS", "ERR", ... for qpc.state; "state 0x8" for a value the PRM does not name.
std::string qpStateText(uint32_t state);

// ---- capabilities -----------------------------------------------------------------------
/// QUERY_HCA_CAP, general device capabilities (op_mod 0x1: current values).
Mailbox queryHcaCapGeneralIn();
size_t queryHcaCapOutBytes();
struct GeneralCaps {
  uint32_t log_max_qp_sz = 0;  // largest send ring, log2 WQEBBs
  uint32_t log_max_cq_sz = 0;
  bool umem_uid_0 = false;  // informative: DevX umem allowed without a user context
  uint32_t log_max_msg = 0;
  bool atomic = false;             // the device supports atomics at all
  uint32_t port_type = 0;          // 0 InfiniBand, 1 Ethernet (RoCE)
  uint32_t log_max_ra_req_qp = 0;  // upper bound of RtsConfig::log_sra_max
  uint32_t log_max_ra_res_qp = 0;  // upper bound of RtrConfig::log_rra_max
  uint32_t sq_ts_format = 0;       // 0 free-running clock only, 1 real time only, 2 both
  uint32_t log_bf_reg_size = 0;    // log2 of a BlueFlame register (both halves); 0: unknown
};
GeneralCaps parseGeneralCaps(const Mailbox& out);
/// QpConfig::ts_format the way the kernel picks it: 1 ("default") when the device has a
/// real-time clock (sq_ts_format != 0), else 0 (free running); a real-time-only device
/// rejects 0. (For RoCE the kernel reads the RoCE caps' qp_ts_format; same rule.)
uint8_t qpTsFormat(const GeneralCaps& caps);
/// The same rule on a RoCE port: the RoCE capabilities' qp_ts_format decides (the kernel's
/// mlx5_get_qp_default_ts reads it instead of sq_ts_format when RoCE is enabled).
uint8_t qpTsFormatRoce(uint32_t roce_qp_ts_format);

/// QUERY_HCA_CAP, RoCE capabilities (op_mod 0x9: type 4, current values).
Mailbox queryHcaCapRoceIn();
/// roce_cap.qp_ts_format of a QUERY_HCA_CAP(RoCE) output.
uint32_t parseRoceQpTsFormat(const Mailbox& out);

/// Bytes between the two halves of a BlueFlame register: half of 2^log_bf_reg_size, or 256
/// (the size every ConnectX so far reports) when the capability reads 0.
uint32_t blueFlameHalf(const GeneralCaps& caps);

/// QUERY_HCA_CAP, atomic capabilities (op_mod 0x7: type 3, current values).
Mailbox queryHcaCapAtomicIn();
struct AtomicCaps {
  uint32_t atomic_operations = 0;  // bit 0 CAS, 1 FA, 2 extended CAS, 3 extended FA
  uint32_t atomic_size_qp = 0;     // bit n: 2^n-byte atomics on RC QPs
};
AtomicCaps parseAtomicCaps(const Mailbox& out);
/// InitConfig::atomic_mode as the kernel derives it (0 when the device has no atomics).
uint8_t qpAtomicMode(const GeneralCaps& general, const AtomicCaps& atomic);

// ---- every command's output header -------------------------------------------------------
uint8_t outStatus(const Mailbox& out);
uint32_t outSyndrome(const Mailbox& out);
/// "CREATE_QP failed: status 0x3 (bad parameter), syndrome 0x..." — the PRM status name.
std::string describeFailure(const char* command, const Mailbox& out);

}  // namespace devx
}  // namespace rdma
}  // namespace te4j
