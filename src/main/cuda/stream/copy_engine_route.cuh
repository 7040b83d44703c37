// copy_engine_route.cuh — the copy-engine put of a CUDA op stream (tuning knob put=ce / cesm).
//
// Why: on 2xH200 every SM write path stops at ~350 GB/s on 16 SMs and ~368 on the whole GPU,
// while the copy engine moves 395 GB/s and uses no SM at all
// (docs/history/PERFORMANCE-notebook.md). A host-enqueued put between P2P-mapped ranks can
// therefore hand its bytes to the copy engine:
//   ce    the whole body by cudaMemcpyAsync on the op stream;
//   cesm  a share of the body (knob cesplit, percent) by the copy engine on a side stream, the
//         rest by the SM kernel on the op stream, joined by an event before the signal.
// putWithSignal signals with the ordinary signal kernel after the copy: stream order makes the
// copy complete before the kernel's release add starts.
//
// put=auto takes this route by the rank's route and the size (body_path.h says from where, and
// why).
//
// Difference from the kernels: a kernel skips its work once the stream recorded a device error
// (an earlier wait that timed out); a copy cannot look at that word. The op stream therefore
// uses a kernel when an error is already recorded at enqueue, but a copy queued behind an op
// that fails later still runs (synchronize reports the first error either way).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace te4j {
namespace cuda {

class CopyEngineRoute {
 public:
  ~CopyEngineRoute() {
    if (join_ != nullptr) cudaEventDestroy(join_);
    if (fork_ != nullptr) cudaEventDestroy(fork_);
    if (side_ != nullptr) cudaStreamDestroy(side_);
  }

  /// Copies [src, src + nbytes) to dst on `stream` by the copy engine.
  static cudaError_t copy(void* dst, const void* src, size_t nbytes, cudaStream_t stream) {
    return cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDefault, stream);
  }

  /// Starts the copy-engine share [0, ce_bytes) on the side stream after everything already on
  /// `stream`; join() makes `stream` wait for it.
  cudaError_t fork(void* dst, const void* src, size_t ce_bytes, cudaStream_t stream) {
    cudaError_t e = ensureSide();
    if (e == cudaSuccess) e = cudaEventRecord(fork_, stream);
    if (e == cudaSuccess) e = cudaStreamWaitEvent(side_, fork_, 0);
    if (e == cudaSuccess) e = copy(dst, src, ce_bytes, side_);
    if (e == cudaSuccess) e = cudaEventRecord(join_, side_);
    return e;
  }

  cudaError_t join(cudaStream_t stream) { return cudaStreamWaitEvent(stream, join_, 0); }

  /// The copy engine's share of nbytes for `percent`, a multiple of 64 KiB (at least one
  /// 64 KiB unit stays for the kernel so that both halves are real).
  static size_t ceShare(size_t nbytes, int percent) {
    const size_t unit = 64 * 1024;
    size_t share = nbytes / 100 * (size_t)percent / unit * unit;
    if (share + unit > nbytes) share = nbytes > unit ? nbytes - unit : 0;
    return share;
  }

 private:
  cudaError_t ensureSide() {
    if (side_ != nullptr) return cudaSuccess;
    cudaError_t e = cudaStreamCreateWithFlags(&side_, cudaStreamNonBlocking);
    if (e == cudaSuccess) e = cudaEventCreateWithFlags(&fork_, cudaEventDisableTiming);
    if (e == cudaSuccess) e = cudaEventCreateWithFlags(&join_, cudaEventDisableTiming);
    return e;
  }

  cudaStream_t side_ = nullptr;
  cudaEvent_t fork_ = nullptr;
  cudaEvent_t join_ = nullptr;
};

}  // namespace cuda
}  // namespace te4j
