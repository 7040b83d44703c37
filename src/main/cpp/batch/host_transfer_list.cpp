// host_transfer_list.cpp — te4j::TransferList on the host platform: the requests are checked
// and written once into a batch state's request slots, and each post queues one part of them on
// the batches' process-wide worker (batch/host_batch_worker.h), which copies them as it copies a
// batch's part (one memmove per request, large posts sliced across its helpers).
//
// Why a post costs the same for 10 and 10^6 requests: the range's bytes come from prefix sums
// made at create, and the worker's counters are reset for the post instead of per request (the
// state words are only read once the post has ended, so they need no clearing). Whether a post
// skipped anything is known without a scan when it was never cancelled, which is the usual case.
#include <algorithm>
#include <chrono>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "batch/batch_descriptors.h"
#include "batch/host_batch_worker.h"
#include "batch/transfer_lists.h"

namespace te4j {
namespace {

class HostTransferList final : public TransferList {
  static constexpr int64_t kSpinNanos = 20000;

 public:
  HostTransferList(int count, const int32_t* opcodes, const uint64_t* local, const uint64_t* remote,
                   const uint64_t* lengths)
      : count_(count) {
    try {
      state_ = std::make_shared<HostBatchState>(count);
      prefix_bytes_.resize(static_cast<size_t>(count) + 1);
    } catch (const std::bad_alloc&) {
      init_status_ = kOutOfMemory;
      last_error_ = "TransferList: out of memory for " + std::to_string(count) + " requests";
      return;
    }
    BatchDescriptor* slots = state_->requests.get();
    prefix_bytes_[0] = 0;
    for (int i = 0; i < count; ++i) {
      slots[i] = BatchDescriptor{opcodes[i], kRouteMapped, local[i], remote[i], lengths[i], 0, 0};
      prefix_bytes_[static_cast<size_t>(i) + 1] =
          prefix_bytes_[static_cast<size_t>(i)] + lengths[i];
    }
  }

  ~HostTransferList() override {
    if (!state_) return;
    state_->cancelled.store(true, std::memory_order_release);
    std::unique_lock<std::mutex> lock(state_->mu);
    state_->cv.wait(lock, [&] { return state_->running_parts == 0; });
  }

  int size() const override { return count_; }

  int post(int from, int to) override {
    if (init_status_ != kOk) return fail(init_status_, last_error_);
    if (from < 0 || to > count_ || from >= to) {
      return fail(kInvalidArgument, "post: range [" + std::to_string(from) + ", " +
                                        std::to_string(to) + ") is not inside the list's " +
                                        std::to_string(count_) + " requests");
    }
    HostBatchPart part;
    part.batch = state_;
    part.first = from;
    part.count = to - from;
    part.mapped = part.count;
    part.bytes = prefix_bytes_[static_cast<size_t>(to)] - prefix_bytes_[static_cast<size_t>(from)];
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      if (state_->running_parts != 0) {
        return fail(kIllegalState, "post: the list's previous post has not ended");
      }
      state_->cancelled.store(false, std::memory_order_relaxed);
      state_->submitted = part.count;
      state_->finished = 0;
      state_->finished_now.store(0, std::memory_order_relaxed);
      state_->running_parts = 1;
      posted_ = true;
      cancel_seen_ = false;
      from_ = from;
      to_ = to;
    }
    std::string why;
    if (int st = enqueueHostBatchPart(std::move(part), &why)) {
      std::lock_guard<std::mutex> lock(state_->mu);
      state_->submitted = 0;
      state_->running_parts = 0;
      posted_ = false;
      return fail(st, "post: " + why);
    }
    return ok();
  }

  int poll() override {
    if (init_status_ != kOk) return fail(init_status_, last_error_);
    std::lock_guard<std::mutex> lock(state_->mu);
    return state_->running_parts == 0 ? 1 : 0;
  }

  int wait(int64_t timeout_ns) override {
    if (init_status_ != kOk) return fail(init_status_, last_error_);
    int submitted;
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      if (state_->running_parts == 0) return kOk;
      submitted = state_->submitted;
    }
    // Spin a little first, as the batch does: a post of small requests ends within microseconds.
    const auto spin_end = std::chrono::steady_clock::now() +
                          std::chrono::nanoseconds(std::min<int64_t>(kSpinNanos, timeout_ns));
    for (int k = 0;; ++k) {
      if (state_->finished_now.load(std::memory_order_acquire) >= submitted) break;
      if ((k & 15) == 15 && std::chrono::steady_clock::now() >= spin_end) break;
      std::this_thread::yield();
    }
    std::unique_lock<std::mutex> lock(state_->mu);
    const bool done =
        state_->cv.wait_for(lock, std::chrono::nanoseconds(timeout_ns < 0 ? 0 : timeout_ns),
                            [&] { return state_->running_parts == 0; });
    if (!done) {
      return fail(kTimeout, "wait: " + std::to_string(state_->submitted - state_->finished) +
                                " requests of the post still running");
    }
    return kOk;
  }

  int cancel() override {
    if (init_status_ != kOk) return fail(init_status_, last_error_);
    std::lock_guard<std::mutex> lock(state_->mu);
    if (state_->running_parts != 0) {
      cancel_seen_ = true;
      state_->cancelled.store(true, std::memory_order_release);
    }
    return ok();
  }

  int skipped() override {
    if (init_status_ != kOk) return fail(init_status_, last_error_);
    int from;
    int to;
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      if (state_->running_parts != 0) return fail(kIllegalState, "skipped: the post still runs");
      if (!posted_ || !cancel_seen_) return 0;  // never cancelled: every request completed
      from = from_;
      to = to_;
    }
    int n = 0;
    for (int i = from; i < to; ++i) {
      n +=
          state_->states[static_cast<size_t>(i)].load(std::memory_order_acquire) == kRequestTimeout;
    }
    return n;
  }

  int states(int first, int count, int32_t* out) override {
    if (init_status_ != kOk) return fail(init_status_, last_error_);
    if (out == nullptr || first < 0 || count < 0 || count > count_ - first) {
      return fail(kInvalidArgument, "states: range outside the list");
    }
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      if (state_->running_parts != 0) return fail(kIllegalState, "states: the post still runs");
    }
    for (int i = 0; i < count; ++i) {
      out[i] = state_->states[static_cast<size_t>(first + i)].load(std::memory_order_acquire);
    }
    return ok();
  }

 private:
  const int count_;
  std::shared_ptr<HostBatchState> state_;
  std::vector<uint64_t> prefix_bytes_;  // bytes of requests [0, i)
  // The last post, guarded by state_->mu.
  bool posted_ = false;
  bool cancel_seen_ = false;
  int from_ = 0;
  int to_ = 0;
};

}  // namespace

TransferList* createHostTransferList(int count, const int32_t* opcodes, const uint64_t* local,
                                     const uint64_t* remote, const uint64_t* lengths) {
  return new (std::nothrow) HostTransferList(count, opcodes, local, remote, lengths);
}

}  // namespace te4j
