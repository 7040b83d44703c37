// host_op_stream.cpp — te4j::OpStream on the host platform: one executor thread per stream.
//
// Operations run in submission order on the executor and call the same single-source device
// primitives as the CUDA kernels (mc_route_put, mc_signal, mc_red_add, mc_wait_signal), compiled
// here by g++ against host_ops.cuh: the host platform is the CPU-only twin of the CUDA one.
//
// RDMA-routed ranks: an operation is posted to the QP and counts as done once posted, so the
// executor keeps posting while earlier requests are on the wire (up to the ring depth, where
// the post waits for a slot). Their completions are consumed by a quiet, which runs before any
// operation that could make an effect visible elsewhere than that QP's destination (a local or
// P2P put/add, an RDMA op to another rank), and at synchronize(). A signal after a put to the
// same rank needs no quiet: one QP executes its requests in order at the responder. A failed
// request surfaces as the error of the quiet that finds its error CQE.
//
// Errors: the first failing operation (a waitSignal past its deadline, a rank with no route)
// records status + message; later operations are skipped (counted) until synchronize() returns
// that error, after which the stream runs operations again.
#include <stdio.h>
#include <string.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <new>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "te4j/api.h"
#include "rdma/soft/doorbell_hint.h"
#include "transport/device/comm_device.cuh"
#include "transport/device/ibgda/syndrome_text.cuh"

using mooncake::device::CommCtx;

namespace te4j {
void hostPutCopy(void* dst, const void* src, std::size_t n);  // host_copy.cpp (te4j/tuning.h)

namespace {

// Longest wait we compute a deadline for (~31 years): keeps now + timeout inside int64.
constexpr int64_t kMaxWaitNs = 1000000000000000000LL;
// waitSignal polls flat out this long before it starts sleeping between polls.
constexpr uint64_t kSpinPhaseNs = 20000;
// Sleep between polls grows from 1 us up to this cap (bounds the added wake-up latency).
constexpr int64_t kMaxParkNs = 100000;

enum class OpKind { kPut, kPutWithSignal, kSignal, kRedAdd, kWaitSignal, kQuiet };

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

// One queued operation; the CommCtx is copied at enqueue time, as a kernel parameter would be.
struct HostOp {
  OpKind kind;
  CommCtx ctx;
  int dst_rank;
  void* recv_ptr;
  const void* send_ptr;
  std::size_t nbytes;
  uint32_t* sig_ptr;
  uint32_t value;
  int64_t timeout_ns;
};

std::string hexAddress(const void* p) {
  char buf[32];
  snprintf(buf, sizeof(buf), "%p", p);
  return buf;
}

class HostOpStream final : public OpStream {
 public:
  HostOpStream() {
    try {
      executor_ = std::thread(&HostOpStream::run, this);
    } catch (const std::system_error& e) {
      init_status_ = fail(kSystemError, std::string("OpStream(host): cannot start the executor "
                                                    "thread: ") + e.what());
    }
  }

  ~HostOpStream() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    work_cv_.notify_all();
    // The executor abandons queued ops and any wait in progress (waits poll stop_), so the join
    // is bounded by one memcpy.
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
    return enqueue({OpKind::kPut, *ctx, dst_rank, recv_ptr, send_ptr, nbytes, nullptr, 0, 0});
  }

  int putWithSignal(const CommCtx* ctx, int dst_rank, void* recv_ptr, const void* send_ptr,
                    std::size_t nbytes, uint32_t* sig_ptr, uint32_t value, int blocks,
                    int threads) override {
    (void)blocks;
    (void)threads;
    int rc = checkPut("putWithSignal", ctx, dst_rank, recv_ptr, send_ptr, nbytes);
    if (rc == kOk) rc = checkWord("putWithSignal", sig_ptr);
    if (rc != kOk) return rc;
    return enqueue({OpKind::kPutWithSignal, *ctx, dst_rank, recv_ptr, send_ptr, nbytes, sig_ptr,
                    value, 0});
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
    HostOp op{OpKind::kWaitSignal, CommCtx{}, 0, nullptr, nullptr, 0, sig_ptr, expected,
              std::min(timeout_ns, kMaxWaitNs)};
    return enqueue(op);
  }

  int synchronize(int64_t timeout_ns) override {
    if (timeout_ns < 0) return fail(kInvalidArgument, "synchronize: timeout_ns < 0");
    // Completions of posted RDMA requests are waited for on the executor, in stream order.
    const int queued = enqueue({OpKind::kQuiet, CommCtx{}, 0, nullptr, nullptr, 0, nullptr, 0, 0});
    if (queued != kOk) return queued;
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::nanoseconds(std::min(timeout_ns, kMaxWaitNs));
    std::unique_lock<std::mutex> lock(mu_);
    const uint64_t target = submitted_;
    while (completed_ < target) {
      wake_at_ = std::min(wake_at_, target);
      if (done_cv_.wait_until(lock, deadline) == std::cv_status::timeout && completed_ < target) {
        return fail(kTimeout, "synchronize timed out after " +
                                  std::to_string(timeout_ns / 1000000) + " ms: " +
                                  std::to_string(target - completed_) +
                                  " operation(s) still pending on the host stream");
      }
    }
    if (error_status_ != kOk) {
      std::string message = error_message_;
      if (skipped_ > 0) {
        message += " (" + std::to_string(skipped_) + " later operation(s) skipped)";
      }
      const int status = error_status_;
      error_status_ = kOk;
      error_message_.clear();
      skipped_ = 0;
      return fail(status, message);
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
      return fail(kInvalidArgument, std::string(what) + ": word " + hexAddress(word) +
                                        " is not 4-byte aligned");
    }
    return kOk;
  }

  int enqueueAdd(OpKind kind, const CommCtx* ctx, int dst_rank, uint32_t* ptr, uint32_t value) {
    if (ctx == nullptr) return fail(kInvalidArgument, std::string(opName(kind)) + ": ctx is null");
    if (dst_rank < 0) return fail(kInvalidArgument, std::string(opName(kind)) + ": dst_rank < 0");
    int rc = checkWord(opName(kind), ptr);
    if (rc != kOk) return rc;
    return enqueue({kind, *ctx, dst_rank, nullptr, nullptr, 0, ptr, value, 0});
  }

  int enqueue(const HostOp& op) {
    if (init_status_ != kOk) {
      return fail(init_status_, "OpStream(host) is not usable: the executor thread did not start");
    }
    try {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(op);
      ++submitted_;
    } catch (const std::bad_alloc&) {
      return fail(kOutOfMemory, std::string(opName(op.kind)) + ": cannot queue the operation");
    }
    work_cv_.notify_one();
    return ok();
  }

  // The executor: waits for work (a condition variable, not a spin), runs ops in order.
  void run() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      work_cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      const HostOp op = queue_.front();
      queue_.pop_front();
      // A quiet always runs: it retires what was posted before the error, so no later quiet
      // finds those requests still pending.
      const bool skip = error_status_ != kOk && op.kind != OpKind::kQuiet;
      if (skip) ++skipped_;
      lock.unlock();
      std::string message;
      const int status = skip ? kOk : execute(op, &message);
      lock.lock();
      if (status != kOk && error_status_ == kOk) {
        error_status_ = status;
        error_message_ = message;
      }
      ++completed_;
      // Wake synchronize only when the earliest waiter's target is reached: a wake per op cost
      // the executor a futex call and a mutex hand-off per op while the caller slept.
      if (completed_ >= wake_at_) {
        wake_at_ = UINT64_MAX;
        done_cv_.notify_all();
      }
    }
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
    const bool rdma = rdmaRoute(op.ctx, op.dst_rank);
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
          hostPutCopy(dst, op.send_ptr, op.nbytes);
        }
        if (op.kind == OpKind::kPut) return kOk;
        // The release add orders the copy above before the signal, for any acquiring reader.
        const int rc = mc_signal(op.ctx, op.dst_rank, 0, 1, op.sig_ptr, op.value);
        return rc == kMcRouteOk ? kOk : noRoute(op, rc, message);
      }
      case OpKind::kSignal: {
        const int rc = mc_signal(op.ctx, op.dst_rank, 0, 1, op.sig_ptr, op.value);
        return rc == kMcRouteOk ? kOk : noRoute(op, rc, message);
      }
      case OpKind::kRedAdd: {
        const int rc = mc_red_add(op.ctx, op.dst_rank, 0, 1, op.sig_ptr, op.value);
        return rc == kMcRouteOk ? kOk : noRoute(op, rc, message);
      }
      case OpKind::kWaitSignal:
      case OpKind::kQuiet:
        break;
    }
    return kOk;
  }

  // Only RDMA reaches dst_rank: not the own rank, P2P entry 0, and an RDMA context present.
  static bool rdmaRoute(const CommCtx& ctx, int dst_rank) {
    using namespace mooncake::device;
    return dst_rank != ctx.rank && !mc_p2p_available(ctx.p2p, dst_rank) &&
           mc_rdma_available(ctx.ibgda);
  }

  // put / signal / redAdd over RDMA: posted (WRITE, then the add on the same QP), not waited
  // for; quietPosted() consumes the completions. A post fails at once when the QP is already in
  // the error state, or when the ring stays full past the context's timeout.
  int executeRdma(const HostOp& op, std::string* message) {
    using namespace mooncake::device;
    const bool has_put = (op.kind == OpKind::kPut || op.kind == OpKind::kPutWithSignal) && op.nbytes > 0;
    const bool has_add = op.kind != OpKind::kPut;
    int rc = kMcRdmaOk;
    if (has_put) rc = mc_rdma_put(op.ctx.ibgda, 0, op.dst_rank, 1, op.send_ptr, op.recv_ptr, op.nbytes, 0);
    if (rc == kMcRdmaOk && has_add) rc = mc_rdma_atomic_add(op.ctx.ibgda, 0, op.dst_rank, 1, op.sig_ptr, op.value);
    if (posted_.empty() || !samePostedQp(op)) posted_.push_back({op.ctx.ibgda, op.dst_rank, op.kind});
    else posted_.back().last = op.kind;
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
      *message += std::string(buf) + "; the QP stays in the error state until "
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
           posted_.back().dst_rank == op.dst_rank && rdmaRoute(op.ctx, op.dst_rank);
  }

  // A signal/put that found no usable route: positive route codes are device faults, the
  // RDMA route's negative codes keep their meaning (timeout, remote error).
  int noRoute(const HostOp& op, int route_status, std::string* message) {
    using namespace mooncake::device;
    *message = std::string(opName(op.kind)) + ": no route to rank " +
               std::to_string(op.dst_rank) + " (" + mc_route_status_text(route_status) +
               "; status " + std::to_string(route_status) + ")";
    if (route_status == kMcRdmaTimeout) return kTimeout;
    if (route_status == kMcRdmaQpError || route_status == kMcRdmaFatal) return kRemoteError;
    return kDeviceFault;
  }

  // Spin phase (pause between polls) then park phase (growing short sleeps), both under the
  // op's deadline; the deadline starts when the op starts executing, as on CUDA.
  int waitFor(const HostOp& op, std::string* message) {
    using namespace mooncake::device;
    const uint64_t start = mc_globaltimer_ns();
    const uint64_t deadline = start + static_cast<uint64_t>(op.timeout_ns);
    uint32_t seen = 0;
    if (mc_wait_signal(op.sig_ptr, op.value, std::min(deadline, start + kSpinPhaseNs), &seen)) {
      return kOk;
    }
    int64_t park_ns = 1000;
    for (;;) {
      const uint64_t now = mc_globaltimer_ns();
      if (now >= deadline) break;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stop_) {
          *message = "waitSignal abandoned: the stream was closed";
          return kIllegalState;
        }
      }
      const int64_t left = static_cast<int64_t>(deadline - now);
      // Parks on the word itself: a software NIC that adds to it wakes this at once; other
      // writers (stores, local atomics) are seen at the end of the park.
      te4j::rdma::waitWordChange(op.sig_ptr, seen, std::min(park_ns, left));
      park_ns = std::min(park_ns * 2, kMaxParkNs);
      seen = mc_ld_acquire_u32(op.sig_ptr);
      if (mc_signal_reached(seen, op.value)) return kOk;
    }
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

  std::mutex mu_;
  std::condition_variable work_cv_;  // executor waits for work / stop
  std::condition_variable done_cv_;  // synchronize waits for completions
  std::deque<HostOp> queue_;
  uint64_t submitted_ = 0;
  uint64_t completed_ = 0;  // ops run or skipped
  uint64_t wake_at_ = UINT64_MAX;  // smallest completed_ a synchronize waits for
  uint64_t skipped_ = 0;    // ops skipped since the pending error
  bool stop_ = false;
  int error_status_ = kOk;  // first error since the last synchronize
  std::string error_message_;
  std::thread executor_;    // last: starts after every member above exists
};

}  // namespace
}  // namespace te4j

/// Host-platform factory used by OpStream::create (op_stream_factory.cpp). nullptr only when
/// memory is exhausted; otherwise check status().
te4j::OpStream* te4j_create_host_op_stream() { return new (std::nothrow) te4j::HostOpStream(); }
