// rdma_batch_poster.cpp — the RDMA route of a host-platform TransferBatch
// (batch/rdma_batch_poster.h).
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
#include "batch/rdma_batch_poster.h"

#include <chrono>
#include <new>

#include "te4j/batch_api.h"
#include "transport/device/ibgda_device.cuh"

namespace te4j {
namespace batch {
namespace {

namespace mlx5 = mooncake::device::mlx5;

/// Granted to requests already posted before the deadline to deliver their completions; the NIC's
/// own peer timeout fails them earlier when the owner is gone.
constexpr uint64_t kCompletionGraceNs = 10000000000ull;
/// Requests posted under one hold of a QP lock: long runs save doorbells, short ones let the
/// states of the first requests show early.
constexpr int kMaxRun = 256;

}  // namespace

struct RdmaBatchPoster::Posted {
  Qp* qp;
  uint32_t start;
  uint32_t end;
  int index;  // the request's batch index, or -1 - it when it was only partly posted
};

std::unique_ptr<RdmaBatchPoster> RdmaBatchPoster::create(RdmaTransport* transport,
                                                         std::shared_ptr<HostBatchState> batch,
                                                         int capacity, int* status,
                                                         std::string* why) {
  if (transport == nullptr || !batch || capacity < 1) {
    *status = kInvalidArgument;
    *why = "no RdmaTransport, or a batch without state";
    return nullptr;
  }
  std::unique_ptr<RdmaBatchPoster> p;
  try {
    p.reset(new RdmaBatchPoster(transport, std::move(batch), capacity));
  } catch (const std::bad_alloc&) {
    *status = kOutOfMemory;
    *why =
        "out of memory for the RDMA completion words of " + std::to_string(capacity) + " requests";
    return nullptr;
  }
  if (p->qps_ == nullptr || p->num_ranks_ <= 0 || p->qps_per_rank_ <= 0) {
    *status = kIllegalState;
    *why = "the RdmaTransport has no queue pairs (initialize and connect it first)";
    return nullptr;
  }
  return p;
}

RdmaBatchPoster::RdmaBatchPoster(RdmaTransport* transport, std::shared_ptr<HostBatchState> batch,
                                 int capacity)
    : batch_(std::move(batch)), syndromes_(static_cast<size_t>(capacity)) {
  for (auto& w : syndromes_) w.store(0, std::memory_order_relaxed);
  qps_ = static_cast<Qp*>(transport->qpDevCtxsPtr());
  num_ranks_ = transport->numRanks();
  qps_per_rank_ = transport->qpsPerRank();
}

RdmaBatchPoster::~RdmaBatchPoster() {
  cancelled_.store(true, std::memory_order_release);
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  if (worker_.joinable()) worker_.join();
}

int RdmaBatchPoster::prepare(int first, int count, int rdma, int64_t timeout_ns, Part* out,
                             std::string* why) {
  out->deadline_ns = mooncake::device::mc_globaltimer_ns() +
                     static_cast<uint64_t>(timeout_ns < 0 ? 0 : timeout_ns);
  try {
    out->index.reserve(static_cast<size_t>(rdma));
  } catch (const std::bad_alloc&) {
    *why = "out of memory";
    return kOutOfMemory;
  }
  const BatchDescriptor* d = batch_->requests.get();
  for (int i = first; i < first + count; ++i) {
    if (d[i].route >= 0) out->index.push_back(i);
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!worker_.joinable()) {
    try {
      worker_ = std::thread(&RdmaBatchPoster::run, this);
    } catch (const std::exception& e) {
      *why = std::string("cannot start the batch's posting thread: ") + e.what();
      return kSystemError;
    }
  }
  return kOk;
}

void RdmaBatchPoster::post(Part&& part) {
  const int n = static_cast<int>(part.index.size());
  std::lock_guard<std::mutex> lock(mu_);
  // Parts spread over the channels by their place among the batch's RDMA requests.
  Queued q{submitted_ % qps_per_rank_, std::move(part)};
  try {
    queue_.push_back(std::move(q));
  } catch (const std::bad_alloc&) {
    for (int i : q.part.index) {
      syndromes_[static_cast<size_t>(i)].store(0, std::memory_order_relaxed);
      batch_->states[static_cast<size_t>(i)].store(kOutOfMemory, std::memory_order_release);
    }
    return;
  }
  submitted_ += n;
  cv_.notify_all();
}

int RdmaBatchPoster::wait(int64_t timeout_ns) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, std::chrono::nanoseconds(timeout_ns < 0 ? 0 : timeout_ns),
               [&] { return finished_ == submitted_; });
  return submitted_ - finished_;
}

void RdmaBatchPoster::cancel() { cancelled_.store(true, std::memory_order_release); }

void RdmaBatchPoster::finish(int index, int32_t state, int32_t syndrome) {
  syndromes_[static_cast<size_t>(index)].store(syndrome, std::memory_order_relaxed);
  batch_->states[static_cast<size_t>(index)].store(state, std::memory_order_release);
  std::lock_guard<std::mutex> lock(mu_);
  ++finished_;
  cv_.notify_all();
}

void RdmaBatchPoster::run() {
  for (;;) {
    Queued q;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      q = std::move(queue_.front());
      queue_.pop_front();
    }
    execute(q);
  }
}

void RdmaBatchPoster::execute(const Queued& q) {
  std::vector<Posted> inflight;
  inflight.reserve(q.part.index.size());
  const BatchDescriptor* d = batch_->requests.get();
  const size_t n = q.part.index.size();
  size_t i = 0;
  while (i < n) {
    if (cancelled_.load(std::memory_order_acquire) ||
        mooncake::device::mc_globaltimer_ns() > q.part.deadline_ns) {
      for (; i < n; ++i) finish(q.part.index[i], kRequestTimeout, 0);
      break;
    }
    const int rank = d[q.part.index[i]].route;
    Qp* qp = qps_ + (rank * qps_per_rank_ + q.channel);
    i = postRun(q, i, qp, &inflight);
    harvest(&inflight, false);
  }
  const uint64_t give_up = q.part.deadline_ns + kCompletionGraceNs;
  for (uint32_t polls = 0; !inflight.empty(); ++polls) {
    if (harvest(&inflight, mooncake::device::mc_globaltimer_ns() > give_up) == 0)
      mooncake::device::ibgda_backoff(polls);
  }
}

namespace {

/// One poll of qp's CQ under its lock, and what it has completed and its first error.
bool look(::mlx5gda_qp_devctx* qp, uint32_t* sq_ci, uint32_t* err_count, uint32_t* err_first,
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

}  // namespace

/// Posts requests from `i` on while they go to `qp` (at most kMaxRun), under its lock, one
/// doorbell at the end (or when the ring fills); returns the next request not handled.
size_t RdmaBatchPoster::postRun(const Queued& q, size_t i, Qp* qp, std::vector<Posted>* inflight) {
  const std::vector<int32_t>& index = q.part.index;
  const uint64_t deadline_ns = q.part.deadline_ns;
  const BatchDescriptor* d = batch_->requests.get();
  if (!mooncake::device::ibgda_lock(&qp->lock, deadline_ns)) {
    finish(index[i], kRequestTimeout, 0);
    return i + 1;
  }
  if (qp->err_count != 0) {
    const int32_t word = static_cast<int32_t>(qp->err_first);
    mooncake::device::ibgda_unlock(&qp->lock);
    // The QP is in the error state already: nothing posted on it runs until a reconnect.
    finish(index[i], kRemoteError, word);
    return i + 1;
  }
  const int rank = d[index[i]].route;
  uint64_t last = 0;  // doorbell word of the last WQE not yet rung (a word is never 0)
  int run = 0;
  int status = mooncake::device::kMcRdmaOk;
  for (; i < index.size() && run < kMaxRun && d[index[i]].route == rank; ++i, ++run) {
    const BatchDescriptor& r = d[index[i]];
    // A publication's sequence word: one 8-byte atomic (its slot says WRITE, length 8).
    const bool swap = q.part.publication && i + 1 == index.size();
    const uint32_t start = qp->sq_pi;
    uint64_t left = r.length;
    uint64_t laddr = r.local;
    uint64_t raddr = r.remote;
    while (left > 0) {
      if (qp->sq_pi - qp->sq_ci > qp->sq_mask) {
        // The ring is full: what it holds must be rung before its completions can free a slot.
        if (last != 0) mooncake::device::ibgda_ring_doorbell(qp, last);
        last = 0;
        status = mooncake::device::ibgda_wait_ring_slot(qp, deadline_ns);
        if (status != mooncake::device::kMcRdmaOk) break;
      }
      const uint64_t chunk = left < mlx5::kMaxMessageBytes ? left : mlx5::kMaxMessageBytes;
      void* wqe = qp->sq_buf + static_cast<size_t>(qp->sq_pi & qp->sq_mask) * mlx5::kSendWqeBB;
      const uint16_t at = static_cast<uint16_t>(qp->sq_pi);
      if (swap)
        // Fenced: it also waits for any READ or atomic this QP still has in flight
        // (docs/MLX5.md).
        last = mooncake::device::ibgda_build_atomic_cs64(wqe, at, qp->qpn, raddr, r.rkey, laddr,
                                                         r.lkey, q.part.compare, q.part.swap,
                                                         mlx5::kCtrlFence);
      else if (r.opcode == kBatchWrite)
        last = mooncake::device::ibgda_build_rdma_write(wqe, at, qp->qpn, raddr, r.rkey, laddr,
                                                        r.lkey, static_cast<uint32_t>(chunk));
      else
        last = mooncake::device::ibgda_build_rdma_read(wqe, at, qp->qpn, raddr, r.rkey, laddr,
                                                       r.lkey, static_cast<uint32_t>(chunk));
      ++qp->sq_pi;
      laddr += chunk;
      raddr += chunk;
      left -= chunk;
    }
    if (left == 0) {
      inflight->push_back(Posted{qp, start, qp->sq_pi, index[i]});
      continue;
    }
    // Not fully posted (deadline while the ring stayed full, or a broken CQ): the part that
    // went out still completes and is waited for; the request reports it did not finish.
    if (qp->sq_pi != start)
      inflight->push_back(Posted{qp, start, qp->sq_pi, -1 - index[i]});
    else
      finish(index[i], kRequestTimeout, 0);
    ++i;
    break;
  }
  if (last != 0) mooncake::device::ibgda_ring_doorbell(qp, last);
  mooncake::device::ibgda_unlock(&qp->lock);
  return i;
}

/// Polls the CQs of the QPs in flight once and finishes the requests they completed; with
/// give_up, finishes every request still in flight as timed out. Returns the number finished.
int RdmaBatchPoster::harvest(std::vector<Posted>* inflight, bool give_up) {
  struct Seen {
    Qp* qp;
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

}  // namespace batch
}  // namespace te4j
