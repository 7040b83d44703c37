// host_transfer_batch.cpp — te4j::TransferBatch on the host platform: one process-wide worker
// thread runs the submitted parts' mapped requests in order, each as a memmove between this
// process's mappings (a peer's segment is mapped here, so READ is a copy out of the mapping);
// the batch's RDMA poster (batch/rdma_batch_poster.h) posts the requests routed to a rank. Both
// read the descriptors where the caller wrote them and store into the one state array.
//
// Why one worker for every batch: a batch is usually many small requests, where a thread per
// batch would cost more to start than the copies; a single-thread memcpy loop is also what the
// host platform is measured against. The worker starts on first use and lives with the process.
//
// Why helpers for large parts: one core's memcpy does not saturate a server's memory bandwidth,
// so a part of at least kSplitBytes is cut into up to `batchthreads` slices of about equal bytes
// (te4j/tuning.h), cut between requests or inside one; process-wide helper threads (started on
// first use, leaked like the worker) copy all slices but the first, which the worker copies
// before it takes back any slice no helper has claimed yet and waits for the rest. A request cut
// between slices decides once whether it copies (the first slice to reach it; a cancel after
// that lets it finish), and the last slice to finish its bytes stores its state, so a request is
// either copied whole (COMPLETED) or untouched (TIMEOUT). A request whose source and destination
// overlap is never cut: one memmove copies it. Smaller parts, and parts that mix routes, run on
// the worker alone, as one memmove per mapped request, with no handoff.
//
// Lifetime: each part holds a reference to the batch's shared state, so a batch destroyed with
// parts still queued only cancels them; its destructor waits until the part being run is done,
// its slices included (helpers touch only the pool's own state after their last copy), because
// the Java layer unmaps the segments right after.
#include "batch/host_batch_worker.h"

#include "batch/batch_descriptors.h"
#include "batch/rdma_batch_poster.h"
#include "batch/transfer_batch_base.h"
#include "batch/transfer_batches.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "te4j/tuning.h"

namespace te4j {
namespace {

static_assert(batch::kOpRead == kBatchRead && batch::kOpWrite == kBatchWrite,
              "one set of opcode values");
static_assert(batch::kRouteMapped == kRouteMapped && batch::kRoutePeerLost == kRoutePeerLost,
              "one set of route values");

using Request = BatchDescriptor;
using BatchState = HostBatchState;
using Part = HostBatchPart;

// A part below this runs on the worker alone: waking a helper costs microseconds, a copy of a
// few hundred KiB is not much longer.
constexpr uint64_t kSplitBytes = 1u << 20;
// No slice smaller than this (a 1 MiB part is 4 slices at most).
constexpr uint64_t kMinSliceBytes = 256u << 10;
// batchthreads' largest value.
constexpr int kMaxSlices = 8;
// A cut inside a request falls on a cache line of its destination: no line is written by two
// threads.
constexpr uint64_t kCutAlign = 64;
// The worker spins this long on its helpers' slices before it sleeps (yielding, so that on a
// machine with fewer cores than threads the helpers get the core).
constexpr int64_t kJoinSpinNanos = 20000;

struct Copy {
  uint8_t* dst;
  const uint8_t* src;
};

inline Copy resolve(const Request& r) {
  const uint64_t dst = r.opcode == kBatchRead ? r.local : r.remote;
  const uint64_t src = r.opcode == kBatchRead ? r.remote : r.local;
  return Copy{reinterpret_cast<uint8_t*>(dst), reinterpret_cast<const uint8_t*>(src)};
}

// Source and destination share a byte: only a memmove over the whole range is defined.
inline bool overlaps(const Request& r) {
  return r.local < r.remote + r.length && r.remote < r.local + r.length;
}

// Where a slice starts or ends: byte `offset` of the part's request `index` (offset < its
// length; the part's end is {count, 0}).
struct Cut {
  int index;
  uint64_t offset;
};

inline bool operator<(const Cut& a, const Cut& b) {
  return a.index < b.index || (a.index == b.index && a.offset < b.offset);
}
inline bool operator==(const Cut& a, const Cut& b) {
  return a.index == b.index && a.offset == b.offset;
}

// A request cut between slices: whether it copies, decided by the first slice that reaches it
// (as the CUDA kernel's `decision` word), and how many of its pieces are still to run.
struct SharedRequest {
  std::atomic<uint32_t> decision{0};  // 0 undecided, 1 copy, 2 skip
  std::atomic<int> pieces{0};
};

// Requests [begin, end) of the part, from begin.offset in the first; first_shared/last_shared
// name the SharedRequest of the first/last request when this slice holds only a piece of it.
struct Slice {
  Cut begin;
  Cut end;
  int first_shared;
  int last_shared;
};

// Runs a part's request `index` whole: skipped once the batch is cancelled, else one memmove
// (defined where source and destination overlap, e.g. within the own segment). A request of
// another route is its route's.
void copyWhole(BatchState& b, size_t index) {
  const Request& r = b.requests[index];
  if (r.route != kRouteMapped) return;
  int32_t state = kRequestTimeout;
  if (!b.cancelled.load(std::memory_order_acquire)) {
    const Copy c = resolve(r);
    std::memmove(c.dst, c.src, static_cast<size_t>(r.length));
    state = kRequestCompleted;
  }
  b.states[index].store(state, std::memory_order_release);
}

void runSlice(BatchState& b, int part_first, const Slice& s, SharedRequest* shared) {
  const int last = s.end.offset == 0 ? s.end.index - 1 : s.end.index;
  for (int j = s.begin.index; j <= last; ++j) {
    const size_t index = static_cast<size_t>(part_first + j);
    const Request& r = b.requests[index];
    const int piece = j == s.begin.index && s.first_shared >= 0 ? s.first_shared
                      : j == last                               ? s.last_shared
                                                                : -1;
    if (piece < 0) {
      copyWhole(b, index);
      continue;
    }
    SharedRequest& sr = shared[piece];
    uint32_t decision = sr.decision.load(std::memory_order_acquire);
    if (decision == 0) {
      const uint32_t mine = b.cancelled.load(std::memory_order_acquire) ? 2u : 1u;
      decision = sr.decision.compare_exchange_strong(decision, mine, std::memory_order_acq_rel)
                     ? mine
                     : decision;
    }
    if (decision == 1) {
      const uint64_t from = j == s.begin.index ? s.begin.offset : 0;
      const uint64_t to = j == s.end.index ? s.end.offset : r.length;
      const Copy c = resolve(r);
      std::memcpy(c.dst + from, c.src + from, static_cast<size_t>(to - from));  // never overlap
    }
    // The last piece stores the state: every piece's bytes are in memory before it is final.
    if (sr.pieces.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      b.states[index].store(decision == 1 ? kRequestCompleted : kRequestTimeout,
                            std::memory_order_release);
    }
  }
}

// Cuts a part of `bytes` into up to `wanted` slices of about equal bytes (fewer where a cut
// would split an overlapping request or two cuts meet). Fills slices[] and shared[] (pieces
// counted, decisions undecided) and returns the number of slices.
int planSlices(const Request* requests, int count, uint64_t bytes, int wanted, Slice* slices,
               SharedRequest* shared) {
  Cut cuts[kMaxSlices + 1];
  int ncuts = 0;
  cuts[ncuts++] = Cut{0, 0};
  int i = 0;
  uint64_t at = 0;  // bytes of the requests before request i
  for (int k = 1; k < wanted; ++k) {
    const uint64_t target = bytes / static_cast<uint64_t>(wanted) * static_cast<uint64_t>(k);
    while (i < count && at + requests[i].length <= target) at += requests[i++].length;
    Cut cut{i, 0};
    if (i < count && target > at) {
      const Request& r = requests[i];
      const uint64_t dst = reinterpret_cast<uint64_t>(resolve(r).dst);
      const uint64_t offset = target - at;
      const uint64_t aligned = offset - (dst + offset) % kCutAlign;
      if (overlaps(r)) {
        cut = Cut{i + 1, 0};
      } else if (aligned > 0 && aligned <= offset) {
        cut = Cut{i, aligned};
      }
    }
    if (cuts[ncuts - 1] < cut) cuts[ncuts++] = cut;
  }
  const Cut end{count, 0};
  if (cuts[ncuts - 1] == end) --ncuts;
  cuts[ncuts] = end;
  int nshared = 0;
  int shared_of[kMaxSlices + 1];  // the SharedRequest of each cut inside a request, or -1
  for (int k = 0; k <= ncuts; ++k) {
    shared_of[k] = -1;
    if (cuts[k].offset == 0) continue;
    if (nshared > 0 && k > 0 && shared_of[k - 1] >= 0 && cuts[k - 1].index == cuts[k].index) {
      shared_of[k] = shared_of[k - 1];  // another cut of the same request: one more piece
    } else {
      shared_of[k] = nshared++;
      shared[shared_of[k]].pieces.store(1, std::memory_order_relaxed);
    }
    shared[shared_of[k]].pieces.fetch_add(1, std::memory_order_relaxed);
    shared[shared_of[k]].decision.store(0, std::memory_order_relaxed);
  }
  for (int k = 0; k < ncuts; ++k) {
    slices[k] = Slice{cuts[k], cuts[k + 1], shared_of[k], shared_of[k + 1]};
  }
  return ncuts;
}

class Worker {
 public:
  static Worker* instance() {
    // Leaked on purpose: the worker and the helpers outlive static destructors at exit.
    static Worker* w = new Worker();
    return w;
  }

  int enqueue(Part part, std::string* why) {
    bool wake;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!started_) {
        try {
          std::thread(&Worker::run, this).detach();
        } catch (const std::exception& e) {
          *why = std::string("cannot start the batch worker thread: ") + e.what();
          return kSystemError;
        }
        started_ = true;
      }
      queue_.push_back(std::move(part));
      wake = idle_;
    }
    // Only a sleeping worker needs the wake-up (a busy one looks at the queue before it sleeps),
    // and it comes after the unlock, so the worker does not wake into a held mutex: the submit's
    // cost is mostly this call.
    if (wake) cv_.notify_one();
    return kOk;
  }

 private:
  void run() {
    for (;;) {
      Part part;
      {
        std::unique_lock<std::mutex> lock(mu_);
        while (queue_.empty()) {
          idle_ = true;
          cv_.wait(lock);
          idle_ = false;
        }
        part = std::move(queue_.front());
        queue_.pop_front();
      }
      execute(part);
    }
  }

  void execute(Part& part) {
    BatchState& b = *part.batch;
    int slices = 1;
    // A part that mixes routes is not sliced: the slices' byte arithmetic counts every request.
    if (part.bytes >= kSplitBytes && part.mapped == part.count) {
      const uint64_t by_size = part.bytes / kMinSliceBytes;
      const int wanted = static_cast<int>(std::min<uint64_t>(
          by_size, static_cast<uint64_t>(std::min(tuning::batchThreads(), kMaxSlices))));
      if (wanted > 1) {
        slices = planSlices(b.requests.get() + part.first, part.count, part.bytes,
                            1 + ensureHelpers(wanted - 1), slices_, shared_);
      }
    }
    if (slices > 1) {
      runSplit(b, part.first, slices);
    } else {
      for (int i = 0; i < part.count; ++i) copyWhole(b, static_cast<size_t>(part.first + i));
    }
    std::lock_guard<std::mutex> lock(b.mu);
    b.finished += part.mapped;
    b.finished_now.store(b.finished, std::memory_order_release);
    --b.running_parts;
    b.cv.notify_all();
  }

  // Starts helpers up to `wanted` (only the worker calls it); returns how many run.
  int ensureHelpers(int wanted) {
    while (helpers_ < wanted) {
      try {
        std::thread(&Worker::helperLoop, this).detach();
      } catch (const std::system_error&) {
        break;  // no more threads: the worker copies the part with those it has
      }
      ++helpers_;
    }
    return std::min(helpers_, wanted);
  }

  // Slices 1.. go to the helpers; the worker copies slice 0, then any slice still unclaimed,
  // then waits for the claimed ones. Returns once every slice is copied.
  void runSplit(BatchState& b, int part_first, int slices) {
    {
      std::lock_guard<std::mutex> lock(pool_mu_);
      job_batch_ = &b;
      job_first_ = part_first;
      jobs_ = slices;
      next_ = 1;
      pending_.store(slices - 1, std::memory_order_relaxed);
    }
    pool_work_.notify_all();
    runSlice(b, part_first, slices_[0], shared_);
    for (;;) {
      int k;
      {
        std::lock_guard<std::mutex> lock(pool_mu_);
        if (next_ >= jobs_) break;
        k = next_++;
      }
      runSlice(b, part_first, slices_[k], shared_);
      pending_.fetch_sub(1, std::memory_order_acq_rel);
    }
    const auto spin_end =
        std::chrono::steady_clock::now() + std::chrono::nanoseconds(kJoinSpinNanos);
    for (int k = 0;; ++k) {
      if (pending_.load(std::memory_order_acquire) == 0) return;
      if ((k & 15) == 15 && std::chrono::steady_clock::now() >= spin_end) break;
      std::this_thread::yield();
    }
    std::unique_lock<std::mutex> lock(pool_mu_);
    pool_done_.wait(lock, [&] { return pending_.load(std::memory_order_acquire) == 0; });
  }

  void helperLoop() {
    for (;;) {
      int k;
      {
        std::unique_lock<std::mutex> lock(pool_mu_);
        pool_work_.wait(lock, [&] { return next_ < jobs_; });
        k = next_++;
      }
      // The slices stay as planned until pending_ is 0, which needs this one.
      runSlice(*job_batch_, job_first_, slices_[k], shared_);
      std::lock_guard<std::mutex> lock(pool_mu_);
      if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pool_done_.notify_one();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Part> queue_;
  bool started_ = false;
  bool idle_ = false;  // the worker sleeps on cv_, guarded by mu_

  // The part being split: written by the worker while no slice is pending, read by whoever
  // claims a slice (claims under pool_mu_).
  int helpers_ = 0;  // the worker's only
  Slice slices_[kMaxSlices];
  SharedRequest shared_[kMaxSlices];
  BatchState* job_batch_ = nullptr;
  int job_first_ = 0;
  std::mutex pool_mu_;
  std::condition_variable pool_work_;
  std::condition_variable pool_done_;
  int jobs_ = 0;                 // slices of the part, guarded by pool_mu_
  int next_ = 0;                 // the next slice to claim, guarded by pool_mu_
  std::atomic<int> pending_{0};  // claimable or claimed slices not yet copied
};

}  // namespace

int enqueueHostBatchPart(HostBatchPart part, std::string* why) {
  return Worker::instance()->enqueue(std::move(part), why);
}

namespace {

class HostTransferBatch final : public batch::TransferBatchBase {
  static constexpr int64_t kSpinNanos = 20000;

 public:
  explicit HostTransferBatch(int capacity) : TransferBatchBase(capacity) {
    try {
      state_ = std::make_shared<BatchState>(capacity);
    } catch (const std::bad_alloc&) {
      init_status_ = kOutOfMemory;
      last_error_ = "TransferBatch: out of memory for " + std::to_string(capacity) + " requests";
    }
  }

  ~HostTransferBatch() override {
    if (!state_) return;
    state_->cancelled.store(true, std::memory_order_release);
    rdma_.reset();  // cancels and joins its posting thread
    std::unique_lock<std::mutex> lock(state_->mu);
    state_->cv.wait(lock, [&] { return state_->running_parts == 0; });
  }

  BatchDescriptor* descriptors() override { return state_ ? state_->requests.get() : nullptr; }

  int attachRdma(RdmaTransport* transport) override {
    if (init_status_ != kOk) return fail(init_status_, last_error_);
    std::lock_guard<std::mutex> lock(rdma_mu_);
    if (rdma_) return fail(kIllegalState, "attachRdma: an RdmaTransport is attached already");
    int st = kOk;
    std::string why;
    rdma_ = batch::RdmaBatchPoster::create(transport, state_, capacity(), &st, &why);
    if (!rdma_) return fail(st, "attachRdma: " + why);
    return ok();
  }

  int states(int first, int count, int32_t* out) override {
    if (init_status_ != kOk) return fail(init_status_, last_error_);
    if (out == nullptr || first < 0 || count < 0 || count > capacity() - first) {
      return fail(kInvalidArgument, "states: range outside the batch");
    }
    for (int i = 0; i < count; ++i) {
      out[i] = state_->states[static_cast<size_t>(first + i)].load(std::memory_order_acquire);
    }
    return ok();
  }

  int syndromes(int first, int count, int32_t* out) override {
    if (init_status_ != kOk) return fail(init_status_, last_error_);
    if (out == nullptr || first < 0 || count < 0 || count > capacity() - first) {
      return fail(kInvalidArgument, "syndromes: range outside the batch");
    }
    batch::RdmaBatchPoster* r = poster();
    for (int i = 0; i < count; ++i) out[i] = r != nullptr ? r->syndrome(first + i) : 0;
    return ok();
  }

  int wait(int64_t timeout_ns) override {
    if (init_status_ != kOk) return fail(init_status_, last_error_);
    const auto start = std::chrono::steady_clock::now();
    if (!waitMapped(timeout_ns)) {
      std::lock_guard<std::mutex> lock(state_->mu);
      return fail(kTimeout, "wait: " + std::to_string(state_->submitted - state_->finished) +
                                " requests still running");
    }
    batch::RdmaBatchPoster* r = poster();
    if (r == nullptr) return kOk;
    const int64_t spent = std::chrono::duration_cast<std::chrono::nanoseconds>(
                              std::chrono::steady_clock::now() - start)
                              .count();
    const int left = r->wait(timeout_ns - spent);
    if (left > 0)
      return fail(kTimeout, "wait: " + std::to_string(left) + " requests still running");
    return kOk;
  }

  int cancel() override {
    if (init_status_ != kOk) return fail(init_status_, last_error_);
    state_->cancelled.store(true, std::memory_order_release);
    if (batch::RdmaBatchPoster* r = poster()) r->cancel();
    return ok();
  }

 protected:
  int rdmaRanks() override {
    batch::RdmaBatchPoster* r = poster();
    return r != nullptr ? r->ranks() : 0;
  }

  int run(const batch::CheckedPart& p) override {
    if (state_->cancelled.load()) return fail(kIllegalState, "submit: the batch was cancelled");
    batch::RdmaBatchPoster* r = p.rdma > 0 ? poster() : nullptr;
    batch::RdmaBatchPoster::Part posted;
    std::string why;
    if (r != nullptr) {
      // Everything that can fail comes before the mapped requests start.
      if (int st = r->prepare(p.first, p.count, p.rdma, p.timeout_ns, &posted, &why)) {
        return fail(st, "submit: " + why);
      }
      posted.publication = p.publication;
      posted.compare = p.compare;
      posted.swap = p.swap;
    }
    if (p.mapped > 0) {
      Part part;
      part.batch = state_;
      part.first = p.first;
      part.count = p.count;
      part.mapped = p.mapped;
      part.bytes = p.mapped_bytes;
      {
        std::lock_guard<std::mutex> lock(state_->mu);
        state_->submitted += p.mapped;
        ++state_->running_parts;
      }
      if (int st = enqueueHostBatchPart(std::move(part), &why)) {
        std::lock_guard<std::mutex> lock(state_->mu);
        state_->submitted -= p.mapped;
        --state_->running_parts;
        return fail(st, "submit: " + why);
      }
    }
    if (p.lost > 0) {
      const Request* d = state_->requests.get();
      for (int i = p.first; i < p.first + p.count; ++i) {
        if (d[i].route == kRoutePeerLost) {
          state_->states[static_cast<size_t>(i)].store(kPeerLost, std::memory_order_release);
        }
      }
    }
    if (r != nullptr) r->post(std::move(posted));
    return ok();
  }

 private:
  batch::RdmaBatchPoster* poster() {
    std::lock_guard<std::mutex> lock(rdma_mu_);
    return rdma_.get();
  }

  // Waits for the mapped requests: true once every one is final.
  bool waitMapped(int64_t timeout_ns) {
    // Spin a little first: a part of small requests ends within microseconds, and a sleep on
    // the condition variable costs a wake-up that is longer than that.
    const auto spin_end = std::chrono::steady_clock::now() +
                          std::chrono::nanoseconds(std::min<int64_t>(kSpinNanos, timeout_ns));
    int submitted;
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      submitted = state_->submitted;
    }
    for (int k = 0;; ++k) {
      if (state_->finished_now.load(std::memory_order_acquire) >= submitted) return true;
      if ((k & 15) == 15 && std::chrono::steady_clock::now() >= spin_end) break;
      std::this_thread::yield();
    }
    std::unique_lock<std::mutex> lock(state_->mu);
    return state_->cv.wait_for(lock, std::chrono::nanoseconds(timeout_ns < 0 ? 0 : timeout_ns),
                               [&] { return state_->finished == state_->submitted; });
  }

  std::shared_ptr<BatchState> state_;
  std::mutex rdma_mu_;
  std::unique_ptr<batch::RdmaBatchPoster> rdma_;  // attached once, guarded by rdma_mu_
};

}  // namespace

TransferBatch* createHostTransferBatch(int capacity) {
  return new (std::nothrow) HostTransferBatch(capacity);
}

}  // namespace te4j
