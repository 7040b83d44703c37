// host_transfer_batch.cpp — te4j::TransferBatch on the host platform: one process-wide worker
// thread runs the submitted parts in order, each request as one memcpy between this process's
// mappings (a peer's segment is mapped here, so READ is a copy out of the mapping).
//
// Why one worker for every batch: a batch is usually many small requests, where a thread per
// batch would cost more to start than the copies; a single-thread memcpy loop is also what the
// host platform is measured against. The worker starts on first use and lives with the process.
//
// Lifetime: each part holds a reference to the batch's shared state, so a batch destroyed with
// parts still queued only cancels them; its destructor waits until the worker is out of the
// batch's memory (at most the one request it is copying), because the Java layer unmaps the
// segments right after.
#include "batch/batch_descriptors.h"
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
#include <thread>
#include <vector>

namespace te4j {
namespace {

static_assert(batch::kOpRead == kBatchRead && batch::kOpWrite == kBatchWrite,
              "one set of opcode values");

struct Request {
  int32_t opcode;
  uint64_t local;
  uint64_t remote;
  uint64_t length;
};

// Every request of the batch has its slot, allocated with the batch and left untouched until a
// part fills it: a submit allocates nothing, and a large batch costs no page faults it does
// not use.
struct BatchState {
  explicit BatchState(int capacity)
      : states(static_cast<size_t>(capacity)),
        requests(new Request[static_cast<size_t>(capacity)]) {
    for (auto& s : states) s.store(kRequestPending, std::memory_order_relaxed);
  }
  std::vector<std::atomic<int32_t>> states;
  std::unique_ptr<Request[]> requests;
  std::atomic<bool> cancelled{false};
  std::atomic<int> finished_now{0};  // finished, readable without mu (wait spins on it)
  std::mutex mu;
  std::condition_variable cv;
  int submitted = 0;      // guarded by mu
  int finished = 0;       // guarded by mu
  int running_parts = 0;  // parts queued or being run, guarded by mu
};

struct Part {
  std::shared_ptr<BatchState> batch;
  int first = 0;
  int count = 0;
};

class Worker {
 public:
  static Worker* instance() {
    // Leaked on purpose: the thread outlives static destructors at exit.
    static Worker* w = new Worker();
    return w;
  }

  int enqueue(Part part, std::string* why) {
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
    cv_.notify_one();
    return kOk;
  }

 private:
  void run() {
    for (;;) {
      Part part;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return !queue_.empty(); });
        part = std::move(queue_.front());
        queue_.pop_front();
      }
      execute(part);
    }
  }

  static void execute(Part& part) {
    BatchState& b = *part.batch;
    int done = 0;
    for (int i = 0; i < part.count; ++i) {
      const Request& r = b.requests[static_cast<size_t>(part.first + i)];
      int32_t state = kRequestTimeout;
      if (!b.cancelled.load(std::memory_order_acquire)) {
        void* dst = reinterpret_cast<void*>(r.opcode == kBatchRead ? r.local : r.remote);
        const void* src =
            reinterpret_cast<const void*>(r.opcode == kBatchRead ? r.remote : r.local);
        // memmove: a request whose source and destination overlap (the own segment) is defined.
        std::memmove(dst, src, static_cast<size_t>(r.length));
        state = kRequestCompleted;
      }
      b.states[static_cast<size_t>(part.first + i)].store(state, std::memory_order_release);
      ++done;
    }
    std::lock_guard<std::mutex> lock(b.mu);
    b.finished += done;
    b.finished_now.store(b.finished, std::memory_order_release);
    --b.running_parts;
    b.cv.notify_all();
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Part> queue_;
  bool started_ = false;
};

class HostTransferBatch final : public TransferBatch {
  static constexpr int64_t kSpinNanos = 20000;

 public:
  explicit HostTransferBatch(int capacity) : capacity_(capacity) {
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
    std::unique_lock<std::mutex> lock(state_->mu);
    state_->cv.wait(lock, [&] { return state_->running_parts == 0; });
  }

  int capacity() const override { return capacity_; }

  int submit(int first, int count, const int32_t* opcodes, const uint64_t* local,
             const uint64_t* remote, const uint64_t* lengths) override {
    if (init_status_ != kOk) return fail(init_status_, last_error_);
    if (count <= 0 || opcodes == nullptr || local == nullptr || remote == nullptr ||
        lengths == nullptr) {
      return fail(kInvalidArgument, "submit: empty part or null descriptor array");
    }
    Part part;
    part.batch = state_;
    part.first = first;
    part.count = count;
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      if (first != state_->submitted || count > capacity_ - first) {
        return fail(kInvalidArgument,
                    "submit: requests [" + std::to_string(first) + ", " +
                        std::to_string(first + static_cast<int64_t>(count)) +
                        ") do not follow the " + std::to_string(state_->submitted) +
                        " submitted within capacity " + std::to_string(capacity_));
      }
      if (state_->cancelled.load()) return fail(kIllegalState, "submit: the batch was cancelled");
    }
    batch::DescriptorProblem problem;
    const int bad = batch::firstBadDescriptor(count, opcodes, local, remote, lengths, &problem);
    if (bad >= 0) {
      return fail(kInvalidArgument, "submit: request " + std::to_string(first + bad) + " has " +
                                        batch::describe(problem));
    }
    // Slots past the submitted ones: no part queued or running reads them.
    Request* slots = state_->requests.get() + first;
    for (int i = 0; i < count; ++i) {
      slots[i] = Request{opcodes[i], local[i], remote[i], lengths[i]};
    }
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      state_->submitted += count;
      ++state_->running_parts;
    }
    std::string why;
    if (int st = Worker::instance()->enqueue(std::move(part), &why)) {
      std::lock_guard<std::mutex> lock(state_->mu);
      state_->submitted -= count;
      --state_->running_parts;
      return fail(st, "submit: " + why);
    }
    return ok();
  }

  int states(int first, int count, int32_t* out) override {
    if (init_status_ != kOk) return fail(init_status_, last_error_);
    if (out == nullptr || first < 0 || count < 0 || count > capacity_ - first) {
      return fail(kInvalidArgument, "states: range outside the batch");
    }
    for (int i = 0; i < count; ++i) {
      out[i] = state_->states[static_cast<size_t>(first + i)].load(std::memory_order_acquire);
    }
    return ok();
  }

  int wait(int64_t timeout_ns) override {
    if (init_status_ != kOk) return fail(init_status_, last_error_);
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
      if (state_->finished_now.load(std::memory_order_acquire) >= submitted) return kOk;
      if ((k & 15) == 15 && std::chrono::steady_clock::now() >= spin_end) break;
      std::this_thread::yield();
    }
    std::unique_lock<std::mutex> lock(state_->mu);
    const bool done =
        state_->cv.wait_for(lock, std::chrono::nanoseconds(timeout_ns < 0 ? 0 : timeout_ns),
                            [&] { return state_->finished == state_->submitted; });
    if (!done) {
      return fail(kTimeout, "wait: " + std::to_string(state_->submitted - state_->finished) +
                                " requests still running");
    }
    return kOk;
  }

  int cancel() override {
    if (init_status_ != kOk) return fail(init_status_, last_error_);
    state_->cancelled.store(true, std::memory_order_release);
    return ok();
  }

 private:
  const int capacity_;
  std::shared_ptr<BatchState> state_;
};

}  // namespace

TransferBatch* createHostTransferBatch(int capacity) {
  return new (std::nothrow) HostTransferBatch(capacity);
}

}  // namespace te4j
