// bench/cuda_ping_pong.cu — te4j::bench::PingPong on CUDA: each sample is a handshake kernel
// (untimed) followed by ONE kernel that runs all round trips, on a non-blocking stream of this
// object's own. The events around the loop kernel time it; the handshake before it means the
// peer's loop kernel is already queued behind its own handshake, so launch skew between the two
// processes stays out of the figure.
//   te4j      <<<1, 32>>>  bench_te4j_side: mc_route_put + warp copy + mc_signal + mc_wait_signal
//   te4j LL   <<<1, 32>>>  bench_ll_side:   mc_ll_store to the peer's slot + mc_ll_wait on the own
//   raw flag  <<<1, 1>>>   bench_raw_side:  st.release.sys / ld.acquire.sys spin
// Kernels report through mapped pinned memory; every spin has an in-kernel deadline and the
// host wait for the kernels is bounded too.
#include <cuda_runtime.h>
#include <string.h>

#include <new>
#include <string>

#include "te4j/bench_api.h"
#include "te4j/tuning.h"
#include "bench_loops.cuh"
#include "cuda_bench_common.cuh"

namespace te4j {
namespace bench {
namespace {

using cuda_bench::DeviceCall;
using mooncake::device::CommCtx;

// Marks a result slot as "kernel never wrote it".
constexpr uint32_t kNotRun = 0xffffffffu;

__global__ void bench_meet_kernel(CommCtx ctx, int peer, uint32_t* ready, uint32_t expected,
                                  uint64_t timeout_ns, BenchLoopResult* out) {
  const uint64_t deadline = mooncake::device::mc_globaltimer_ns() + timeout_ns;
  bench_meet(ctx, peer, ready, expected, deadline, out);
}

template <bool kSpin, int kSignal>
__global__ void bench_te4j_kernel(CommCtx ctx, int peer, bool initiator, void* dst, const void* src,
                                  size_t bytes, uint32_t* sig, uint32_t base, uint32_t iters,
                                  uint64_t timeout_ns, BenchLoopResult* out) {
  __shared__ uint64_t deadline;  // one clock read for the whole warp
  if (threadIdx.x == 0) deadline = mooncake::device::mc_globaltimer_ns() + timeout_ns;
  __syncthreads();
  bench_te4j_side<kSpin, kSignal>(ctx, peer, initiator, dst, src, bytes, sig, base, iters, deadline,
                                  threadIdx.x, blockDim.x, out);
}

__global__ void bench_ll_kernel(CommCtx ctx, int peer, bool initiator, uint64_t* slot, void* dst,
                                const void* src, size_t bytes, uint32_t base, uint32_t iters,
                                uint64_t timeout_ns, BenchLoopResult* out) {
  __shared__ uint64_t deadline;  // one clock read for the whole warp
  if (threadIdx.x == 0) deadline = mooncake::device::mc_globaltimer_ns() + timeout_ns;
  __syncthreads();
  bench_ll_side(ctx, peer, initiator, slot, dst, src, bytes, base, iters, deadline, threadIdx.x,
                blockDim.x, out);
}

template <bool kData>
__global__ void bench_raw_flag_kernel(uint32_t* flag, uint32_t* peer_flag, bool initiator,
                                      uint32_t base, uint32_t iters, uint64_t timeout_ns,
                                      BenchLoopResult* out) {
  const uint64_t deadline = mooncake::device::mc_globaltimer_ns() + timeout_ns;
  // kData: 8 bytes at the peer's window offset 64 (line 0; the raw flag sits at offset 128).
  bench_raw_side<kData>(flag, peer_flag, initiator, base, iters, deadline, out,
                        (uint64_t*)((uint8_t*)peer_flag - 64));
}

class CudaPingPong final : public PingPong {
 public:
  CudaPingPong(int device, const CommCtx& ctx, int peer, uint32_t* sig, uint32_t* flag,
               uint32_t* peer_flag, uint32_t* ready)
      : device_(device),
        ctx_(ctx),
        peer_(peer),
        sig_(sig),
        flag_(flag),
        peer_flag_(peer_flag),
        ready_(ready) {
    DeviceCall call(device_);
    cudaError_t e = call.status();
    if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
    if (e == cudaSuccess) e = cudaEventCreate(&start_);
    if (e == cudaSuccess) e = cudaEventCreate(&stop_);
    if (e == cudaSuccess) {
      e = cudaHostAlloc((void**)&results_, 2 * sizeof(BenchLoopResult), cudaHostAllocMapped);
    }
    if (e == cudaSuccess) e = cudaHostGetDevicePointer((void**)&results_dev_, results_, 0);
    if (e != cudaSuccess) {
      init_status_ =
          fail(cuda_detail::statusOf(e), cuda_detail::describe("PingPong(CUDA) setup", e));
    }
  }

  ~CudaPingPong() override {
    DeviceCall call(device_);
    // Free only what no kernel can still write (a stream that never drained keeps its slots).
    const bool idle = stream_ == nullptr || stop_ == nullptr ||
                      cuda_bench::waitEvent(stop_, 10000000000LL) == cudaSuccess;
    if (idle && results_ != nullptr) cudaFreeHost(results_);
    if (start_ != nullptr) cudaEventDestroy(start_);
    if (stop_ != nullptr) cudaEventDestroy(stop_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    cudaGetLastError();
  }

  int te4j(bool initiator, void* dst, const void* src, std::size_t bytes, int iters,
           int64_t timeout_ns, int64_t* elapsed_ns) override {
    int rc = check(iters, timeout_ns, elapsed_ns);
    if (rc != kOk) return rc;
    if (dst == nullptr || src == nullptr || bytes == 0) {
      return fail(kInvalidArgument, "te4j ping-pong: null buffer or zero bytes");
    }
    rc = timedLoop("te4j ping-pong", timeout_ns, elapsed_ns, [&] {
      // Variants (te4j/tuning.h): wait=spin, signal=atom|red|set.
      const bool spin = tuning::get(tuning::kWait) == tuning::kWaitSpin;
      const int signal = tuning::get(tuning::kSignal);
      auto kernel =
          signal == tuning::kSignalSet   ? (spin ? bench_te4j_kernel<true, kBenchSignalSet>
                                                 : bench_te4j_kernel<false, kBenchSignalSet>)
          : signal == tuning::kSignalRed ? (spin ? bench_te4j_kernel<true, kBenchSignalRed>
                                                 : bench_te4j_kernel<false, kBenchSignalRed>)
                                         : (spin ? bench_te4j_kernel<true, kBenchSignalAtom>
                                                 : bench_te4j_kernel<false, kBenchSignalAtom>);
      kernel<<<1, 32, 0, stream_>>>(ctx_, peer_, initiator, dst, src, bytes, sig_, sig_base_,
                                    (uint32_t)iters, (uint64_t)timeout_ns, results_dev_ + 1);
    });
    if (rc != kOk) return rc;
    sig_base_ += (uint32_t)iters;
    return checkWord("te4j ping-pong signal", sig_, sig_base_);
  }

  int te4jLl(bool initiator, void* slot, void* dst, const void* src, std::size_t bytes, int iters,
             int64_t timeout_ns, int64_t* elapsed_ns) override {
    int rc = check(iters, timeout_ns, elapsed_ns);
    if (rc != kOk) return rc;
    if (const char* why = bench_ll_args_error(slot, dst, src, bytes))
      return fail(kInvalidArgument, why);
    rc = timedLoop("LL ping-pong", timeout_ns, elapsed_ns, [&] {
      bench_ll_kernel<<<1, 32, 0, stream_>>>(ctx_, peer_, initiator, (uint64_t*)slot, dst, src,
                                             bytes, ll_base_, (uint32_t)iters, (uint64_t)timeout_ns,
                                             results_dev_ + 1);
    });
    if (rc != kOk) return rc;
    ll_base_ += (uint32_t)iters;
    // The slot's first word carries the peer's last flag in its high half.
    return checkWord("LL ping-pong slot flag", (const uint32_t*)slot + 1, ll_base_);
  }

  int rawFlag(bool initiator, int iters, int64_t timeout_ns, int64_t* elapsed_ns) override {
    int rc = check(iters, timeout_ns, elapsed_ns);
    if (rc != kOk) return rc;
    rc = timedLoop("raw flag ping-pong", timeout_ns, elapsed_ns, [&] {
      auto kernel = tuning::get(tuning::kRawData) != 0 ? bench_raw_flag_kernel<true>
                                                       : bench_raw_flag_kernel<false>;
      kernel<<<1, 1, 0, stream_>>>(flag_, peer_flag_, initiator, flag_base_, (uint32_t)iters,
                                   (uint64_t)timeout_ns, results_dev_ + 1);
    });
    if (rc != kOk) return rc;
    flag_base_ += (uint32_t)iters;
    return checkWord("raw flag", flag_, flag_base_);
  }

 private:
  int check(int iters, int64_t timeout_ns, int64_t* elapsed_ns) {
    if (init_status_ != kOk) return init_status_;
    if (broken_)
      return fail(kIllegalState, "ping-pong is out of step with its peer after: " + why_);
    if (iters <= 0 || timeout_ns <= 0 || elapsed_ns == nullptr) {
      return fail(kInvalidArgument, "ping-pong: iters and timeout must be positive, out non-null");
    }
    return kOk;
  }

  // One timed sample: the untimed handshake kernel, then `launch` (one loop kernel) between the
  // start and stop events; waits (bounded) and checks what both kernels reported.
  template <typename Launch>
  int timedLoop(const char* what, int64_t timeout_ns, int64_t* elapsed_ns, Launch launch) {
    DeviceCall call(device_);
    cudaError_t e = call.status();
    if (e == cudaSuccess) e = launchMeet(timeout_ns);
    if (e == cudaSuccess) e = cudaEventRecord(start_, stream_);
    if (e == cudaSuccess) {
      launch();
      e = cudaGetLastError();
    }
    if (e == cudaSuccess) e = cudaEventRecord(stop_, stream_);
    return finish(what, e, timeout_ns, elapsed_ns);
  }

  cudaError_t launchMeet(int64_t timeout_ns) {
    // Both slots "not run" until a kernel writes them; nothing of ours is running now.
    for (int i = 0; i < 2; ++i) {
      memset(&results_[i], 0, sizeof(BenchLoopResult));
      results_[i].status = kNotRun;
    }
    bench_meet_kernel<<<1, 1, 0, stream_>>>(ctx_, peer_, ready_, ++ready_count_,
                                            (uint64_t)timeout_ns, results_dev_);
    return cudaGetLastError();
  }

  // Waits for the loop (bounded: each kernel has its own device deadline), then checks what
  // the kernels reported.
  int finish(const char* what, cudaError_t launched, int64_t timeout_ns, int64_t* elapsed_ns) {
    if (launched != cudaSuccess) {
      return broken(cuda_detail::statusOf(launched), cuda_detail::describe(what, launched));
    }
    // Two kernels, each bounded by timeout_ns on the device.
    const int64_t bound =
        cuda_bench::hostBound(timeout_ns > INT64_MAX / 2 ? INT64_MAX / 2 : 2 * timeout_ns);
    cudaError_t e = cuda_bench::waitEvent(stop_, bound);
    if (e == cudaErrorNotReady) {
      return broken(kTimeout, std::string(what) + ": the kernels did not finish within " +
                                  std::to_string(bound / 1000000) + " ms");
    }
    if (e != cudaSuccess) return broken(cuda_detail::statusOf(e), cuda_detail::describe(what, e));
    // Stream idle: the kernels' writes to the mapped slots are visible.
    const BenchLoopResult meet = results_[0];
    const BenchLoopResult loop = results_[1];
    if (meet.status != kLoopOk) {
      return broken(meet.status == kLoopTimeout ? kTimeout : kIllegalState,
                    bench_loop_failure("handshake before the ping-pong", meet));
    }
    if (loop.status != kLoopOk) {
      return broken(loop.status == kLoopTimeout ? kTimeout : kIllegalState,
                    bench_loop_failure(what, loop));
    }
    e = cuda_bench::elapsedNs(start_, stop_, elapsed_ns);
    if (e != cudaSuccess) return broken(cuda_detail::statusOf(e), cuda_detail::describe(what, e));
    return ok();
  }

  // The peer sends exactly as many as counted here: more or fewer means a lost or extra signal.
  int checkWord(const char* what, const uint32_t* word, uint32_t expected) {
    DeviceCall call(device_);
    uint32_t v = 0;
    cudaError_t e = call.status();
    if (e == cudaSuccess) e = cudaMemcpy(&v, word, sizeof(v), cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) return broken(cuda_detail::statusOf(e), cuda_detail::describe(what, e));
    if (v != expected) {
      return broken(kIllegalState, std::string(what) + " word holds " + std::to_string(v) +
                                       ", expected exactly " + std::to_string(expected));
    }
    return ok();
  }

  // Counters no longer match the peer's: refuse later calls instead of measuring garbage.
  int broken(int status, const std::string& why) {
    broken_ = true;
    why_ = why;
    return fail(status, why);
  }

  int device_;
  CommCtx ctx_;
  int peer_;
  uint32_t* sig_;
  uint32_t* flag_;
  uint32_t* peer_flag_;
  uint32_t* ready_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
  BenchLoopResult* results_ = nullptr;      // [0] handshake, [1] loop; pinned, mapped
  BenchLoopResult* results_dev_ = nullptr;  // the same as seen by kernels
  uint32_t sig_base_ = 0;
  uint32_t flag_base_ = 0;
  uint32_t ll_base_ = 0;
  uint32_t ready_count_ = 0;
  bool broken_ = false;
  std::string why_;
};

}  // namespace
}  // namespace bench
}  // namespace te4j

te4j::bench::PingPong* te4j_bench_new_cuda_ping_pong(int device,
                                                     const mooncake::device::CommCtx& ctx, int peer,
                                                     uint32_t* sig, uint32_t* flag,
                                                     uint32_t* peer_flag, uint32_t* ready) {
  return new (std::nothrow)
      te4j::bench::CudaPingPong(device, ctx, peer, sig, flag, peer_flag, ready);
}
