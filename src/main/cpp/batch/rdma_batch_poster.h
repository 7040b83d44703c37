// batch/rdma_batch_poster.h — the RDMA route of a host-platform TransferBatch: the requests of a
// part routed to a rank (BatchDescriptor::route >= 0), posted from the host on the
// RdmaTransport's queue pairs (the QP table, rings and CQs are this process's memory), one WQE
// per request (per GiB), read from the batch's descriptor slots, their outcomes stored into the
// batch's state words. Private to libte4j (host_transfer_batch.cpp).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "batch/host_batch_worker.h"
#include "te4j/rdma_api.h"

struct mlx5gda_qp_devctx;  // a queue pair's posting state (transport/device/ibgda/qp_context.cuh)

namespace te4j {
namespace batch {

class RdmaBatchPoster {
 public:
  /// A part's RDMA requests, by batch index, ready to post.
  struct Part {
    std::vector<int32_t> index;
    uint64_t deadline_ns = 0;  // mc_globaltimer_ns clock
    // A notification's publication (TransferBatch::submitPublication): the part's last request
    // is posted as a fenced 8-byte compare-and-swap from `compare` to `swap`, not as a WRITE.
    bool publication = false;
    uint64_t compare = 0;
    uint64_t swap = 0;
  };

  /// A poster over `transport` (connected) for `batch`'s requests; nullptr with *status and
  /// *why when the transport has no queue pairs or memory is short.
  static std::unique_ptr<RdmaBatchPoster> create(RdmaTransport* transport,
                                                 std::shared_ptr<HostBatchState> batch,
                                                 int capacity, int* status, std::string* why);
  /// Cancels what is not posted and joins the posting thread.
  ~RdmaBatchPoster();

  int ranks() const { return num_ranks_; }
  /// Collects the `rdma` requests of [first, first + count) routed to a rank and starts the
  /// posting thread if needed: everything of a submit that can fail. A Status.
  int prepare(int first, int count, int rdma, int64_t timeout_ns, Part* out, std::string* why);
  /// Queues a prepared part; its requests then end in the batch's states.
  void post(Part&& part);
  /// Waits at most timeout_ns until every posted request is final; returns how many are not.
  int wait(int64_t timeout_ns);
  /// Requests not posted yet end as kRequestTimeout; posted ones finish. Idempotent.
  void cancel();
  /// Request `index`'s completion word (0: none).
  int32_t syndrome(int index) const {
    return syndromes_[static_cast<size_t>(index)].load(std::memory_order_acquire);
  }

 private:
  using Qp = ::mlx5gda_qp_devctx;
  // A queued part, on the channel its place among the batch's RDMA requests gives it.
  struct Queued {
    int channel = 0;
    Part part;
  };
  struct Posted;
  RdmaBatchPoster(RdmaTransport* transport, std::shared_ptr<HostBatchState> batch, int capacity);
  void finish(int index, int32_t state, int32_t syndrome);
  void run();
  void execute(const Queued& q);
  size_t postRun(const Queued& q, size_t i, Qp* qp, std::vector<Posted>* inflight);
  int harvest(std::vector<Posted>* inflight, bool give_up);

  std::shared_ptr<HostBatchState> batch_;
  Qp* qps_ = nullptr;  // [num_ranks_ * qps_per_rank_]
  int num_ranks_ = 0;
  int qps_per_rank_ = 0;
  std::vector<std::atomic<int32_t>> syndromes_;
  std::atomic<bool> cancelled_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Queued> queue_;
  std::thread worker_;
  bool stopping_ = false;
  int submitted_ = 0;  // guarded by mu_
  int finished_ = 0;   // guarded by mu_
};

}  // namespace batch
}  // namespace te4j
