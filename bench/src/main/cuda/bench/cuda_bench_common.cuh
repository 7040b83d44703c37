// bench/cuda_bench_common.cuh — what the CUDA bench objects share: making their device current
// for one call, a bounded wait on an event, and error text. Private to libte4j (nvcc only).
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include "core/cuda_errors.cuh"
#include "core/device_scope.cuh"

namespace te4j {
namespace bench {
namespace cuda_bench {

/// Makes `device` current for one call and restores the caller's device afterwards (JNI threads
/// are the application's, which may be using another device), through libte4j's one device guard.
struct DeviceCall : cuda_detail::DeviceScope {
  explicit DeviceCall(int device) : DeviceScope(device, kBind) {}
};

/// Waits until `event` has completed, at most timeout_ns (polls: never an unbounded
/// cudaEventSynchronize). cudaErrorNotReady means the time ran out.
inline cudaError_t waitEvent(cudaEvent_t event, int64_t timeout_ns) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(timeout_ns);
  for (int polls = 0;; ++polls) {
    const cudaError_t e = cudaEventQuery(event);
    if (e != cudaErrorNotReady) return e;
    if (std::chrono::steady_clock::now() > deadline) return cudaErrorNotReady;
    // Flat out at first (short batches), then sleep: the event times the device, not this loop.
    if (polls > 1000) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

/// Milliseconds between two completed events as nanoseconds.
inline cudaError_t elapsedNs(cudaEvent_t start, cudaEvent_t stop, int64_t* out) {
  float ms = 0.0f;
  const cudaError_t e = cudaEventElapsedTime(&ms, start, stop);
  if (e == cudaSuccess) *out = (int64_t)((double)ms * 1.0e6);
  return e;
}

/// Bound of the host wait for work whose device side is bounded by timeout_ns: the device
/// deadline plus slack for launch and scheduling.
inline int64_t hostBound(int64_t timeout_ns) {
  const int64_t slack = 5000000000LL;
  return timeout_ns > INT64_MAX - slack ? INT64_MAX : timeout_ns + slack;
}

}  // namespace cuda_bench
}  // namespace bench
}  // namespace te4j
