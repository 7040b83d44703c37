// batch/host_batch_worker.h — what the host platform's batch worker runs (host_transfer_batch.cpp):
// a part of a batch's requests, and the shared state its requests' outcomes go to. Private to
// libte4j; the host batch and the host transfer list (host_transfer_list.cpp) both queue parts,
// and the batch's RDMA poster (batch/rdma_batch_poster.h) reports its requests' outcomes here too.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "te4j/batch_api.h"

namespace te4j {

// Every request of the batch has its descriptor slot, allocated with the batch and left
// untouched until a part fills it: a submit allocates nothing, the worker reads the slots the
// caller wrote (TransferBatch::descriptors), and a large batch costs no page faults it does not
// use. The states are every route's: the worker's, the RDMA poster's, and those final at submit.
struct HostBatchState {
  explicit HostBatchState(int capacity)
      : states(static_cast<size_t>(capacity)),
        requests(new BatchDescriptor[static_cast<size_t>(capacity)]) {
    for (auto& s : states) s.store(kRequestPending, std::memory_order_relaxed);
  }
  std::vector<std::atomic<int32_t>> states;
  std::unique_ptr<BatchDescriptor[]> requests;
  std::atomic<bool> cancelled{false};
  std::atomic<int> finished_now{0};  // finished, readable without mu (wait spins on it)
  std::mutex mu;
  std::condition_variable cv;
  int submitted = 0;      // requests the worker runs (kRouteMapped), guarded by mu
  int finished = 0;       // of those, guarded by mu
  int running_parts = 0;  // parts queued or being run, guarded by mu
};

// Requests [first, first + count); the worker runs those routed kRouteMapped (`mapped` of them,
// `count` when every one is) and leaves the others' slots and states to their routes.
struct HostBatchPart {
  std::shared_ptr<HostBatchState> batch;
  int first = 0;
  int count = 0;
  int mapped = 0;
  uint64_t bytes = 0;  // the mapped requests' lengths added (each <= 2^40, at most 2^20 of them)
};

/// Queues a part on the process-wide worker (started on first use): its requests' states go to
/// part.batch->states, and once the part is run `finished` grows by its mapped count and
/// `running_parts` drops by one, under the state's mutex, with a notify. A te4j Status.
int enqueueHostBatchPart(HostBatchPart part, std::string* why);

}  // namespace te4j
