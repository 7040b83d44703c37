// soft_nic_stats.h — counters of the software NIC (RdmaTransport::statistics order).
#pragma once

#include <atomic>
#include <cstdint>

namespace te4j {
namespace rdma {

struct SoftNicStats {
  std::atomic<uint64_t> doorbells{0};       // UAR writes seen
  std::atomic<uint64_t> dbr_mismatches{0};  // UAR rung for a WQE the doorbell record does not cover
  std::atomic<uint64_t> uar_mismatches{0};  // UAR value is not the rung WQE's first 8 bytes / qpn
  std::atomic<uint64_t> wqes{0};            // WQEs fetched
  std::atomic<uint64_t> local_errors{0};    // malformed WQE or failed local key/bounds check
  std::atomic<uint64_t> remote_errors{0};   // error answers from responders (not flushes)
  std::atomic<uint64_t> flushes{0};         // flush error CQEs written
  std::atomic<uint64_t> cqes{0};            // CQEs written
  std::atomic<uint64_t> cq_overruns{0};     // CQE written over one the consumer had not taken
  std::atomic<uint64_t> bytes_written{0};   // responder: bytes placed by WRITEs
  std::atomic<uint64_t> atomics{0};         // responder: atomics applied
  std::atomic<uint64_t> rejected{0};        // responder: requests refused (key, bounds, state)
  std::atomic<uint64_t> bad_frames{0};      // connections closed for a malformed frame
  std::atomic<uint64_t> handshakes_refused{0};  // HELLOs malformed or not proving the NIC's key
  std::atomic<uint64_t> handshakes_dropped{0};  // handshakes too slow, evicted, or over the caps
  std::atomic<uint64_t> bytes_read{0};          // responder: bytes sent back for READs
  static constexpr int kCount = 16;
  void snapshot(int64_t out[kCount]) const {
    const std::atomic<uint64_t>* all[kCount] = {&doorbells,
                                                &dbr_mismatches,
                                                &uar_mismatches,
                                                &wqes,
                                                &local_errors,
                                                &remote_errors,
                                                &flushes,
                                                &cqes,
                                                &cq_overruns,
                                                &bytes_written,
                                                &atomics,
                                                &rejected,
                                                &bad_frames,
                                                &handshakes_refused,
                                                &handshakes_dropped,
                                                &bytes_read};
    for (int i = 0; i < kCount; ++i) out[i] = (int64_t)all[i]->load(std::memory_order_relaxed);
  }
};

}  // namespace rdma
}  // namespace te4j
