// host_op_stream.cpp — te4j::OpStream on the host platform: one executor thread per stream.
//
// Operations run in submission order on the executor (short ones on an idle stream on the
// caller's thread) and call the same single-source device primitives as the CUDA kernels
// (mc_route_put, mc_signal, mc_red_add, mc_wait_signal), compiled here by g++ against
// host_ops.cuh: the host platform is the CPU-only twin of the CUDA one.
//
// RDMA-routed ranks: an operation is posted to the QP and counts as done once posted, so the
// executor keeps posting while earlier requests are on the wire (up to the ring depth, where
// the post waits for a slot). Their completions are consumed by a quiet, which runs before any
// operation that could make an effect visible elsewhere than that QP's destination (a local or
// P2P put/add, an RDMA op to another rank), and at synchronize(). A signal after a put to the
// same rank needs no quiet: one QP executes its requests in order at the responder. A failed
// request surfaces as the error of the quiet that finds its error CQE.
//
// Hand-off: a ring of op slots that the executor drains without locks. Producers (any thread
// that enqueues) are serialized among themselves by a mutex, never against the executor. The
// executor runs every queued op in one pass and, when the ring is empty, polls it for a bounded
// spin before it parks on a futex; a producer makes the FUTEX_WAKE system call only when the
// executor has said it is parked, so back-to-back ops cost no system call. Ops that find the
// ring full go to an overflow list in order (an enqueue never blocks). A short op that finds
// the stream idle skips the ring and runs on the caller's thread (runInlineWhenIdle).
//
// Every spin here is bounded in time (the k*SpinNs constants;
// docs/history/PERFORMANCE-notebook.md): a thread that spins longer than that parks in the kernel,
// so ranks that outnumber the cores still get the CPU they need to make progress.
//
// Errors: the first failing operation (a waitSignal past its deadline, a rank with no route)
// records status + message; later operations are skipped (counted) until synchronize() returns
// that error, after which the stream runs operations again.
#include <errno.h>
#include <sched.h>
#include <linux/futex.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "p2p/host_p2p_transport.h"
#include "te4j/api.h"
#include "rdma/soft/doorbell_hint.h"
#include "te4j/tuning.h"
#include "transport/device/comm_device.cuh"
#include "transport/device/ibgda/syndrome_text.cuh"

using mooncake::device::CommCtx;

namespace te4j {
// host_copy.cpp: mode and threads are the knobs hostcopy and hostthreads (te4j/tuning.h).
void hostPutCopy(void* dst, const void* src, std::size_t n, int mode, int threads);

namespace {

// Longest wait we compute a deadline for (~31 years): keeps now + timeout inside int64.
constexpr int64_t kMaxWaitNs = 1000000000000000000LL;
// The executor polls an empty ring, and synchronize the completion count, this long before they
// park: ops enqueued (or completed) within it are picked up with no system call on either side,
// and Java enqueues back to back well inside it. Both wait for a thread of this process that is
// running, so the spin is short and fixed.
constexpr uint64_t kHandOffSpinNs = 20000;
// waitSignal polls its word at most HostKnobs::spin_ns before it parks (knob hostspin; auto:
// 20 us with 4 or more CPUs, else 0): it waits for another rank, whose thread may need this very
// core.
// waitSignal's spin adapts between this and spin_ns: halved after a wait that lasted longer
// than spin_ns (spinning only took a core from the thread that would raise the word, as when
// ranks outnumber cores), back to spin_ns after a wait that a full spin would have satisfied
// (a ping-pong whose partner was itself parked: both spinning is the fast equilibrium).
constexpr uint64_t kMinWaitSpinNs = 1000;
// Of a wait's spin, the part that polls with pause; the rest yields the core between polls.
constexpr uint64_t kPauseSpinNs = 2000;
// A parked waitSignal re-reads its word at least this often: writers that do not wake it (the
// soft NIC, a user kernel on the host platform) are seen this late at most, as before the futex.
constexpr int64_t kMaxParkNs = 100000;
// A parked executor or synchronize re-checks at least this often (a safety net only: every
// state change that matters wakes them).
constexpr int64_t kIdleParkNs = 1000000000;
// Largest put a producer runs on its own thread when the stream is idle (runInlineWhenIdle):
// copying it costs about what handing it to the executor does, and the caller is held up for
// no longer than that.
constexpr std::size_t kInlineMaxBytes = 8192;
// Slots of the ring; more queued ops go to the overflow list. A power of two.
constexpr uint64_t kRingSlots = 1024;

enum class OpKind : uint8_t { kPut, kPutWithSignal, kSignal, kRedAdd, kWaitSignal, kQuiet };

const char* opName(OpKind kind) {
  switch (kind) {
    case OpKind::kPut: return "put";
    case OpKind::kPutWithSignal: return "putWithSignal";
    case OpKind::kSignal: return "signal";
    case OpKind::kRedAdd: return "redAdd";
    case OpKind::kWaitSignal: return "waitSignal";
    case OpKind::kQuiet: return "synchronize";
  }
  return "?";
}

// The knobs a stream's ops use (te4j/tuning.h), read when the stream is created and again only
// after a tuning::apply (one counter compared per enqueue, instead of a load per knob).
struct HostKnobs {
  unsigned generation = 0;
  int copy_mode = tuning::kHostMemmove;  // hostcopy
  int copy_threads = 1;                  // hostthreads
  uint32_t spin_ns = 0;                  // hostspin

  static HostKnobs now() {
    HostKnobs k;
    k.generation = tuning::generation();
    k.copy_mode = tuning::get(tuning::kHostCopy);
    k.copy_threads = tuning::hostThreads();
    k.spin_ns = static_cast<uint32_t>(tuning::hostSpinNs());
    return k;
  }
};

// One queued operation; the CommCtx is copied at enqueue time, as a kernel parameter would be.
// Aligned to cache lines: a producer filling one slot does not share a line with the slot the
// executor is reading. The producer adds the route (the context's, read once) and the knobs.
// Packed into three cache lines: every op is copied into the ring, and back-to-back ops are
// bound by those copies.
struct alignas(64) HostOp {
  OpKind kind;
  uint8_t route;         // McRankRoute to dst_rank (enqueue sets it; waits and quiets: Unknown)
  uint8_t copy_mode;     // knob hostcopy at enqueue
  uint8_t copy_threads;  // knob hostthreads at enqueue
  uint32_t spin_ns;      // knob hostspin at enqueue
  CommCtx ctx;
  int dst_rank;
  uint32_t value;
  void* recv_ptr;
  const void* send_ptr;
  std::size_t nbytes;
  uint32_t* sig_ptr;
  int64_t timeout_ns;

  static HostOp make(OpKind kind, const CommCtx& ctx, int dst_rank, void* recv_ptr,
                     const void* send_ptr, std::size_t nbytes, uint32_t* sig_ptr, uint32_t value,
                     int64_t timeout_ns) {
    HostOp op;
    op.kind = kind;
    op.route = mooncake::device::kMcRankRouteUnknown;
    op.copy_mode = tuning::kHostMemmove;
    op.copy_threads = 1;
    op.spin_ns = 0;
    op.ctx = ctx;
    op.dst_rank = dst_rank;
    op.value = value;
    op.recv_ptr = recv_ptr;
    op.send_ptr = send_ptr;
    op.nbytes = nbytes;
    op.sig_ptr = sig_ptr;
    op.timeout_ns = timeout_ns;
    return op;
  }
};
static_assert(sizeof(HostOp) == 192, "an op fills three cache lines");

std::string hexAddress(const void* p) {
  char buf[32];
  snprintf(buf, sizeof(buf), "%p", p);
  return buf;
}

// FUTEX_WAIT on *word while it holds `expected`, for at most timeout_ns (relative). `shared`:
// the word may be mapped by other processes (a signal word); otherwise it is this process's and
// the private futex skips the shared-key lookup. Returns on a wake, a change, a signal or the
// timeout alike: callers re-check their condition.
void futexWait(const void* word, uint32_t expected, int64_t timeout_ns, bool shared) {
  struct timespec ts;
  ts.tv_sec = static_cast<time_t>(timeout_ns / 1000000000);
  ts.tv_nsec = static_cast<long>(timeout_ns % 1000000000);
  ::syscall(SYS_futex, word, shared ? FUTEX_WAIT : FUTEX_WAIT_PRIVATE, expected, &ts, nullptr, 0);
}

void futexWakeAll(const void* word, bool shared) {
  ::syscall(SYS_futex, word, shared ? FUTEX_WAKE : FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr,
            0);
}

uint32_t* asWord(std::atomic<uint32_t>* a) { return reinterpret_cast<uint32_t*>(a); }

// Members written by one side and read by the other live on cache lines of their own.
struct alignas(64) PaddedU64 {
  std::atomic<uint64_t> v{0};
};
struct alignas(64) PaddedU32 {
  std::atomic<uint32_t> v{0};
};

class HostOpStream final : public OpStream {
 public:
  HostOpStream() {
    wake_at_.v.store(UINT64_MAX, std::memory_order_relaxed);
    ring_.reset(new (std::nothrow) HostOp[kRingSlots]);
    if (ring_ == nullptr) {
      init_status_ = fail(kOutOfMemory, "OpStream(host): cannot allocate the op ring");
      return;
    }
    try {
      executor_ = std::thread(&HostOpStream::run, this);
    } catch (const std::system_error& e) {
      init_status_ = fail(kSystemError, std::string("OpStream(host): cannot start the executor "
                                                    "thread: ") +
                                            e.what());
    }
  }

  ~HostOpStream() override {
    stop_.store(true, std::memory_order_seq_cst);
    ringDoorbell();
    // The executor abandons queued ops and any wait in progress (waits poll stop_ at least every
    // kMaxParkNs), so the join is bounded by one memcpy.
    if (executor_.joinable()) executor_.join();
    // Requests still in flight read their sources and write the peers' windows: the stream's
    // memory may be freed after this returns, so they complete first (bounded by the contexts'
    // device timeouts).
    std::string ignored;
    (void)quietPosted(&ignored);
  }

  int platform() const override { return kPlatformHost; }
  void* nativeHandle() const override { return nullptr; }

  int put(const CommCtx* ctx, int dst_rank, void* recv_ptr, const void* send_ptr,
          std::size_t nbytes, int blocks, int threads) override {
    (void)blocks;
    (void)threads;
    int rc = checkPut("put", ctx, dst_rank, recv_ptr, send_ptr, nbytes);
    if (rc != kOk) return rc;
    HostOp op =
        HostOp::make(OpKind::kPut, *ctx, dst_rank, recv_ptr, send_ptr, nbytes, nullptr, 0, 0);
    return enqueue(op);
  }

  int putWithSignal(const CommCtx* ctx, int dst_rank, void* recv_ptr, const void* send_ptr,
                    std::size_t nbytes, uint32_t* sig_ptr, uint32_t value, int blocks,
                    int threads) override {
    (void)blocks;
    (void)threads;
    int rc = checkPut("putWithSignal", ctx, dst_rank, recv_ptr, send_ptr, nbytes);
    if (rc == kOk) rc = checkWord("putWithSignal", sig_ptr);
    if (rc != kOk) return rc;
    HostOp op = HostOp::make(OpKind::kPutWithSignal, *ctx, dst_rank, recv_ptr, send_ptr, nbytes,
                             sig_ptr, value, 0);
    return enqueue(op);
  }

  int signal(const CommCtx* ctx, int dst_rank, uint32_t* sig_ptr, uint32_t value) override {
    return enqueueAdd(OpKind::kSignal, ctx, dst_rank, sig_ptr, value);
  }

  int redAdd(const CommCtx* ctx, int dst_rank, uint32_t* ptr, uint32_t value) override {
    return enqueueAdd(OpKind::kRedAdd, ctx, dst_rank, ptr, value);
  }

  int waitSignal(uint32_t* sig_ptr, uint32_t expected, int64_t timeout_ns) override {
    int rc = checkWord("waitSignal", sig_ptr);
    if (rc != kOk) return rc;
    if (timeout_ns < 0) return fail(kInvalidArgument, "waitSignal: timeout_ns < 0");
    HostOp op = HostOp::make(OpKind::kWaitSignal, CommCtx(), 0, nullptr, nullptr, 0, sig_ptr,
                             expected, std::min(timeout_ns, kMaxWaitNs));
    return enqueue(op);
  }

  int synchronize(int64_t timeout_ns) override {
    if (timeout_ns < 0) return fail(kInvalidArgument, "synchronize: timeout_ns < 0");
    // Completions of posted RDMA requests are waited for on the executor, in stream order.
    HostOp quiet = HostOp::make(OpKind::kQuiet, CommCtx(), 0, nullptr, nullptr, 0, nullptr, 0, 0);
    const int queued = enqueue(quiet);
    if (queued != kOk) return queued;
    using mooncake::device::mc_globaltimer_ns;
    using mooncake::device::mc_pause;
    const uint64_t target = submitted_.v.load(std::memory_order_acquire);
    if (completed_.v.load(std::memory_order_acquire) < target) {
      const uint64_t start = mc_globaltimer_ns();
      const uint64_t deadline = start + static_cast<uint64_t>(std::min(timeout_ns, kMaxWaitNs));
      const uint64_t spin_end = std::min(deadline, start + kHandOffSpinNs);
      for (uint32_t polls = 1; completed_.v.load(std::memory_order_acquire) < target; ++polls) {
        if ((polls & 63u) == 0 && mc_globaltimer_ns() >= spin_end) break;
        mc_pause();
      }
      while (completed_.v.load(std::memory_order_acquire) < target) {
        const uint64_t now = mc_globaltimer_ns();
        if (now >= deadline) {
          return fail(
              kTimeout,
              "synchronize timed out after " + std::to_string(timeout_ns / 1000000) +
                  " ms: " + std::to_string(target - completed_.v.load(std::memory_order_acquire)) +
                  " operation(s) still pending on the host stream");
        }
        parkUntilCompleted(target,
                           std::min<int64_t>(static_cast<int64_t>(deadline - now), kIdleParkNs));
      }
    }
    if (error_pending_.load(std::memory_order_acquire)) {
      std::lock_guard<std::mutex> lock(error_mu_);
      if (error_status_ != kOk) {
        std::string message = error_message_;
        if (skipped_ > 0) {
          message += " (" + std::to_string(skipped_) + " later operation(s) skipped)";
        }
        const int status = error_status_;
        error_status_ = kOk;
        error_message_.clear();
        skipped_ = 0;
        error_pending_.store(false, std::memory_order_release);
        return fail(status, message);
      }
    }
    return ok();
  }

  int beginCapture() override { return captureUnavailable("beginCapture"); }
  int endCapture(void** graph_exec) override {
    if (graph_exec != nullptr) *graph_exec = nullptr;
    return captureUnavailable("endCapture");
  }
  int launchGraph(void*) override { return captureUnavailable("launchGraph"); }
  int destroyGraph(void*) override { return captureUnavailable("destroyGraph"); }

 private:
  int captureUnavailable(const char* what) {
    return fail(kUnavailable, std::string(what) + ": graph capture is CUDA only (host platform)");
  }

  int checkPut(const char* what, const CommCtx* ctx, int dst_rank, void* recv_ptr,
               const void* send_ptr, std::size_t nbytes) {
    if (ctx == nullptr) return fail(kInvalidArgument, std::string(what) + ": ctx is null");
    if (dst_rank < 0) return fail(kInvalidArgument, std::string(what) + ": dst_rank < 0");
    if (nbytes > 0 && (recv_ptr == nullptr || send_ptr == nullptr)) {
      return fail(kInvalidArgument, std::string(what) + ": null buffer with nbytes > 0");
    }
    return kOk;
  }

  int checkWord(const char* what, const uint32_t* word) {
    if (word == nullptr) return fail(kInvalidArgument, std::string(what) + ": word is null");
    if (reinterpret_cast<uintptr_t>(word) % 4 != 0) {
      return fail(kInvalidArgument,
                  std::string(what) + ": word " + hexAddress(word) + " is not 4-byte aligned");
    }
    return kOk;
  }

  int enqueueAdd(OpKind kind, const CommCtx* ctx, int dst_rank, uint32_t* ptr, uint32_t value) {
    if (ctx == nullptr) return fail(kInvalidArgument, std::string(opName(kind)) + ": ctx is null");
    if (dst_rank < 0) return fail(kInvalidArgument, std::string(opName(kind)) + ": dst_rank < 0");
    int rc = checkWord(opName(kind), ptr);
    if (rc != kOk) return rc;
    HostOp op = HostOp::make(kind, *ctx, dst_rank, nullptr, nullptr, 0, ptr, value, 0);
    return enqueue(op);
  }

  // Producers: the ring while it has room and nothing waits in the overflow list (so the
  // executor, which empties the ring before it takes from the list, keeps submission order).
  // Takes op by reference (the caller's, completed here): a by-value op would be copied once
  // more on every enqueue, which back-to-back ops measurably pay for.
  int enqueue(HostOp& op) {
    if (init_status_ != kOk) {
      return fail(init_status_, "OpStream(host) is not usable: the executor thread did not start");
    }
    // The route to the rank, once: the one the context decided when it was connected (a context
    // built the upstream way derives it from its tables, host memory on this platform).
    if (op.kind != OpKind::kWaitSignal && op.kind != OpKind::kQuiet) {
      op.route = static_cast<uint8_t>(mooncake::device::mc_rank_route(op.ctx, op.dst_rank));
    }
    {
      std::lock_guard<std::mutex> lock(produce_mu_);
      if (tuning::generation() != knobs_.generation) knobs_ = HostKnobs::now();
      op.copy_mode = static_cast<uint8_t>(knobs_.copy_mode);
      op.copy_threads = static_cast<uint8_t>(knobs_.copy_threads);
      op.spin_ns = knobs_.spin_ns;
      if (runInlineWhenIdle(op)) return ok();
      const uint64_t t = tail_.v.load(std::memory_order_relaxed);
      // The executor's position is read again only when the ring looks full: reading it per op
      // would pull its cache line over on every enqueue.
      if (t - head_seen_ >= kRingSlots) head_seen_ = head_.v.load(std::memory_order_acquire);
      if (overflow_.empty() && t - head_seen_ < kRingSlots) {
        ring_[t & (kRingSlots - 1)] = op;
        tail_.v.store(t + 1, std::memory_order_release);
      } else {
        try {
          overflow_.push_back(op);
        } catch (const std::bad_alloc&) {
          return fail(kOutOfMemory, std::string(opName(op.kind)) + ": cannot queue the operation");
        }
        overflow_size_.store(overflow_.size(), std::memory_order_release);
      }
      submitted_.v.store(submitted_.v.load(std::memory_order_relaxed) + 1,
                         std::memory_order_release);
    }
    // Pairs with the executor's store of parked_ and its re-check of the ring: either it sees
    // the op, or this load sees it parked and wakes it.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    // The first producer after a park takes the flag and makes the one system call; the ones
    // that follow while the executor is still waking up see 0 and make none.
    if (parked_.v.load(std::memory_order_relaxed) != 0 &&
        parked_.v.exchange(0, std::memory_order_seq_cst) != 0) {
      ringDoorbell();
    }
    return ok();
  }

  // Producers, under produce_mu_: runs op on the calling thread when that cannot be told apart
  // from running it on the executor, and returns whether it did. That is when every op enqueued
  // before it has completed (so none is queued or running: stream order holds, and the executor
  // touches none of the state the op uses until a later op is published to it through tail_),
  // no RDMA request is in flight (nothing to quiet first), and the op is short: a load/store
  // put of at most kInlineMaxBytes, a signal or add, a quiet with nothing posted (a no-op), or a
  // wait whose word has already reached its value. Such an op costs the copy and no hand-off:
  // no slot and tail written for the executor to pull over, no executor wake-up.
  bool runInlineWhenIdle(const HostOp& op) {
    using namespace mooncake::device;
    if (!overflow_.empty()) return false;
    // Acquire: the completed ops' effects, error records and posted_pending_ are visible here.
    if (completed_.v.load(std::memory_order_acquire) !=
        submitted_.v.load(std::memory_order_relaxed)) {
      return false;
    }
    if (posted_pending_.load(std::memory_order_relaxed)) return false;
    switch (op.kind) {
      case OpKind::kPut:
      case OpKind::kPutWithSignal:
        if (op.nbytes > kInlineMaxBytes) return false;
        [[fallthrough]];
      case OpKind::kSignal:
      case OpKind::kRedAdd:
        if (op.route == mooncake::device::kMcRankRouteRdma) return false;
        break;
      case OpKind::kQuiet: return true;  // nothing posted, nothing queued: nothing to wait for
      case OpKind::kWaitSignal:
        // Only an already satisfied wait: one that would block must not block the caller.
        if (!mc_signal_reached(mc_ld_acquire_u32(op.sig_ptr), op.value)) return false;
        break;
    }
    // A waitSignal that got here is satisfied; execute() would see the same at once, but
    // error_pending_ decides whether it counts as skipped, exactly as on the executor.
    recordOutcome(op, op.kind == OpKind::kWaitSignal ? nullptr : &op);
    return true;
  }

  void ringDoorbell() {
    doorbell_.v.fetch_add(1, std::memory_order_seq_cst);
    futexWakeAll(asWord(&doorbell_.v), false);
  }

  // The executor's ring is empty: move what the overflow list holds into it, in order. Takes
  // the producers' lock, which is why ops go to the list only when the ring is full.
  bool refillFromOverflow() {
    if (overflow_size_.load(std::memory_order_acquire) == 0) return false;
    std::lock_guard<std::mutex> lock(produce_mu_);
    uint64_t t = tail_.v.load(std::memory_order_relaxed);
    // Under the lock the ring's contents are stable; ops a producer put there before the list
    // filled must run first.
    if (t != head_.v.load(std::memory_order_relaxed)) return true;
    uint64_t moved = 0;
    while (!overflow_.empty() && moved < kRingSlots) {
      ring_[t & (kRingSlots - 1)] = overflow_.front();
      overflow_.pop_front();
      ++t;
      ++moved;
    }
    overflow_size_.store(overflow_.size(), std::memory_order_release);
    tail_.v.store(t, std::memory_order_release);
    return moved > 0;
  }

  // The executor: runs every queued op, polls an empty ring for the bounded spin, then parks.
  void run() {
    uint64_t head = head_.v.load(std::memory_order_relaxed);
    for (;;) {
      if (stop_.load(std::memory_order_acquire)) return;
      const uint64_t tail = tail_.v.load(std::memory_order_acquire);
      if (head != tail) {
        while (head != tail) {
          runOne(ring_[head & (kRingSlots - 1)]);
          if (stop_.load(std::memory_order_acquire)) return;
          ++head;
          // The slot is free for producers once the op has run (it is read in place).
          head_.v.store(head, std::memory_order_release);
        }
        continue;
      }
      if (refillFromOverflow()) continue;
      if (idleSpin(head)) continue;
      // Park: announce it, then look again, so that a producer that missed the announcement has
      // published its op before the re-check (the fence pairs with enqueue's).
      const uint32_t ticket = doorbell_.v.load(std::memory_order_seq_cst);
      parked_.v.store(1, std::memory_order_seq_cst);
      std::atomic_thread_fence(std::memory_order_seq_cst);
      if (tail_.v.load(std::memory_order_acquire) == head &&
          overflow_size_.load(std::memory_order_acquire) == 0 &&
          !stop_.load(std::memory_order_acquire)) {
        futexWait(asWord(&doorbell_.v), ticket, kIdleParkNs, false);
      }
      parked_.v.store(0, std::memory_order_seq_cst);
    }
  }

  // True when work (or stop) showed up within the idle spin.
  bool idleSpin(uint64_t head) {
    using mooncake::device::mc_globaltimer_ns;
    using mooncake::device::mc_pause;
    const uint64_t end = mc_globaltimer_ns() + kHandOffSpinNs;
    for (uint32_t polls = 1;; ++polls) {
      if (tail_.v.load(std::memory_order_acquire) != head ||
          overflow_size_.load(std::memory_order_acquire) != 0 ||
          stop_.load(std::memory_order_relaxed)) {
        return true;
      }
      if ((polls & 63u) == 0 && mc_globaltimer_ns() >= end) return false;
      mc_pause();
    }
  }

  // Runs *to_execute (nullptr: op needs no work, such as a wait already satisfied) unless an
  // error is pending, and records a failure or the skip. Executor, or a producer running an op
  // inline (runInlineWhenIdle).
  void recordOutcome(const HostOp& op, const HostOp* to_execute) {
    // A quiet always runs: it retires what was posted before the error, so no later quiet finds
    // those requests still pending.
    const bool skip = error_pending_.load(std::memory_order_acquire) && op.kind != OpKind::kQuiet;
    std::string message;
    const int status = skip || to_execute == nullptr ? kOk : execute(*to_execute, &message);
    if (skip || status != kOk) {
      std::lock_guard<std::mutex> lock(error_mu_);
      if (skip) {
        ++skipped_;
      } else if (error_status_ == kOk) {
        error_status_ = status;
        error_message_ = message;
        error_pending_.store(true, std::memory_order_release);
      }
    }
  }

  void runOne(const HostOp& op) {
    recordOutcome(op, &op);
    // Published by the completed_ store below, for producers deciding whether to run inline.
    const bool posted = !posted_.empty();
    if (posted_pending_.load(std::memory_order_relaxed) != posted) {
      posted_pending_.store(posted, std::memory_order_relaxed);
    }
    // Release: the op's effects and any error recorded above are visible to a synchronize that
    // sees the count.
    const uint64_t done = completed_.v.load(std::memory_order_relaxed) + 1;
    completed_.v.store(done, std::memory_order_seq_cst);
    // Wake synchronize only when the earliest parked waiter's target is reached: a wake per op
    // would cost the executor a system call per op while the caller sleeps.
    if (done >= wake_at_.v.load(std::memory_order_seq_cst)) {
      wake_at_.v.store(UINT64_MAX, std::memory_order_relaxed);
      done_seq_.v.fetch_add(1, std::memory_order_seq_cst);
      futexWakeAll(asWord(&done_seq_.v), false);
    }
  }

  // synchronize's park: lowers wake_at_ to its target, re-checks, then sleeps on done_seq_.
  void parkUntilCompleted(uint64_t target, int64_t timeout_ns) {
    const uint32_t ticket = done_seq_.v.load(std::memory_order_seq_cst);
    uint64_t cur = wake_at_.v.load(std::memory_order_relaxed);
    while (target < cur &&
           !wake_at_.v.compare_exchange_weak(cur, target, std::memory_order_seq_cst)) {
    }
    // Pairs with runOne's store of completed_ and load of wake_at_: either the executor sees
    // our target, or we see its count here.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (completed_.v.load(std::memory_order_seq_cst) >= target) return;
    futexWait(asWord(&done_seq_.v), ticket, timeout_ns, false);
  }

  // After an add that reached dst_rank's word through a load/store route: wake whoever parked
  // on that word (in any process). RDMA-routed adds are delivered by the NIC, which cannot.
  void wakeWaiters(const HostOp& op) {
    using namespace mooncake::device;
    if (mc_rdma_owns_atomics(op.ctx.ibgda, op.dst_rank)) return;
    void* word = mc_route_put(op.ctx, op.dst_rank, op.sig_ptr);
    if (word == nullptr) return;
    HostSegmentControl* control = hostSegmentControl(word, &control_cache_);
    if (control == nullptr) return;
    // The add above happened before this load (seq_cst fence): a waiter that counted itself
    // after it re-reads the word and sees the add, so a zero here means nobody needs the call.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (__atomic_load_n(&control->waiters, __ATOMIC_RELAXED) != 0) futexWakeAll(word, true);
  }

  int execute(const HostOp& op, std::string* message) {
    using namespace mooncake::device;
    if (op.kind == OpKind::kQuiet) return quietPosted(message);
    if (op.kind == OpKind::kWaitSignal) {
      const int rc = waitFor(op, message);
      // A wait that ran out may have waited for data an earlier failed request never delivered:
      // that request's error CQE is the cause to report.
      if (rc == kTimeout && !posted_.empty()) {
        std::string cause;
        if (quietPosted(&cause) != kOk) {
          *message = cause + " (then: " + *message + ")";
          return kRemoteError;
        }
      }
      return rc;
    }
    const bool rdma = op.route == kMcRankRouteRdma;
    // Stream order: what this op makes visible must not overtake earlier requests still in
    // flight, unless both go through the same QP (executed in order by the responder).
    if (!posted_.empty() && !(rdma && samePostedQp(op))) {
      const int rc = quietPosted(message);
      if (rc != kOk) return rc;
    }
    if (rdma) return executeRdma(op, message);
    switch (op.kind) {
      case OpKind::kPut:
      case OpKind::kPutWithSignal: {
        if (op.nbytes > 0) {
          void* dst = mc_route_put(op.ctx, op.dst_rank, op.recv_ptr);
          // RDMA routes were taken in execute(): here no route reaches dst at all.
          if (dst == nullptr) {
            return noRoute(op, mc_rdma_available(op.ctx.ibgda) ? kMcRdmaUnsupported : kMcNoRoute,
                           message);
          }
          // memmove by default: a put to the own rank may overlap its source (hostPutCopy
          // keeps memmove for overlaps; the knob hostcopy picks memcpy / non-temporal).
          hostPutCopy(dst, op.send_ptr, op.nbytes, op.copy_mode, op.copy_threads);
        }
        if (op.kind == OpKind::kPut) return kOk;
        // The release add orders the copy above before the signal, for any acquiring reader.
        const int rc = mc_signal(op.ctx, op.dst_rank, 0, 1, op.sig_ptr, op.value);
        if (rc != kMcRouteOk) return noRoute(op, rc, message);
        wakeWaiters(op);
        return kOk;
      }
      case OpKind::kSignal: {
        const int rc = mc_signal(op.ctx, op.dst_rank, 0, 1, op.sig_ptr, op.value);
        if (rc != kMcRouteOk) return noRoute(op, rc, message);
        wakeWaiters(op);
        return kOk;
      }
      case OpKind::kRedAdd: {
        const int rc = mc_red_add(op.ctx, op.dst_rank, 0, 1, op.sig_ptr, op.value);
        if (rc != kMcRouteOk) return noRoute(op, rc, message);
        wakeWaiters(op);
        return kOk;
      }
      case OpKind::kWaitSignal:
      case OpKind::kQuiet: break;
    }
    return kOk;
  }

  // put / signal / redAdd over RDMA: posted (WRITE, then the add on the same QP), not waited
  // for; quietPosted() consumes the completions. A post fails at once when the QP is already in
  // the error state, or when the ring stays full past the context's timeout.
  int executeRdma(const HostOp& op, std::string* message) {
    using namespace mooncake::device;
    const bool has_put =
        (op.kind == OpKind::kPut || op.kind == OpKind::kPutWithSignal) && op.nbytes > 0;
    const bool has_add = op.kind != OpKind::kPut;
    int rc = kMcRdmaOk;
    if (has_put)
      rc = mc_rdma_put(op.ctx.ibgda, 0, op.dst_rank, 1, op.send_ptr, op.recv_ptr, op.nbytes, 0);
    if (rc == kMcRdmaOk && has_add)
      rc = mc_rdma_atomic_add(op.ctx.ibgda, 0, op.dst_rank, 1, op.sig_ptr, op.value);
    if (posted_.empty() || !samePostedQp(op))
      posted_.push_back({op.ctx.ibgda, op.dst_rank, op.kind});
    else
      posted_.back().last = op.kind;
    // A software NIC's idle progress thread takes the doorbell now, not at its next timed scan.
    te4j::rdma::softNicDoorbellHint();
    if (rc == kMcRdmaOk) return kOk;
    // The quiet retires what did get posted and reads the QP's first error record.
    std::string ignored;
    (void)quietPosted(&ignored);
    uint32_t err_first = 0;
    if (rc == kMcRdmaQpError) {
      IbgdaQp* qp = mc_rdma_qp(op.ctx.ibgda, 0, op.dst_rank, 1);
      err_first = qp != nullptr ? mc_ld_acquire_u32(&qp->err_first) : 0u;
    }
    return rdmaFailure(op.kind, op.dst_rank, rc, err_first, message);
  }

  // Waits for the completion of every request posted since the last quiet; the first failure
  // (error CQE, timeout) is returned with its message. Every posted QP is waited for, also after
  // a failure, so none is left with requests the next quiet would wrongly attribute.
  int quietPosted(std::string* message) {
    using namespace mooncake::device;
    int first = kOk;
    for (const Posted& p : posted_) {
      const int rc = mc_rdma_quiet(p.ibgda, 0, p.dst_rank, 1);
      if (rc == kMcRdmaOk || first != kOk) continue;
      uint32_t err_first = 0;
      if (rc == kMcRdmaQpError) {
        IbgdaQp* qp = mc_rdma_qp(p.ibgda, 0, p.dst_rank, 1);
        err_first = qp != nullptr ? mc_ld_acquire_u32(&qp->err_first) : 0u;
      }
      first = rdmaFailure(p.last, p.dst_rank, rc, err_first, message);
    }
    posted_.clear();
    return first;
  }

  int rdmaFailure(OpKind kind, int dst_rank, int rc, uint32_t err_first, std::string* message) {
    using namespace mooncake::device;
    *message = std::string(opName(kind)) + " to rank " + std::to_string(dst_rank) +
               " over RDMA: " + mc_route_status_text(rc);
    if (rc == kMcRdmaQpError) {
      char buf[200];
      snprintf(buf, sizeof(buf), ": error CQE syndrome 0x%02x (%s), vendor syndrome 0x%02x",
               err_first & 0xffu, mc_rdma_syndrome_text(err_first & 0xffu),
               (err_first >> 8) & 0xffu);
      *message += std::string(buf) +
                  "; the QP stays in the error state until "
                  "recreateQueuePairs + reconnect at both ends";
      return kRemoteError;
    }
    if (rc == kMcRdmaTimeout) return kTimeout;
    if (rc == kMcRdmaFatal) return kRemoteError;
    return kDeviceFault;
  }

  // Whether op goes through the QP of the latest posted requests (same context table, rank).
  bool samePostedQp(const HostOp& op) const {
    return !posted_.empty() && posted_.back().ibgda.qps == op.ctx.ibgda.qps &&
           posted_.back().dst_rank == op.dst_rank && op.route == mooncake::device::kMcRankRouteRdma;
  }

  // A signal/put that found no usable route: positive route codes are device faults, the
  // RDMA route's negative codes keep their meaning (timeout, remote error).
  int noRoute(const HostOp& op, int route_status, std::string* message) {
    using namespace mooncake::device;
    *message = std::string(opName(op.kind)) + ": no route to rank " + std::to_string(op.dst_rank) +
               " (" + mc_route_status_text(route_status) + "; status " +
               std::to_string(route_status) + ")";
    if (route_status == kMcRdmaTimeout) return kTimeout;
    if (route_status == kMcRdmaQpError || route_status == kMcRdmaFatal) return kRemoteError;
    return kDeviceFault;
  }

  // Polls *word with pause for kPauseSpinNs, then with sched_yield between polls until
  // deadline_ns: a yielding poller gives its core to any runnable thread (the one about to raise
  // the word, when threads outnumber cores) and keeps it when nobody else wants it.
  static bool spinThenYield(const uint32_t* word, uint32_t expected, uint64_t deadline_ns,
                            uint32_t* seen) {
    using namespace mooncake::device;
    const uint64_t start = mc_globaltimer_ns();
    if (mc_wait_signal(word, expected, std::min(deadline_ns, start + kPauseSpinNs), seen)) {
      return true;
    }
    for (;;) {
      const uint32_t v = mc_ld_acquire_u32(word);
      if (mc_signal_reached(v, expected)) {
        *seen = v;
        return true;
      }
      if (mc_globaltimer_ns() >= deadline_ns) {
        *seen = v;
        return false;
      }
      sched_yield();
    }
  }

  // Spin phase (pause between polls), then park phase: FUTEX_WAIT on the word itself, counted
  // in its segment's control page so that a te4j writer of any process wakes it at once; each
  // park is at most kMaxParkNs, for writers that do not wake. Both phases run under the op's
  // deadline, which starts when the op starts executing, as on CUDA.
  int waitFor(const HostOp& op, std::string* message) {
    using namespace mooncake::device;
    const uint64_t start = mc_globaltimer_ns();
    const uint64_t deadline = start + static_cast<uint64_t>(op.timeout_ns);
    uint32_t seen = 0;
    const uint64_t max_spin = op.spin_ns;
    wait_spin_ns_ = std::min(std::max(wait_spin_ns_, kMinWaitSpinNs), max_spin);
    // hostspin=0 (and auto below 4 CPUs): one look at the word, then park.
    if (spinThenYield(op.sig_ptr, op.value, std::min(deadline, start + wait_spin_ns_), &seen)) {
      wait_spin_ns_ = max_spin;
      return kOk;
    }
    HostSegmentControl* control = hostSegmentControl(op.sig_ptr, &wait_cache_);
    if (control != nullptr) __atomic_fetch_add(&control->waiters, 1u, __ATOMIC_SEQ_CST);
    int status = kTimeout;
    int64_t park_ns = control != nullptr ? kMaxParkNs : 1000;
    for (;;) {
      seen = __atomic_load_n(op.sig_ptr, __ATOMIC_SEQ_CST);
      if (mc_signal_reached(seen, op.value)) {
        status = kOk;
        break;
      }
      const uint64_t now = mc_globaltimer_ns();
      if (now >= deadline) break;
      if (stop_.load(std::memory_order_acquire)) {
        *message = "waitSignal abandoned: the stream was closed";
        status = kIllegalState;
        break;
      }
      const int64_t left = static_cast<int64_t>(deadline - now);
      // Parks on the word itself (a shared futex): a software NIC that adds to it, or a te4j
      // writer that sees a parked waiter in the segment's control page, wakes this at once;
      // other writers (plain stores, user kernels) are seen at the end of the park.
      futexWait(op.sig_ptr, seen, std::min(park_ns, left), true);
      park_ns = std::min(park_ns * 2, kMaxParkNs);
    }
    if (control != nullptr) __atomic_fetch_sub(&control->waiters, 1u, __ATOMIC_SEQ_CST);
    wait_spin_ns_ =
        status == kOk && mc_globaltimer_ns() - start <= max_spin ? max_spin : wait_spin_ns_ / 2;
    if (status != kTimeout) return status;
    seen = mc_ld_acquire_u32(op.sig_ptr);
    if (mc_signal_reached(seen, op.value)) return kOk;
    const uint64_t waited = mc_globaltimer_ns() - start;
    char buf[160];
    snprintf(buf, sizeof(buf), "waitSignal timed out after %.3f ms at %p expected>=%u seen %u",
             static_cast<double>(waited) / 1e6, static_cast<void*>(op.sig_ptr), op.value, seen);
    *message = buf;
    return kTimeout;
  }

  // Executor only: the QPs with requests posted since the last quiet, and for the error message
  // the kind of the latest op posted on each.
  struct Posted {
    mooncake::device::IbgdaContext ibgda;
    int dst_rank;
    OpKind last;
  };
  std::vector<Posted> posted_;

  // Producers' side.
  std::mutex produce_mu_;  // serializes producers; the executor takes it only to refill
  HostKnobs knobs_ = HostKnobs::now();  // the producers' snapshot, under produce_mu_
  std::deque<HostOp> overflow_;         // ops that found the ring full, in order (produce_mu_)
  std::unique_ptr<HostOp[]> ring_;      // kRingSlots slots, index & (kRingSlots - 1)
  PaddedU64 tail_;                      // next slot producers fill
  PaddedU64 submitted_;                 // ops enqueued (ring and overflow)
  std::atomic<uint64_t> overflow_size_{0};
  uint64_t head_seen_ = 0;  // the executor's head_ as producers last read it (produce_mu_)
  // Executor's side.
  PaddedU64 head_;       // next slot the executor runs
  PaddedU64 completed_;  // ops run or skipped (on the executor; inline ops are not counted)
  // RDMA requests await a quiet; the executor publishes it through its store of completed_.
  std::atomic<bool> posted_pending_{false};
  PaddedU32 parked_;    // 1 while the executor is (about to be) parked
  PaddedU32 doorbell_;  // futex word the parked executor sleeps on
  PaddedU64 wake_at_;   // smallest completed_ a parked synchronize waits for
  PaddedU32 done_seq_;  // futex word parked synchronize calls sleep on
  std::atomic<bool> stop_{false};
  HostControlCache control_cache_;      // executor only: control pages of written words
  HostControlCache wait_cache_;         // executor only: control pages of awaited words
  uint64_t wait_spin_ns_ = UINT64_MAX;  // executor only: waitSignal's current spin (adaptive)
  // Errors (rare): error_mu_ guards the three below; error_pending_ is their cheap summary.
  std::mutex error_mu_;
  std::atomic<bool> error_pending_{false};
  int error_status_ = kOk;  // first error since the last synchronize
  std::string error_message_;
  uint64_t skipped_ = 0;  // ops skipped since the pending error
  std::thread executor_;  // last: starts after every member above exists
};

}  // namespace
}  // namespace te4j

/// Host-platform factory used by OpStream::create (op_stream_factory.cpp). nullptr only when
/// memory is exhausted; otherwise check status().
te4j::OpStream* te4j_create_host_op_stream() { return new (std::nothrow) te4j::HostOpStream(); }
