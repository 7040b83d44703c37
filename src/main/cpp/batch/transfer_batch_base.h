// batch/transfer_batch_base.h — what every platform's TransferBatch shares: a part follows the
// submitted requests within capacity, each descriptor is re-checked against its route, and the
// array form of submit writes the slots the in-place form reads. Private to libte4j. A platform
// implements run() (a part that passed these checks) and the rest of batch_api.h.
#pragma once

#include <cstdint>
#include <mutex>

#include "te4j/batch_api.h"

namespace te4j {
namespace batch {

/// A part as submit checked it: requests [first, first + count), counted by route.
struct CheckedPart {
  int first = 0;
  int count = 0;
  int mapped = 0;             // kRouteMapped: the platform copies them
  int rdma = 0;               // routed to a rank of the attached RdmaTransport
  int lost = 0;               // kRoutePeerLost: final at submit
  uint64_t mapped_bytes = 0;  // the mapped requests' lengths added
  int64_t timeout_ns = 0;
  bool publication = false;  // submitPublication: the last request is the fenced swap
  uint64_t compare = 0;      // publication only: the swap's expected old value
  uint64_t swap = 0;         // publication only: the value it writes
};

class TransferBatchBase : public TransferBatch {
 public:
  int capacity() const final { return capacity_; }
  int submit(int first, int count, int64_t timeout_ns) final;
  int submit(int first, int count, const int32_t* opcodes, const uint64_t* local,
             const uint64_t* remote, const uint64_t* lengths) final;
  int submitPublication(int first, uint64_t expected, uint64_t sequence, int64_t timeout_ns) final;

 protected:
  explicit TransferBatchBase(int capacity) : capacity_(capacity) {}
  /// Starts a checked part, under the submit lock: kOk, or a Status (and the message) with
  /// nothing of the part started.
  virtual int run(const CheckedPart& part) = 0;
  /// The ranks of the attached RdmaTransport; 0 while none is attached.
  virtual int rdmaRanks() = 0;

 private:
  int checkOrder(int first, int count);
  int submitLocked(int first, int count, int64_t timeout_ns, const CheckedPart* publication);

  const int capacity_;
  std::mutex submit_mu_;
  int submitted_ = 0;  // guarded by submit_mu_
};

}  // namespace batch
}  // namespace te4j
