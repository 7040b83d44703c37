// bench/cuda_ping_pong.cu — te4j::bench::PingPong on CUDA: each sample is ONE kernel that first
// meets the peer's kernel (a handshake, untimed: launch skew stays out of the figure), then runs
// all round trips between two reads of the GPU's global timer (its tick, up to about 1 us on some
// GPUs, is shared by the sample's round trips, as the events' resolution was), and reports through
// mapped pinned memory: the time, both loops' outcomes and the own signal word after the loop.
//   te4j      <<<1, 32>>>  bench_te4j_side: mc_route_put + warp copy + mc_signal + mc_wait_signal
//   te4j LL   <<<1, 32>>>  bench_ll_side:   mc_ll_store to the peer's slot + mc_ll_wait on the own
//   raw flag  <<<1, 1>>>   bench_raw_side:  st.release.sys / ld.acquire.sys spin
// Why one kernel and nothing else on the stream while it runs: ranks in one process that share a
// GPU share a CUDA context, whose streams share a few hardware queues. A second item on this
// stream (the loop kernel behind the handshake, an event behind the loop) waits in its queue
// for the kernel before it, and so blocks whatever the peer queued behind it there, possibly
// the very kernel ours spins for: both sides then sit until the deadline. With one kernel per
// sample the host learns its end from the report alone, launches the next one only after that,
// and reads no device memory in between. Every kernel this object launches is loaded at
// construction, so no first launch loads code (which may wait for the context to go idle).
// Every spin has an in-kernel deadline and the host wait for the report is bounded too.
#include <cuda_runtime.h>
#include <string.h>

#include <atomic>
#include <chrono>
#include <new>
#include <string>
#include <thread>

#include "te4j/bench_api.h"
#include "te4j/tuning.h"
#include "te4j/bench_knobs.h"
#include "bench_loops.cuh"
#include "cuda_bench_common.cuh"

namespace te4j {
namespace bench {
namespace {

using cuda_bench::DeviceCall;
using mooncake::device::CommCtx;

// Marks a result slot as "kernel never wrote it".
constexpr uint32_t kNotRun = 0xffffffffu;

// What one sample's kernel reports (mapped pinned memory). `sample` is written last, after a
// system fence: once the host sees the sample's number there, everything above is valid.
struct SampleReport {
  BenchLoopResult meet;
  BenchLoopResult loop;
  unsigned long long elapsed_ns;  // global timer, handshake done .. loop done
  uint32_t word;                  // the own signal word after the loop (the peer's count)
  uint32_t sample;
};

// Thread 0 meets the peer; every thread learns whether it worked and when the loop starts.
__device__ bool bench_sample_meet(const CommCtx& ctx, int peer, uint32_t* ready, uint32_t expected,
                                  uint64_t timeout_ns, SampleReport* out, uint64_t* loop_deadline,
                                  uint64_t* t0) {
  __shared__ uint32_t met;
  __shared__ uint64_t start;
  if (threadIdx.x == 0) {
    BenchLoopResult m;
    bench_meet(ctx, peer, ready, expected, mooncake::device::mc_globaltimer_ns() + timeout_ns, &m);
    out->meet = m;
    met = m.status == kLoopOk;
    start = mooncake::device::mc_globaltimer_ns();
  }
  __syncthreads();
  *t0 = start;
  *loop_deadline = start + timeout_ns;
  return met != 0;
}

// Thread 0 after its loop (it does every wait and writes every result, so it finishes the
// work; no block barrier: the other lanes of a small put have left the loop long before): the
// time, the word, then the sample's number.
__device__ void bench_sample_report(uint64_t t0, const uint32_t* word, uint32_t sample,
                                    SampleReport* out) {
  if (threadIdx.x != 0) return;
  out->elapsed_ns = mooncake::device::mc_globaltimer_ns() - t0;
  out->word = mooncake::device::mc_ld_acquire_u32(word);
  __threadfence_system();
  *(volatile uint32_t*)&out->sample = sample;
}

template <bool kSpin, int kSignal>
__global__ void bench_te4j_kernel(CommCtx ctx, int peer, bool initiator, void* dst, const void* src,
                                  size_t bytes, uint32_t* sig, uint32_t base, uint32_t iters,
                                  uint32_t* ready, uint32_t sample, uint64_t timeout_ns,
                                  SampleReport* out) {
  uint64_t deadline = 0;
  uint64_t t0 = 0;
  if (bench_sample_meet(ctx, peer, ready, sample, timeout_ns, out, &deadline, &t0)) {
    bench_te4j_side<kSpin, kSignal>(ctx, peer, initiator, dst, src, bytes, sig, base, iters,
                                    deadline, threadIdx.x, blockDim.x, &out->loop);
  }
  bench_sample_report(t0, sig, sample, out);
}

__global__ void bench_ll_kernel(CommCtx ctx, int peer, bool initiator, uint64_t* slot, void* dst,
                                const void* src, size_t bytes, uint32_t base, uint32_t iters,
                                uint32_t* ready, uint32_t sample, uint64_t timeout_ns,
                                SampleReport* out) {
  uint64_t deadline = 0;
  uint64_t t0 = 0;
  if (bench_sample_meet(ctx, peer, ready, sample, timeout_ns, out, &deadline, &t0)) {
    bench_ll_side(ctx, peer, initiator, slot, dst, src, bytes, base, iters, deadline, threadIdx.x,
                  blockDim.x, &out->loop);
  }
  // The slot's first word carries the peer's last flag in its high half.
  bench_sample_report(t0, (const uint32_t*)slot + 1, sample, out);
}

template <bool kData>
__global__ void bench_raw_flag_kernel(CommCtx ctx, int peer, uint32_t* flag, uint32_t* peer_flag,
                                      bool initiator, uint32_t base, uint32_t iters,
                                      uint32_t* ready, uint32_t sample, uint64_t timeout_ns,
                                      SampleReport* out) {
  uint64_t deadline = 0;
  uint64_t t0 = 0;
  if (bench_sample_meet(ctx, peer, ready, sample, timeout_ns, out, &deadline, &t0)) {
    // kData: 8 bytes at the peer's window offset 64 (line 0; the raw flag sits at offset 128).
    bench_raw_side<kData>(flag, peer_flag, initiator, base, iters, deadline, &out->loop,
                          (uint64_t*)((uint8_t*)peer_flag - 64));
  }
  bench_sample_report(t0, flag, sample, out);
}

// Loads every kernel this object can launch (see the file comment).
cudaError_t loadKernels() {
  const void* kernels[] = {
      (const void*)bench_te4j_kernel<true, kBenchSignalSet>,
      (const void*)bench_te4j_kernel<false, kBenchSignalSet>,
      (const void*)bench_te4j_kernel<true, kBenchSignalRed>,
      (const void*)bench_te4j_kernel<false, kBenchSignalRed>,
      (const void*)bench_te4j_kernel<true, kBenchSignalAtom>,
      (const void*)bench_te4j_kernel<false, kBenchSignalAtom>,
      (const void*)bench_ll_kernel,
      (const void*)bench_raw_flag_kernel<true>,
      (const void*)bench_raw_flag_kernel<false>,
  };
  for (const void* k : kernels) {
    cudaFuncAttributes a;
    const cudaError_t e = cudaFuncGetAttributes(&a, k);
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
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
    if (e == cudaSuccess) {
      e = cudaHostAlloc((void**)&report_, sizeof(SampleReport), cudaHostAllocMapped);
    }
    if (e == cudaSuccess) e = cudaHostGetDevicePointer((void**)&report_dev_, report_, 0);
    if (e == cudaSuccess) e = loadKernels();
    if (e != cudaSuccess) {
      init_status_ =
          fail(cuda_detail::statusOf(e), cuda_detail::describe("PingPong(CUDA) setup", e));
    }
  }

  ~CudaPingPong() override {
    DeviceCall call(device_);
    // Free only what no kernel can still write (a stream that never drained keeps its report).
    const bool idle = stream_ == nullptr || waitIdle(10000000000LL) == cudaSuccess;
    if (idle && report_ != nullptr) cudaFreeHost(report_);
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
    rc = timedLoop("te4j ping-pong", timeout_ns, elapsed_ns, [&](uint32_t sample) {
      // Variants: wait=spin, signal=set (te4j/bench_knobs.h); signal=atom|red (te4j/tuning.h).
      const BenchKnobs knobs = benchKnobs();
      const bool spin = knobs.spin_wait;
      const int signal = knobs.signal_set ? -1 : tuning::get(tuning::kSignal);
      auto kernel = signal < 0 ? (spin ? bench_te4j_kernel<true, kBenchSignalSet>
                                       : bench_te4j_kernel<false, kBenchSignalSet>)
                    : signal == tuning::kSignalRed
                        ? (spin ? bench_te4j_kernel<true, kBenchSignalRed>
                                : bench_te4j_kernel<false, kBenchSignalRed>)
                        : (spin ? bench_te4j_kernel<true, kBenchSignalAtom>
                                : bench_te4j_kernel<false, kBenchSignalAtom>);
      kernel<<<1, 32, 0, stream_>>>(ctx_, peer_, initiator, dst, src, bytes, sig_, sig_base_,
                                    (uint32_t)iters, ready_, sample, (uint64_t)timeout_ns,
                                    report_dev_);
    });
    if (rc != kOk) return rc;
    sig_base_ += (uint32_t)iters;
    return checkWord("te4j ping-pong signal", sig_base_);
  }

  int te4jLl(bool initiator, void* slot, void* dst, const void* src, std::size_t bytes, int iters,
             int64_t timeout_ns, int64_t* elapsed_ns) override {
    int rc = check(iters, timeout_ns, elapsed_ns);
    if (rc != kOk) return rc;
    if (const char* why = bench_ll_args_error(slot, dst, src, bytes))
      return fail(kInvalidArgument, why);
    rc = timedLoop("LL ping-pong", timeout_ns, elapsed_ns, [&](uint32_t sample) {
      bench_ll_kernel<<<1, 32, 0, stream_>>>(ctx_, peer_, initiator, (uint64_t*)slot, dst, src,
                                             bytes, ll_base_, (uint32_t)iters, ready_, sample,
                                             (uint64_t)timeout_ns, report_dev_);
    });
    if (rc != kOk) return rc;
    ll_base_ += (uint32_t)iters;
    return checkWord("LL ping-pong slot flag", ll_base_);
  }

  int rawFlag(bool initiator, int iters, int64_t timeout_ns, int64_t* elapsed_ns) override {
    int rc = check(iters, timeout_ns, elapsed_ns);
    if (rc != kOk) return rc;
    rc = timedLoop("raw flag ping-pong", timeout_ns, elapsed_ns, [&](uint32_t sample) {
      auto kernel =
          benchKnobs().raw_data ? bench_raw_flag_kernel<true> : bench_raw_flag_kernel<false>;
      kernel<<<1, 1, 0, stream_>>>(ctx_, peer_, flag_, peer_flag_, initiator, flag_base_,
                                   (uint32_t)iters, ready_, sample, (uint64_t)timeout_ns,
                                   report_dev_);
    });
    if (rc != kOk) return rc;
    flag_base_ += (uint32_t)iters;
    return checkWord("raw flag", flag_base_);
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

  // One timed sample: `launch(sample)` puts the sample's one kernel on the stream; waits
  // (bounded) for its report and checks what it says.
  template <typename Launch>
  int timedLoop(const char* what, int64_t timeout_ns, int64_t* elapsed_ns, Launch launch) {
    DeviceCall call(device_);
    cudaError_t e = call.status();
    if (e != cudaSuccess) return broken(cuda_detail::statusOf(e), cuda_detail::describe(what, e));
    // Nothing of ours runs now (the last kernel reported, or none ran): the report is free.
    memset(report_, 0, sizeof(SampleReport));
    report_->meet.status = kNotRun;
    report_->loop.status = kNotRun;
    const uint32_t sample = ++ready_count_;  // the meet's ready word counts the samples too
    launch(sample);
    e = cudaGetLastError();
    if (e != cudaSuccess) return broken(cuda_detail::statusOf(e), cuda_detail::describe(what, e));
    // The handshake and the loop are each bounded by timeout_ns on the device.
    const int64_t bound =
        cuda_bench::hostBound(timeout_ns > INT64_MAX / 2 ? INT64_MAX / 2 : 2 * timeout_ns);
    e = waitReport(sample, bound);
    if (e == cudaErrorNotReady) {
      return broken(kTimeout, std::string(what) + ": the kernel did not report within " +
                                  std::to_string(bound / 1000000) + " ms");
    }
    if (e != cudaSuccess) return broken(cuda_detail::statusOf(e), cuda_detail::describe(what, e));
    const SampleReport r = *report_;
    if (r.meet.status != kLoopOk) {
      return broken(r.meet.status == kLoopTimeout ? kTimeout : kIllegalState,
                    bench_loop_failure("handshake before the ping-pong", r.meet));
    }
    if (r.loop.status != kLoopOk) {
      return broken(r.loop.status == kLoopTimeout ? kTimeout : kIllegalState,
                    bench_loop_failure(what, r.loop));
    }
    *elapsed_ns = (int64_t)r.elapsed_ns;
    word_ = r.word;
    return ok();
  }

  // Polls the report for `sample`, at most timeout_ns. Only queries the stream (never waits on
  // it or the context). cudaErrorNotReady: no report in time; cudaErrorUnknown: the stream
  // went idle without one.
  cudaError_t waitReport(uint32_t sample, int64_t timeout_ns) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(timeout_ns);
    for (int polls = 0;; ++polls) {
      if (reported(sample)) return cudaSuccess;
      const cudaError_t e = cudaStreamQuery(stream_);
      if (e == cudaSuccess) return reported(sample) ? cudaSuccess : cudaErrorUnknown;
      if (e != cudaErrorNotReady) return e;
      if (std::chrono::steady_clock::now() > deadline) return cudaErrorNotReady;
      // Flat out at first (short loops), then sleep: the kernel times itself, not this loop.
      if (polls > 1000) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  bool reported(uint32_t sample) const {
    if (*(volatile const uint32_t*)&report_->sample != sample) return false;
    std::atomic_thread_fence(std::memory_order_acquire);  // the fields written before it
    return true;
  }

  // Waits (bounded, by queries) until nothing of ours is left on the stream.
  cudaError_t waitIdle(int64_t timeout_ns) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(timeout_ns);
    for (;;) {
      const cudaError_t e = cudaStreamQuery(stream_);
      if (e != cudaErrorNotReady) return e;
      if (std::chrono::steady_clock::now() > deadline) return cudaErrorNotReady;
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }

  // The peer sends exactly as many as counted here: more or fewer means a lost or extra signal.
  // The word is the one the kernel read after its loop.
  int checkWord(const char* what, uint32_t expected) {
    if (word_ != expected) {
      return broken(kIllegalState, std::string(what) + " word holds " + std::to_string(word_) +
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
  SampleReport* report_ = nullptr;      // pinned, mapped
  SampleReport* report_dev_ = nullptr;  // the same as seen by kernels
  uint32_t sig_base_ = 0;
  uint32_t flag_base_ = 0;
  uint32_t ll_base_ = 0;
  uint32_t ready_count_ = 0;
  uint32_t word_ = 0;  // the last sample's word
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
