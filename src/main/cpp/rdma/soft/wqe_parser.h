// wqe_parser.h — decoding one send WQE from a ring, as the NIC's WQE fetch does.
//
// A pure function over the ring bytes: it reads only inside the ring (wrapping at its end),
// never dereferences an address found in the WQE, and turns every malformed request into the
// syndrome of the error CQE the hardware would produce. The software NIC executes only what
// this accepts; the WQE fuzzer drives it directly.
#pragma once

#include <cstdint>

namespace te4j {
namespace rdma {

constexpr int kMaxSge = 30;  // ConnectX's max_send_sge

struct ParsedSge {
  uint64_t addr;
  uint32_t length;
  uint32_t lkey;
};

struct ParsedWqe {
  uint8_t syndrome = 0;  // 0: well formed; else the error CQE syndrome (mlx5::kSyndrome*)
  uint8_t opcode = 0;
  uint8_t opmod = 0;
  uint8_t fm_ce_se = 0;
  uint8_t ds = 0;  // size in 16-byte units
  uint16_t wqe_index = 0;
  uint32_t qpn = 0;
  uint32_t num_bbs = 1;  // WQEBBs the WQE occupies (how far the consumer advances)
  uint64_t raddr = 0;
  uint32_t rkey = 0;
  uint32_t add = 0;  // masked FA operand
  uint32_t field_boundary = 0;
  int num_sge = 0;
  ParsedSge sge[kMaxSge];
  uint64_t total_length = 0;  // sum of the gather list
  bool signaled() const;
};

/// Parses the WQE starting at WQEBB `index` (free-running; only index & ring_mask addresses the
/// ring) of a ring of ring_mask + 1 WQEBBs that belongs to QP `qpn`. Always fills num_bbs >= 1
/// so the consumer can step over a rejected WQE.
void parseWqe(const uint8_t* ring, uint32_t ring_mask, uint32_t index, uint32_t qpn,
              ParsedWqe* out);

}  // namespace rdma
}  // namespace te4j
