// bench/cuda_copy_baseline.cu — te4j::bench::CopyBaseline on CUDA: the two baselines te4j's
// NVLink put is set beside. Neither uses te4j:
//   copy engine  cudaMemcpyPeerAsync into the peer's buffer as mapped in this process
//   SM copy      a plain grid-stride kernel of 16-byte ld.global.nc / st.global
// Each call records an event pair around `count` copies on the given stream.
#include <cuda_runtime.h>

#include <cstring>
#include <new>
#include <vector>
#include <string>

#include "te4j/bench_api.h"
#include "cuda_bench_common.cuh"

namespace te4j {
namespace bench {
namespace {

using cuda_bench::DeviceCall;

// The plain SM copy: every thread moves 16-byte words at a grid stride; thread 0 of block 0
// moves the tail (< 16 bytes). Source through the non-coherent path (it is not written during
// the kernel), neither side allocated in L1 (streamed once).
__global__ void bench_sm_copy_kernel(int4* dst, const int4* src, size_t words, uint8_t* dst_tail,
                                     const uint8_t* src_tail, unsigned tail) {
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < words; i += stride) {
    int4 v;
    asm volatile("ld.global.nc.L1::no_allocate.v4.s32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(src + i));
    asm volatile("st.global.L1::no_allocate.v4.s32 [%0], {%1, %2, %3, %4};"
                 :
                 : "l"(dst + i), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
                 : "memory");
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    for (unsigned t = 0; t < tail; ++t) dst_tail[t] = src_tail[t];
  }
}

class CudaCopyBaseline final : public CopyBaseline {
 public:
  CudaCopyBaseline(int device, void* stream) : device_(device), stream_((cudaStream_t)stream) {
    if (stream == nullptr) {
      init_status_ = fail(kInvalidArgument,
                          "CopyBaseline(CUDA): the stream is null (the legacy "
                          "default stream is refused)");
      return;
    }
    DeviceCall call(device_);
    cudaError_t e = call.status();
    if (e == cudaSuccess) e = cudaEventCreate(&start_);
    if (e == cudaSuccess) e = cudaEventCreate(&stop_);
    if (e != cudaSuccess) {
      init_status_ =
          fail(cuda_detail::statusOf(e), cuda_detail::describe("CopyBaseline: cudaEventCreate", e));
    }
  }

  ~CudaCopyBaseline() override {
    DeviceCall call(device_);
    if (start_ != nullptr) cudaEventDestroy(start_);
    if (stop_ != nullptr) cudaEventDestroy(stop_);
    cudaGetLastError();
  }

  int copyEngine(void* dst, const void* src, std::size_t bytes, int count, int64_t timeout_ns,
                 int64_t* elapsed_ns) override {
    int rc = check("copy engine", dst, src, bytes, count, timeout_ns, elapsed_ns);
    if (rc != kOk) return rc;
    DeviceCall call(device_);
    cudaError_t e = call.status();
    if (e == cudaSuccess) e = cudaEventRecord(start_, stream_);
    // The peer's buffer is IPC-mapped into this device's context, so this device is the
    // destination context too; the driver resolves the physical owner and the copy engine moves
    // the bytes over NVLink.
    for (int i = 0; e == cudaSuccess && i < count; ++i) {
      e = cudaMemcpyPeerAsync(dst, device_, src, device_, bytes, stream_);
    }
    if (e == cudaSuccess) e = cudaEventRecord(stop_, stream_);
    if (e != cudaSuccess) {
      return fail(cuda_detail::statusOf(e), cuda_detail::describe("cudaMemcpyPeerAsync batch", e));
    }
    return finish("copy engine", timeout_ns, elapsed_ns);
  }

  int copyBlocks(int how, const uint64_t* dst, const uint64_t* src, const uint64_t* bytes,
                 int count, int64_t timeout_ns, int64_t* elapsed_ns) override {
    if (dst == nullptr || src == nullptr || bytes == nullptr || elapsed_ns == nullptr ||
        count <= 0) {
      return fail(kInvalidArgument, "blocks baseline: null array or no blocks");
    }
    DeviceCall call(device_);
    cudaError_t e = call.status();
    uint64_t total = 0;
    for (int i = 0; i < count; ++i) total += bytes[i];
    std::vector<void*> d;
    std::vector<const void*> s;
    std::vector<size_t> n;
    if (how == kBlocksBatchAsync) {
      d.resize((size_t)count);
      s.resize((size_t)count);
      n.resize((size_t)count);
      for (int i = 0; i < count; ++i) {
        d[(size_t)i] = (void*)(uintptr_t)dst[i];
        s[(size_t)i] = (const void*)(uintptr_t)src[i];
        n[(size_t)i] = (size_t)bytes[i];
      }
    }
    if (e == cudaSuccess) e = cudaEventRecord(start_, stream_);
    if (e == cudaSuccess && how == kBlocksContiguous) {
      e = cudaMemcpyAsync((void*)(uintptr_t)dst[0], (const void*)(uintptr_t)src[0], total,
                          cudaMemcpyDeviceToDevice, stream_);
    } else if (e == cudaSuccess && how == kBlocksBatchAsync) {
      cudaMemcpyAttributes attr;
      std::memset(&attr, 0, sizeof(attr));
      attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
      size_t index = 0;
      e = cudaMemcpyBatchAsync(d.data(), s.data(), n.data(), (size_t)count, &attr, &index, 1,
                               stream_);
    } else {
      for (int i = 0; e == cudaSuccess && i < count; ++i) {
        e = cudaMemcpyAsync((void*)(uintptr_t)dst[i], (const void*)(uintptr_t)src[i], bytes[i],
                            cudaMemcpyDeviceToDevice, stream_);
      }
    }
    if (e == cudaSuccess) e = cudaEventRecord(stop_, stream_);
    if (e != cudaSuccess) {
      return fail(cuda_detail::statusOf(e), cuda_detail::describe("blocks baseline", e));
    }
    return finish("blocks baseline", timeout_ns, elapsed_ns);
  }

  int smCopy(void* dst, const void* src, std::size_t bytes, int blocks, int threads, int count,
             int64_t timeout_ns, int64_t* elapsed_ns) override {
    int rc = check("SM copy", dst, src, bytes, count, timeout_ns, elapsed_ns);
    if (rc != kOk) return rc;
    if (blocks <= 0 || blocks > 65535 || threads <= 0 || threads > 1024 || threads % 32 != 0) {
      return fail(kInvalidArgument,
                  "SM copy: blocks must be 1..65535, threads a multiple of 32 "
                  "up to 1024");
    }
    if (((uintptr_t)dst & 15u) != 0 || ((uintptr_t)src & 15u) != 0) {
      return fail(kInvalidArgument, "SM copy: dst and src must be 16-byte aligned");
    }
    const size_t words = bytes / 16;
    const unsigned tail = (unsigned)(bytes % 16);
    uint8_t* dst_tail = (uint8_t*)dst + words * 16;
    const uint8_t* src_tail = (const uint8_t*)src + words * 16;
    DeviceCall call(device_);
    cudaError_t e = call.status();
    if (e == cudaSuccess) e = cudaEventRecord(start_, stream_);
    for (int i = 0; e == cudaSuccess && i < count; ++i) {
      bench_sm_copy_kernel<<<blocks, threads, 0, stream_>>>((int4*)dst, (const int4*)src, words,
                                                            dst_tail, src_tail, tail);
      e = cudaGetLastError();
    }
    if (e == cudaSuccess) e = cudaEventRecord(stop_, stream_);
    if (e != cudaSuccess) {
      return fail(cuda_detail::statusOf(e), cuda_detail::describe("SM copy kernel batch", e));
    }
    return finish("SM copy", timeout_ns, elapsed_ns);
  }

 private:
  int check(const char* what, void* dst, const void* src, std::size_t bytes, int count,
            int64_t timeout_ns, int64_t* elapsed_ns) {
    if (init_status_ != kOk) return init_status_;
    if (dst == nullptr || src == nullptr || elapsed_ns == nullptr) {
      return fail(kInvalidArgument, std::string(what) + ": null pointer");
    }
    if (bytes == 0 || count <= 0 || timeout_ns <= 0) {
      return fail(kInvalidArgument,
                  std::string(what) + ": bytes, count and timeout must be positive");
    }
    return kOk;
  }

  // Waits (bounded) for the stop event and reads the time of the batch.
  int finish(const char* what, int64_t timeout_ns, int64_t* elapsed_ns) {
    cudaError_t e = cuda_bench::waitEvent(stop_, timeout_ns);
    if (e == cudaErrorNotReady) {
      return fail(kTimeout, std::string(what) + ": the batch did not finish within " +
                                std::to_string(timeout_ns / 1000000) + " ms");
    }
    if (e == cudaSuccess) e = cuda_bench::elapsedNs(start_, stop_, elapsed_ns);
    if (e != cudaSuccess) {
      return fail(cuda_detail::statusOf(e), cuda_detail::describe(what, e));
    }
    return ok();
  }

  int device_;
  cudaStream_t stream_;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

}  // namespace
}  // namespace bench
}  // namespace te4j

te4j::bench::CopyBaseline* te4j_bench_new_cuda_copy(int device, void* stream) {
  return new (std::nothrow) te4j::bench::CudaCopyBaseline(device, stream);
}
