// bench/launch_loop.cpp — te4j::bench::LaunchLoop: the C++ twin of te4j-bench's Java launch
// loop. Same library calls (OpStream::putWithSignal on te4j's own stream), same timing
// (StreamTimer around the loop), so Java / C++ is the cost of the JNI path alone.
#include <memory>
#include <new>
#include <string>

#include "te4j/bench_api.h"
#include "bench_loops.cuh"

namespace te4j {
namespace bench {
namespace {

class LaunchLoopImpl final : public LaunchLoop {
 public:
  LaunchLoopImpl(int platform, int device, const mooncake::device::CommCtx& ctx)
      : platform_(platform), ctx_(ctx) {
    stream_.reset(OpStream::create(platform, device));
    if (!stream_) {
      init_status_ = fail(kOutOfMemory, "LaunchLoop: OpStream::create returned null");
      return;
    }
    if (stream_->status() != kOk) {
      init_status_ = fail(stream_->status(), std::string("LaunchLoop: ") + stream_->lastError());
      return;
    }
    timer_.reset(StreamTimer::create(platform, device, stream_->nativeHandle()));
    if (!timer_) {
      init_status_ = fail(kOutOfMemory, "LaunchLoop: StreamTimer::create returned null");
      return;
    }
    if (timer_->status() != kOk) {
      init_status_ = fail(timer_->status(), std::string("LaunchLoop: ") + timer_->lastError());
    }
  }

  int putWithSignal(int dst_rank, void* recv, const void* send, std::size_t bytes, uint32_t* sig,
                    int blocks, int threads, int count, int64_t timeout_ns,
                    int64_t* elapsed_ns) override {
    if (init_status_ != kOk) return init_status_;  // lastError() still holds the reason
    if (count <= 0 || timeout_ns <= 0 || elapsed_ns == nullptr) {
      return fail(kInvalidArgument, "LaunchLoop: count and timeout must be positive, out non-null");
    }
    int rc = timer_->start();
    if (rc != kOk) return fail(rc, timer_->lastError());
    for (int i = 0; i < count; ++i) {
      rc = stream_->putWithSignal(&ctx_, dst_rank, recv, send, bytes, sig, 1u, blocks, threads);
      if (rc != kOk) return fail(rc, std::string("putWithSignal: ") + stream_->lastError());
    }
    // Host: the executor thread does the work, so the clock stops only once it is done.
    if (platform_ == kPlatformHost) {
      rc = stream_->synchronize(timeout_ns);
      if (rc != kOk) return fail(rc, std::string("synchronize: ") + stream_->lastError());
    }
    rc = timer_->stop();
    if (rc != kOk) return fail(rc, timer_->lastError());
    rc = stream_->synchronize(timeout_ns);
    if (rc != kOk) return fail(rc, std::string("synchronize: ") + stream_->lastError());
    rc = timer_->elapsedNs(timeout_ns, elapsed_ns);
    if (rc != kOk) return fail(rc, timer_->lastError());
    return ok();
  }

 private:
  int platform_;
  mooncake::device::CommCtx ctx_;
  // Destroyed in reverse order: the timer's events go before the stream they were recorded on.
  std::unique_ptr<OpStream> stream_;
  std::unique_ptr<StreamTimer> timer_;
};

}  // namespace

LaunchLoop* LaunchLoop::create(int platform, int device, void* local_base, void* available_table,
                               void* peer_ptrs_table, int rank) {
  return new (std::nothrow) LaunchLoopImpl(
      platform, device, bench_window_ctx(local_base, available_table, peer_ptrs_table, rank));
}

}  // namespace bench
}  // namespace te4j
