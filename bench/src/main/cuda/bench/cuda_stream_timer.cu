// bench/cuda_stream_timer.cu — te4j::bench::StreamTimer on CUDA: two events recorded on the
// timed stream (device time between the marks; no host clock involved).
#include <cuda_runtime.h>

#include <new>
#include <string>

#include "te4j/bench_api.h"
#include "cuda_bench_common.cuh"

namespace te4j {
namespace bench {
namespace {

using cuda_bench::DeviceCall;

class CudaStreamTimer final : public StreamTimer {
 public:
  CudaStreamTimer(int device, void* stream) : device_(device), stream_((cudaStream_t)stream) {
    if (stream == nullptr) {
      init_status_ = fail(kInvalidArgument,
                          "StreamTimer(CUDA): the stream is null (the legacy "
                          "default stream is refused)");
      return;
    }
    DeviceCall call(device_);
    cudaError_t e = call.status();
    if (e == cudaSuccess) e = cudaEventCreate(&start_);
    if (e == cudaSuccess) e = cudaEventCreate(&stop_);
    if (e != cudaSuccess)
      init_status_ =
          fail(cuda_detail::statusOf(e), cuda_detail::describe("StreamTimer: cudaEventCreate", e));
  }

  ~CudaStreamTimer() override {
    DeviceCall call(device_);
    if (start_ != nullptr) cudaEventDestroy(start_);
    if (stop_ != nullptr) cudaEventDestroy(stop_);
    cudaGetLastError();
  }

  int start() override {
    started_ = stopped_ = false;
    int rc = record(start_, "StreamTimer.start: cudaEventRecord");
    started_ = rc == kOk;
    return rc;
  }

  int stop() override {
    if (!started_) return fail(kIllegalState, "StreamTimer.stop before start");
    int rc = record(stop_, "StreamTimer.stop: cudaEventRecord");
    stopped_ = rc == kOk;
    return rc;
  }

  int elapsedNs(int64_t timeout_ns, int64_t* out) override {
    if (out == nullptr) return fail(kInvalidArgument, "StreamTimer.elapsedNs: out is null");
    if (!stopped_) return fail(kIllegalState, "StreamTimer.elapsedNs before start and stop");
    DeviceCall call(device_);
    cudaError_t e = call.status();
    if (e == cudaSuccess) e = cuda_bench::waitEvent(stop_, timeout_ns);
    if (e == cudaErrorNotReady) {
      return fail(kTimeout,
                  "StreamTimer.elapsedNs: the stream did not reach the stop mark within " +
                      std::to_string(timeout_ns / 1000000) + " ms");
    }
    if (e == cudaSuccess) e = cuda_bench::elapsedNs(start_, stop_, out);
    if (e != cudaSuccess) {
      return fail(cuda_detail::statusOf(e), cuda_detail::describe("StreamTimer.elapsedNs", e));
    }
    return ok();
  }

 private:
  int record(cudaEvent_t event, const char* what) {
    if (init_status_ != kOk) return init_status_;
    DeviceCall call(device_);
    cudaError_t e = call.status();
    if (e == cudaSuccess) e = cudaEventRecord(event, stream_);
    if (e != cudaSuccess) return fail(cuda_detail::statusOf(e), cuda_detail::describe(what, e));
    return ok();
  }

  int device_;
  cudaStream_t stream_;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
  bool started_ = false;
  bool stopped_ = false;
};

}  // namespace
}  // namespace bench
}  // namespace te4j

te4j::bench::StreamTimer* te4j_bench_new_cuda_timer(int device, void* stream) {
  return new (std::nothrow) te4j::bench::CudaStreamTimer(device, stream);
}
