// transfer_batch_base.cpp — the checks every platform's TransferBatch applies to a part
// (batch/transfer_batch_base.h).
//
// Why a second look at what Java checked: a caller that bypasses the Java layer (a C++ user, a
// fuzz target) must get an error naming the request, never a copy through a wrapped or null
// address, a work request with a null key, or a rank outside the queue-pair table.
#include "batch/transfer_batch_base.h"

#include <string>

#include "batch/batch_descriptors.h"

namespace te4j {
namespace batch {

int TransferBatchBase::checkOrder(int first, int count) {
  if (count <= 0) return fail(kInvalidArgument, "submit: empty part");
  if (first != submitted_ || count > capacity_ - first) {
    return fail(kInvalidArgument, "submit: requests [" + std::to_string(first) + ", " +
                                      std::to_string(first + static_cast<int64_t>(count)) +
                                      ") do not follow the " + std::to_string(submitted_) +
                                      " submitted within capacity " + std::to_string(capacity_));
  }
  return kOk;
}

int TransferBatchBase::submit(int first, int count, int64_t timeout_ns) {
  if (init_status_ != kOk) return fail(init_status_, last_error_);
  std::lock_guard<std::mutex> lock(submit_mu_);
  if (int st = checkOrder(first, count)) return st;
  return submitLocked(first, count, timeout_ns, nullptr);
}

int TransferBatchBase::submitPublication(int first, uint64_t expected, uint64_t sequence,
                                         int64_t timeout_ns) {
  if (init_status_ != kOk) return fail(init_status_, last_error_);
  std::lock_guard<std::mutex> lock(submit_mu_);
  if (int st = checkOrder(first, 2)) return st;
  // Beyond submit's checks: what makes the pair one publication on one queue pair.
  const BatchDescriptor* d = descriptors() + first;
  if (d[0].route < 0 || d[1].route != d[0].route || d[0].opcode != kBatchWrite ||
      d[1].opcode != kBatchWrite || d[1].length != 8 || (d[1].remote & 7u) != 0 ||
      (d[1].local & 7u) != 0) {
    return fail(kInvalidArgument,
                "submitPublication: requests " + std::to_string(first) + " and " +
                    std::to_string(first + 1) +
                    " are not a WRITE and an 8-byte sequence word, 8-byte aligned at both ends, "
                    "routed to one RDMA rank");
  }
  CheckedPart publication;
  publication.publication = true;
  publication.compare = expected;
  publication.swap = sequence;
  return submitLocked(first, 2, timeout_ns, &publication);
}

int TransferBatchBase::submit(int first, int count, const int32_t* opcodes, const uint64_t* local,
                              const uint64_t* remote, const uint64_t* lengths) {
  if (init_status_ != kOk) return fail(init_status_, last_error_);
  if (opcodes == nullptr || local == nullptr || remote == nullptr || lengths == nullptr) {
    return fail(kInvalidArgument, "submit: null descriptor array");
  }
  std::lock_guard<std::mutex> lock(submit_mu_);
  // Checked before the slots are written: those of submitted requests are still being read.
  if (int st = checkOrder(first, count)) return st;
  BatchDescriptor* d = descriptors() + first;
  for (int i = 0; i < count; ++i) {
    d[i] = BatchDescriptor{opcodes[i], kRouteMapped, local[i], remote[i], lengths[i], 0, 0};
  }
  return submitLocked(first, count, INT64_MAX, nullptr);
}

int TransferBatchBase::submitLocked(int first, int count, int64_t timeout_ns,
                                    const CheckedPart* publication) {
  const BatchDescriptor* d = descriptors() + first;
  const int ranks = rdmaRanks();
  CheckedPart part;
  if (publication != nullptr) part = *publication;
  part.first = first;
  part.count = count;
  part.timeout_ns = timeout_ns < 0 ? 0 : timeout_ns;
  for (int i = 0; i < count; ++i) {
    const BatchDescriptor& r = d[i];
    if (r.route == kRouteMapped) {
      const DescriptorProblem p = checkDescriptor(r.opcode, r.local, r.remote, r.length);
      if (p != kDescriptorOk) {
        return fail(kInvalidArgument,
                    "submit: request " + std::to_string(first + i) + " has " + describe(p));
      }
      ++part.mapped;
      part.mapped_bytes += r.length;
      continue;
    }
    if (r.route == kRoutePeerLost) {
      ++part.lost;
      continue;
    }
    DescriptorProblem p = checkDescriptor(r.opcode, r.local, r.remote, r.length);
    if (p == kDescriptorOk) p = checkRoute(r.route, r.lkey, r.rkey, ranks);
    if (p != kDescriptorOk) {
      return fail(kInvalidArgument,
                  "submit: request " + std::to_string(first + i) + " has " + describe(p));
    }
    ++part.rdma;
  }
  const int st = run(part);
  if (st == kOk) submitted_ += count;
  return st;
}

}  // namespace batch
}  // namespace te4j
