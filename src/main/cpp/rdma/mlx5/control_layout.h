// control_layout.h — where each QP's rings and records lie in the control buffer.
//
// One block per QP, every part starting on a 4 KiB page (the offsets go into the CREATE_CQ /
// CREATE_QP mailboxes as umem offsets, and page-aligned parts need no page_offset):
//   +0                       send ring      ring x 64 B, rounded up to 4 KiB
//   +ringBytes               CQ             ring x 64 B (one CQE per WQE at most), rounded
//   +ringBytes + cqBytes     records page:  +0 QP doorbell record (8 B)
//                                           +64 CQ doorbell record (8 B)
//                                           +128 fetch scratch (8 B, atomics' old values)
// The whole buffer is one DevX umem (the NIC's view; or one umem per part, see
// control_buffer.h) and one MR (the scratch's lkey).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace te4j {
namespace rdma {

struct ControlLayout {
  static constexpr size_t kPage = 4096;
  uint32_t ring = 256;  // WQEBBs per send ring (= CQEs per CQ)

  static constexpr size_t roundUp(size_t n) { return (n + kPage - 1) & ~(kPage - 1); }
  size_t ringBytes() const { return roundUp((size_t)ring * 64); }
  size_t cqBytes() const { return roundUp((size_t)ring * 64); }
  size_t blockBytes() const { return ringBytes() + cqBytes() + kPage; }

  size_t sqOffset(int qp) const { return blockBytes() * (size_t)qp; }
  size_t cqOffset(int qp) const { return sqOffset(qp) + ringBytes(); }
  size_t dbrOffset(int qp) const { return cqOffset(qp) + cqBytes(); }
  size_t cqDbrOffset(int qp) const { return dbrOffset(qp) + 64; }
  size_t scratchOffset(int qp) const { return dbrOffset(qp) + 128; }
  size_t totalBytes(int qps) const { return blockBytes() * (size_t)qps; }
  /// Start of every part (ring, CQ, records page of each QP), ascending.
  std::vector<size_t> partStarts(int qps) const {
    std::vector<size_t> starts;
    for (int q = 0; q < qps; ++q) {
      starts.push_back(sqOffset(q));
      starts.push_back(cqOffset(q));
      starts.push_back(dbrOffset(q));
    }
    return starts;
  }
};

inline uint32_t log2Of(uint32_t power_of_two) {
  uint32_t log = 0;
  while ((1u << log) < power_of_two) ++log;
  return log;
}

}  // namespace rdma
}  // namespace te4j
