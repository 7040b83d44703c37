// bench/host_stream_timer.cpp — te4j::bench::StreamTimer on the host platform: the monotonic
// clock read at the calls. The host OpStream runs on an executor thread, so the caller
// synchronizes it before stop() (see StreamTimer in te4j/bench_api.h).
#include <chrono>
#include <new>

#include "te4j/bench_api.h"

namespace te4j {
namespace bench {
namespace {

class HostStreamTimer final : public StreamTimer {
 public:
  int start() override {
    start_ = Clock::now();
    started_ = true;
    stopped_ = false;
    return ok();
  }

  int stop() override {
    if (!started_) return fail(kIllegalState, "StreamTimer.stop before start");
    stop_ = Clock::now();
    stopped_ = true;
    return ok();
  }

  int elapsedNs(int64_t /*timeout_ns: nothing to wait for*/, int64_t* out) override {
    if (out == nullptr) return fail(kInvalidArgument, "StreamTimer.elapsedNs: out is null");
    if (!stopped_) return fail(kIllegalState, "StreamTimer.elapsedNs before start and stop");
    *out = std::chrono::duration_cast<std::chrono::nanoseconds>(stop_ - start_).count();
    return ok();
  }

 private:
  // steady_clock is CLOCK_MONOTONIC on Linux: never jumps with wall-clock changes.
  using Clock = std::chrono::steady_clock;
  Clock::time_point start_;
  Clock::time_point stop_;
  bool started_ = false;
  bool stopped_ = false;
};

}  // namespace
}  // namespace bench
}  // namespace te4j

te4j::bench::StreamTimer* te4j_bench_new_host_timer() {
  return new (std::nothrow) te4j::bench::HostStreamTimer();
}
