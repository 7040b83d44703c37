// rdma_transfer_batch.cpp — te4j::RdmaTransferBatch: the requests of a batch to segments reachable
// only over RDMA, posted from the host on the RdmaTransport's queue pairs (host platform: the
// QP table, rings and CQs are this process's memory), one WQE per request (per GiB).
//
// One thread per batch posts its parts in order. Requests to one QP are posted in runs under the
// QP lock with one doorbell per run (or whenever the ring fills: back-pressure through
// ibgda_wait_ring_slot), so the NIC pipelines them instead of one round trip each. Each request
// remembers the free-running ring positions [start, end) of its WQEs; it is final once the QP's
// completed count passes end. Its outcome then follows from the QP's first error (RC: the QP
// stops at the first error CQE and flushes everything after it): no error, or an error at or
// after end: COMPLETED; the error inside [start, end): FAILED with that CQE's syndrome; before
// start: FAILED, flushed.
//
// The completion polling follows ibgda/completion.cuh's protocol (the lock for every CQ poll and
// every read of the error fields), so op streams posting on the same QPs are unaffected.
#include "te4j/rdma_batch_api.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "te4j/batch_api.h"
#include "transport/device/ibgda_device.cuh"

namespace te4j {
namespace {

using mooncake::device::IbgdaQp;
namespace mlx5 = mooncake::device::mlx5;

/// A request's opcode beside kBatchRead / kBatchWrite, never taken from submit(): a notification
/// slot's fenced 8-byte compare-and-swap (submitPublication).
constexpr int32_t kSequenceSwap = -1;

struct Request {
  int32_t opcode;
  uint64_t local;  // kSequenceSwap: where the word's old value lands
  uint32_t lkey;
  uint64_t remote;
  uint32_t rkey;
  uint64_t length;
  int32_t rank;
  uint64_t compare = 0;  // kSequenceSwap only
  uint64_t swap = 0;
};

struct Part {
  int first = 0;
  std::vector<Request> requests;
  uint64_t deadline_ns = 0;  // mc_globaltimer_ns clock
};

/// Granted to requests already posted before the deadline to deliver their completions; the NIC's
/// own peer timeout fails them earlier when the owner is gone.
constexpr uint64_t kCompletionGraceNs = 10000000000ull;
/// Requests posted under one hold of a QP lock: long runs save doorbells, short ones let the
/// states of the first requests show early.
constexpr int kMaxRun = 256;

class RdmaBatch final : public RdmaTransferBatch {
 public:
  RdmaBatch(RdmaTransport* transport, int capacity) : capacity_(capacity) {
    try {
      states_ = std::vector<std::atomic<int32_t>>(static_cast<size_t>(capacity));
      syndromes_ = std::vector<std::atomic<int32_t>>(static_cast<size_t>(capacity));
    } catch (const std::bad_alloc&) {
      init_status_ = kOutOfMemory;
      last_error_ =
          "RdmaTransferBatch: out of memory for " + std::to_string(capacity) + " requests";
      return;
    }
    for (size_t i = 0; i < states_.size(); ++i) {
      states_[i].store(kRequestPending, std::memory_order_relaxed);
      syndromes_[i].store(0, std::memory_order_relaxed);
    }
    qps_ = static_cast<IbgdaQp*>(transport->qpDevCtxsPtr());
    num_ranks_ = transport->numRanks();
    qps_per_rank_ = transport->qpsPerRank();
    if (qps_ == nullptr || num_ranks_ <= 0 || qps_per_rank_ <= 0) {
      init_status_ = kIllegalState;
      last_error_ =
          "RdmaTransferBatch: the RdmaTransport has no queue pairs (initialize and connect it "
          "first)";
    }
  }

  ~RdmaBatch() override {
    cancelled_.store(true, std::memory_order_release);
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
      cv_.notify_all();
    }
    if (worker_.joinable()) worker_.join();
  }

  int capacity() const override { return capacity_; }

  int submit(int first, int count, const int32_t* opcodes, const uint64_t* local,
             const uint32_t* lkeys, const uint64_t* remote, const uint32_t* rkeys,
             const uint64_t* lengths, const int32_t* ranks, int64_t timeout_ns) override {
    if (init_status_ != kOk) return fail(init_status_, last_error_);
    if (count <= 0 || !opcodes || !local || !lkeys || !remote || !rkeys || !lengths || !ranks)
      return fail(kInvalidArgument, "submit: empty part or null descriptor array");
    Part part;
    part.first = first;
    part.deadline_ns = mooncake::device::mc_globaltimer_ns() +
                       static_cast<uint64_t>(timeout_ns < 0 ? 0 : timeout_ns);
    try {
      part.requests.resize(static_cast<size_t>(count));
    } catch (const std::bad_alloc&) {
      return fail(kOutOfMemory, "submit: out of memory");
    }
    for (int i = 0; i < count; ++i) {
      if ((opcodes[i] != kBatchRead && opcodes[i] != kBatchWrite) || lengths[i] == 0 ||
          local[i] == 0 || remote[i] == 0 || lkeys[i] == 0 || rkeys[i] == 0 || ranks[i] < 0 ||
          ranks[i] >= num_ranks_) {
        return fail(kInvalidArgument,
                    "submit: request " + std::to_string(first + i) +
                        " has a bad opcode, a null address or key, length 0 or a bad rank");
      }
      part.requests[static_cast<size_t>(i)] =
          Request{opcodes[i], local[i], lkeys[i], remote[i], rkeys[i], lengths[i], ranks[i]};
    }
    return enqueue(std::move(part), first, count);
  }

  int submitPublication(int first, uint64_t slot_local, uint64_t fetch_local, uint32_t lkey,
                        uint64_t slot_remote, uint64_t seq_remote, uint32_t rkey,
                        uint32_t slot_bytes, uint64_t expected, uint64_t sequence, int32_t rank,
                        int64_t timeout_ns) override {
    if (init_status_ != kOk) return fail(init_status_, last_error_);
    if (slot_local == 0 || fetch_local == 0 || slot_remote == 0 || seq_remote == 0 || lkey == 0 ||
        rkey == 0 || slot_bytes == 0 || (seq_remote & 7u) != 0 || (fetch_local & 7u) != 0 ||
        rank < 0 || rank >= num_ranks_)
      return fail(kInvalidArgument,
                  "submitPublication: a null address or key, an empty slot, a sequence word or "
                  "fetch address not 8-byte aligned, or a bad rank");
    Part part;
    part.first = first;
    part.deadline_ns = mooncake::device::mc_globaltimer_ns() +
                       static_cast<uint64_t>(timeout_ns < 0 ? 0 : timeout_ns);
    try {
      part.requests.resize(2);
    } catch (const std::bad_alloc&) {
      return fail(kOutOfMemory, "submitPublication: out of memory");
    }
    // One part, one rank: both go to one QP in one run, the WRITE first.
    part.requests[0] = Request{kBatchWrite, slot_local, lkey, slot_remote, rkey, slot_bytes, rank};
    part.requests[1] = Request{kSequenceSwap, fetch_local, lkey, seq_remote, rkey, 8, rank};
    part.requests[1].compare = expected;
    part.requests[1].swap = sequence;
    return enqueue(std::move(part), first, 2);
  }

  int states(int first, int count, int32_t* out) override {
    return copy(states_, first, count, out);
  }
  int syndromes(int first, int count, int32_t* out) override {
    return copy(syndromes_, first, count, out);
  }

  int wait(int64_t timeout_ns) override {
    if (init_status_ != kOk) return fail(init_status_, last_error_);
    std::unique_lock<std::mutex> lock(mu_);
    const bool done = cv_.wait_for(lock, std::chrono::nanoseconds(timeout_ns < 0 ? 0 : timeout_ns),
                                   [&] { return finished_ == submitted_; });
    if (!done)
      return fail(kTimeout,
                  "wait: " + std::to_string(submitted_ - finished_) + " requests still running");
    return kOk;
  }

  int cancel() override {
    if (init_status_ != kOk) return fail(init_status_, last_error_);
    cancelled_.store(true, std::memory_order_release);
    return ok();
  }

 private:
  struct Posted {
    IbgdaQp* qp;
    uint32_t start;
    uint32_t end;
    int index;
  };

  /// Queues a checked part of `count` requests starting at `first` for the posting thread.
  int enqueue(Part&& part, int first, int count) {
    std::lock_guard<std::mutex> lock(mu_);
    if (first != submitted_ || count > capacity_ - first)
      return fail(kInvalidArgument, "submit: requests [" + std::to_string(first) + ", " +
                                        std::to_string(first + static_cast<int64_t>(count)) +
                                        ") do not follow the " + std::to_string(submitted_) +
                                        " submitted within capacity " + std::to_string(capacity_));
    if (cancelled_.load()) return fail(kIllegalState, "submit: the batch was cancelled");
    if (!worker_.joinable()) {
      try {
        worker_ = std::thread(&RdmaBatch::run, this);
      } catch (const std::exception& e) {
        return fail(kSystemError,
                    std::string("submit: cannot start the batch's posting thread: ") + e.what());
      }
    }
    queue_.push_back(std::move(part));
    submitted_ += count;
    cv_.notify_all();
    return ok();
  }

  int copy(const std::vector<std::atomic<int32_t>>& from, int first, int count, int32_t* out) {
    if (init_status_ != kOk) return fail(init_status_, last_error_);
    if (out == nullptr || first < 0 || count < 0 || count > capacity_ - first)
      return fail(kInvalidArgument, "states: range outside the batch");
    for (int i = 0; i < count; ++i)
      out[i] = from[static_cast<size_t>(first + i)].load(std::memory_order_acquire);
    return ok();
  }

  void finish(int index, int32_t state, int32_t syndrome) {
    syndromes_[static_cast<size_t>(index)].store(syndrome, std::memory_order_relaxed);
    states_[static_cast<size_t>(index)].store(state, std::memory_order_release);
    std::lock_guard<std::mutex> lock(mu_);
    ++finished_;
    cv_.notify_all();
  }

  void run() {
    for (;;) {
      Part part;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;
        part = std::move(queue_.front());
        queue_.pop_front();
      }
      execute(part);
    }
  }

  void execute(const Part& part) {
    std::vector<Posted> inflight;
    inflight.reserve(part.requests.size());
    const int channel = part.first % qps_per_rank_;  // parts spread over the channels
    const size_t n = part.requests.size();
    size_t i = 0;
    while (i < n) {
      if (cancelled_.load(std::memory_order_acquire) ||
          mooncake::device::mc_globaltimer_ns() > part.deadline_ns) {
        for (; i < n; ++i) finish(part.first + static_cast<int>(i), kRequestTimeout, 0);
        break;
      }
      const int rank = part.requests[i].rank;
      IbgdaQp* qp = qps_ + (rank * qps_per_rank_ + channel);
      i = postRun(part, i, qp, &inflight);
      harvest(&inflight, false);
    }
    const uint64_t give_up = part.deadline_ns + kCompletionGraceNs;
    for (uint32_t polls = 0; !inflight.empty(); ++polls) {
      if (harvest(&inflight, mooncake::device::mc_globaltimer_ns() > give_up) == 0)
        mooncake::device::ibgda_backoff(polls);
    }
  }

  /// Posts requests from `i` on while they go to `qp` (at most kMaxRun), under its lock, one
  /// doorbell at the end (or when the ring fills); returns the next request not handled.
  size_t postRun(const Part& part, size_t i, IbgdaQp* qp, std::vector<Posted>* inflight) {
    if (!mooncake::device::ibgda_lock(&qp->lock, part.deadline_ns)) {
      finish(part.first + static_cast<int>(i), kRequestTimeout, 0);
      return i + 1;
    }
    if (qp->err_count != 0) {
      const int32_t word = static_cast<int32_t>(qp->err_first);
      mooncake::device::ibgda_unlock(&qp->lock);
      // The QP is in the error state already: nothing posted on it runs until a reconnect.
      finish(part.first + static_cast<int>(i), kRemoteError, word);
      return i + 1;
    }
    const int rank = part.requests[i].rank;
    uint64_t last = 0;  // doorbell word of the last WQE not yet rung (a word is never 0)
    int run = 0;
    int status = mooncake::device::kMcRdmaOk;
    for (; i < part.requests.size() && run < kMaxRun && part.requests[i].rank == rank; ++i, ++run) {
      const Request& r = part.requests[i];
      const uint32_t start = qp->sq_pi;
      uint64_t left = r.length;
      uint64_t laddr = r.local;
      uint64_t raddr = r.remote;
      while (left > 0) {
        if (qp->sq_pi - qp->sq_ci > qp->sq_mask) {
          // The ring is full: what it holds must be rung before its completions can free a slot.
          if (last != 0) mooncake::device::ibgda_ring_doorbell(qp, last);
          last = 0;
          status = mooncake::device::ibgda_wait_ring_slot(qp, part.deadline_ns);
          if (status != mooncake::device::kMcRdmaOk) break;
        }
        const uint64_t chunk = left < mlx5::kMaxMessageBytes ? left : mlx5::kMaxMessageBytes;
        void* wqe = qp->sq_buf + static_cast<size_t>(qp->sq_pi & qp->sq_mask) * mlx5::kSendWqeBB;
        const uint16_t index = static_cast<uint16_t>(qp->sq_pi);
        if (r.opcode == kSequenceSwap)
          // Fenced: it also waits for any READ or atomic this QP still has in flight
          // (docs/MLX5.md).
          last = mooncake::device::ibgda_build_atomic_cs64(wqe, index, qp->qpn, raddr, r.rkey,
                                                           laddr, r.lkey, r.compare, r.swap,
                                                           mlx5::kCtrlFence);
        else if (r.opcode == kBatchWrite)
          last = mooncake::device::ibgda_build_rdma_write(wqe, index, qp->qpn, raddr, r.rkey, laddr,
                                                          r.lkey, static_cast<uint32_t>(chunk));
        else
          last = mooncake::device::ibgda_build_rdma_read(wqe, index, qp->qpn, raddr, r.rkey, laddr,
                                                         r.lkey, static_cast<uint32_t>(chunk));
        ++qp->sq_pi;
        laddr += chunk;
        raddr += chunk;
        left -= chunk;
      }
      if (left == 0) {
        inflight->push_back(Posted{qp, start, qp->sq_pi, part.first + static_cast<int>(i)});
        continue;
      }
      // Not fully posted (deadline while the ring stayed full, or a broken CQ): the part that
      // went out still completes and is waited for; the request reports it did not finish.
      if (qp->sq_pi != start)
        inflight->push_back(Posted{qp, start, qp->sq_pi, -1 - (part.first + static_cast<int>(i))});
      else
        finish(part.first + static_cast<int>(i), kRequestTimeout, 0);
      ++i;
      break;
    }
    if (last != 0) mooncake::device::ibgda_ring_doorbell(qp, last);
    mooncake::device::ibgda_unlock(&qp->lock);
    return i;
  }

  /// One poll of qp's CQ under its lock, and what it has completed and its first error.
  static bool look(IbgdaQp* qp, uint32_t* sq_ci, uint32_t* err_count, uint32_t* err_first,
                   uint32_t* err_wqe) {
    if (!mooncake::device::ibgda_lock(&qp->lock,
                                      mooncake::device::mc_globaltimer_ns() + 1000000000ull))
      return false;
    mooncake::device::ibgda_poll_cq(qp);
    *sq_ci = qp->sq_ci;
    *err_count = qp->err_count;
    *err_first = qp->err_first;
    *err_wqe = qp->err_wqe_counter;
    mooncake::device::ibgda_unlock(&qp->lock);
    return true;
  }

  /// Polls the CQs of the QPs in flight once and finishes the requests they completed; with
  /// give_up, finishes every request still in flight as timed out. Returns the number finished.
  int harvest(std::vector<Posted>* inflight, bool give_up) {
    struct Seen {
      IbgdaQp* qp;
      uint32_t sq_ci, err_count, err_first, err_wqe;
    };
    Seen seen[8];
    int nseen = 0;
    int done = 0;
    for (size_t k = 0; k < inflight->size();) {
      Posted& p = (*inflight)[k];
      Seen here{p.qp, 0, 0, 0, 0};
      const Seen* s = nullptr;
      for (int j = 0; j < nseen && s == nullptr; ++j)
        if (seen[j].qp == p.qp) s = &seen[j];
      if (s == nullptr) {
        if (!look(p.qp, &here.sq_ci, &here.err_count, &here.err_first, &here.err_wqe)) {
          here.sq_ci = p.start;  // the lock stayed busy: nothing learned this round
        }
        if (nseen < 8) seen[nseen++] = here;
        s = &here;
      }
      const bool retired = static_cast<int32_t>(s->sq_ci - p.end) >= 0;
      if (!retired && !give_up) {
        ++k;
        continue;
      }
      const int index = p.index >= 0 ? p.index : -1 - p.index;
      if (!retired) {
        finish(index, kTimeout, 0);
      } else if (p.index < 0) {
        finish(index, kTimeout, 0);
      } else if (s->err_count == 0) {
        finish(index, kRequestCompleted, 0);
      } else {
        const uint16_t err = static_cast<uint16_t>(s->err_wqe);
        const uint32_t into = static_cast<uint16_t>(err - static_cast<uint16_t>(p.start));
        if (into < p.end - p.start) {
          finish(index, kRemoteError, static_cast<int32_t>(s->err_first));
        } else if (static_cast<int16_t>(err - static_cast<uint16_t>(p.end)) >= 0) {
          finish(index, kRequestCompleted, 0);  // it completed before the QP's first error
        } else {
          finish(index, kRemoteError,
                 static_cast<int32_t>(mlx5::kSyndromeWrFlushErr |
                                      (static_cast<uint32_t>(mlx5::kCqeReqErr) << 16)));
        }
      }
      ++done;
      p = inflight->back();
      inflight->pop_back();
    }
    return done;
  }

  const int capacity_;
  IbgdaQp* qps_ = nullptr;
  int num_ranks_ = 0;
  int qps_per_rank_ = 0;
  std::vector<std::atomic<int32_t>> states_;
  std::vector<std::atomic<int32_t>> syndromes_;
  std::atomic<bool> cancelled_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Part> queue_;
  std::thread worker_;
  bool stopping_ = false;
  int submitted_ = 0;  // guarded by mu_
  int finished_ = 0;   // guarded by mu_
};

}  // namespace

RdmaTransferBatch* RdmaTransferBatch::create(RdmaTransport* transport, int capacity) {
  if (transport == nullptr || capacity < 1 || capacity > TransferBatch::kMaxBatchCapacity)
    return nullptr;
  return new (std::nothrow) RdmaBatch(transport, capacity);
}

}  // namespace te4j
