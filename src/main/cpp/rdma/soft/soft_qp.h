// soft_qp.h — one RC QP of the software NIC: its rings in control memory, the requests in
// flight, and in-order completion with the owner-bit CQE convention.
//
// Requests retire strictly in WQE order (as on hardware): a request that failed locally, one
// flushed, and one answered by the responder all wait in `inflight` until every earlier one is
// done. The first error puts the QP in the error state; every later WQE (already sent or not)
// completes with a flush error CQE, until the QP is recreated.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

#include "rdma/soft/soft_nic_stats.h"
#include "rdma/soft/wqe_parser.h"

namespace te4j {
namespace rdma {

struct InFlight {
  uint16_t wqe_counter = 0;
  uint8_t opcode = 0;
  bool signaled = false;
  bool done = false;
  // The progress thread is finished with the request (its frame sent, or the send failed): its
  // WRITE source is no longer read. A CQE tells the application it may reuse that source, so
  // retire() waits for this as well as for `done` (a response can overtake sendmsg's return).
  bool sent = true;
  uint8_t syndrome = 0;     // 0: success
  uint32_t byte_count = 0;  // reported in the CQE
  bool has_fetch = false;   // a masked FA: the old value goes to fetch_addr (already checked)
  uint64_t fetch_addr = 0;
  std::vector<ParsedSge> scatter;  // a READ: where its response's bytes go (already checked)
};

class SoftQp {
 public:
  // Fixed at creation.
  uint32_t qpn = 0;
  uint32_t sq_mask = 0;
  uint32_t cq_mask = 0;
  uint32_t bf_size = 256;
  uint8_t* sq_buf = nullptr;  // NIC-side (host) view of the control memory
  uint8_t* cq_buf = nullptr;
  uint32_t* sq_dbrec = nullptr;
  uint32_t* cq_dbrec = nullptr;
  uint64_t* uar = nullptr;   // two words: uar[0] and uar[bf_size / 8]
  uint64_t scratch_dev = 0;  // device address of the fetch scratch
  uint64_t scratch_host = 0;

  // Set by connect (before traffic), read by the progress thread and responders.
  std::atomic<int> peer_rank{-1};
  std::atomic<uint32_t> peer_qpn{0};

  // Progress-thread state.
  uint32_t fetch_ci = 0;  // next WQEBB the NIC fetches (free-running)

  std::atomic<bool> in_error{false};

  /// Appends a request (progress thread) before its frame is sent; returns whether it is to be
  /// executed (false: it was flushed or had already failed). An executed request stays unsent
  /// (no CQE) until markSent.
  bool push(const InFlight& entry);
  /// Progress thread, after the send of request `seq` returned (successfully or not).
  void markSent(uint16_t seq);
  /// Marks the oldest not-done request as answered. False if seq is not that request (a
  /// protocol violation by the peer).
  /// *fetch_addr is set (and true returned in *has_fetch) when the request was a masked FA.
  bool answer(uint16_t seq, uint8_t syndrome, SoftNicStats* stats, bool* has_fetch,
              uint64_t* fetch_addr);
  /// Completes every pending request with `syndrome` (connection lost, QP destroyed).
  void failAll(uint8_t syndrome, SoftNicStats* stats);
  /// Writes CQEs for the done and sent prefix of `inflight`.
  void retire(SoftNicStats* stats);
  /// Writes one CQE at the producer index (called under mutex_).
  void writeCqe(const InFlight& e, SoftNicStats* stats);

  size_t pending();
  /// The oldest not-done request, if its counter is seq and it is a READ: its scatter list
  /// (copied into *out) and byte count. False otherwise (the peer is out of step).
  bool readTarget(uint16_t seq, std::vector<ParsedSge>* out, uint32_t* bytes);

 private:
  std::mutex mutex_;
  std::deque<InFlight> inflight_;
  uint32_t cq_pi_ = 0;
};

}  // namespace rdma
}  // namespace te4j
