// cuda_transfer_batch.cu — te4j::TransferBatch on the CUDA platform: each submitted part is one
// launch of the batch kernel (batch/kernels/batch_copy_kernel.cuh) on the batch's own stream,
// over a chunk array copied to device memory. Remote addresses are peers' memory mapped through
// CUDA IPC (or this process's own), so READ and WRITE are both loads and stores of the kernel.
//
// Request states and the cancel word are in host memory mapped into the device: the kernel
// writes each state when its copy is done, the host reads them with plain loads, and cancel()
// is a host store the kernel reads before it starts a copy. wait() polls the last part's event
// in short sleeps: a batch's kernel never waits on anything, so it always ends.
#include <cuda_runtime.h>

#include <chrono>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "batch/kernels/batch_copy_kernel.cuh"
#include "batch/transfer_batches.h"
#include "core/cuda_errors.cuh"

namespace te4j {
namespace {

using batch::BatchChunk;
using batch::BatchCopy;
using batch::BatchProgress;

// More chunks in one part than this are refused: submit the batch in parts.
constexpr uint64_t kMaxChunksPerPart = 1ull << 24;

class CudaTransferBatch final : public TransferBatch {
 public:
  CudaTransferBatch(int device, int capacity) : device_(device), capacity_(capacity) {
    std::string why;
    if (int st = init(&why)) {
      init_status_ = st;
      last_error_ = "TransferBatch(cuda device " + std::to_string(device) + "): " + why;
    }
  }

  ~CudaTransferBatch() override {
    cuda_detail::DeviceGuard guard;
    if (cudaSetDevice(device_) != cudaSuccess) return;
    if (cancel_ != nullptr) *cancel_ = 1;
    // The kernels end on their own (they never wait); cancel makes the rest skip their copies.
    if (stream_ != nullptr) cudaStreamSynchronize(stream_);
    for (Part& p : parts_) {
      cudaFree(p.copies);
      cudaFree(p.chunks);
      cudaFree(p.progress);
      if (p.done != nullptr) cudaEventDestroy(p.done);
    }
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    if (host_words_ != nullptr) cudaFreeHost(host_words_);
    cudaGetLastError();
  }

  int capacity() const override { return capacity_; }

  int submit(int first, int count, const int32_t* opcodes, const uint64_t* local,
             const uint64_t* remote, const uint64_t* lengths) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (init_status_ != kOk) return fail(init_status_, last_error_);
    if (count <= 0 || opcodes == nullptr || local == nullptr || remote == nullptr || lengths == nullptr) {
      return fail(kInvalidArgument, "submit: empty part or null descriptor array");
    }
    if (first != submitted_ || count > capacity_ - first) {
      return fail(kInvalidArgument, "submit: requests [" + std::to_string(first) + ", +" +
                                        std::to_string(count) + ") do not follow the " +
                                        std::to_string(submitted_) + " submitted within capacity " +
                                        std::to_string(capacity_));
    }
    if (*cancel_ != 0) return fail(kIllegalState, "submit: the batch was cancelled");
    std::vector<BatchCopy> copies;
    std::vector<BatchProgress> progress;
    std::vector<BatchChunk> chunks;
    try {
      copies.resize((size_t)count);
      progress.resize((size_t)count);
      batch::DescriptorProblem problem;
      const int bad = batch::firstBadDescriptor(count, opcodes, local, remote, lengths, &problem);
      if (bad >= 0) {
        return fail(kInvalidArgument, "submit: request " + std::to_string(first + bad) + " has " +
                                          batch::describe(problem));
      }
      for (int i = 0; i < count; ++i) {
        const bool read = opcodes[i] == kBatchRead;
        copies[(size_t)i] = BatchCopy{read ? remote[i] : local[i], read ? local[i] : remote[i], lengths[i]};
      }
      const uint64_t n = batch::chunkCount(copies.data(), (uint32_t)count);
      if (n > kMaxChunksPerPart) {
        return fail(kInvalidArgument, "submit: the part needs " + std::to_string(n) + " chunks, at most " +
                                          std::to_string(kMaxChunksPerPart) + ": submit it in parts");
      }
      chunks.resize((size_t)n);
      if (batch::splitIntoChunks(copies.data(), (uint32_t)count, chunks.data(), n, progress.data()) != n) {
        return fail(kInvalidArgument, "submit: cannot split the part into chunks");
      }
    } catch (const std::bad_alloc&) {
      return fail(kOutOfMemory, "submit: out of host memory for the chunk array");
    }
    cuda_detail::DeviceGuard guard;
    cudaError_t e = cudaSetDevice(device_);
    if (e != cudaSuccess) return cudaFail("cudaSetDevice", e);
    Part p;
    p.num_chunks = chunks.size();
    if ((e = cudaMalloc(&p.copies, copies.size() * sizeof(BatchCopy))) != cudaSuccess ||
        (e = cudaMalloc(&p.chunks, chunks.size() * sizeof(BatchChunk))) != cudaSuccess ||
        (e = cudaMalloc(&p.progress, progress.size() * sizeof(BatchProgress))) != cudaSuccess ||
        (e = cudaEventCreateWithFlags(&p.done, cudaEventDisableTiming)) != cudaSuccess) {
      freePart(&p);
      return cudaFail("submit: device memory for the descriptors", e);
    }
    // Pageable sources: these copies return once the bytes are staged, so the vectors may go.
    if ((e = cudaMemcpyAsync(p.copies, copies.data(), copies.size() * sizeof(BatchCopy), cudaMemcpyHostToDevice,
                             stream_)) != cudaSuccess ||
        (e = cudaMemcpyAsync(p.chunks, chunks.data(), chunks.size() * sizeof(BatchChunk), cudaMemcpyHostToDevice,
                             stream_)) != cudaSuccess ||
        (e = cudaMemcpyAsync(p.progress, progress.data(), progress.size() * sizeof(BatchProgress),
                             cudaMemcpyHostToDevice, stream_)) != cudaSuccess) {
      cudaStreamSynchronize(stream_);
      freePart(&p);
      return cudaFail("submit: copying the descriptors", e);
    }
    const int blocks = batch::batchBlocks(p.num_chunks, max_blocks_);
    batch::batchCopyKernel<<<blocks, batch::kBatchThreads, 0, stream_>>>(
        p.copies, p.chunks, p.num_chunks, p.progress, states_dev_, (uint32_t)first, cancel_dev_);
    if ((e = cudaGetLastError()) != cudaSuccess || (e = cudaEventRecord(p.done, stream_)) != cudaSuccess) {
      cudaStreamSynchronize(stream_);
      freePart(&p);
      return cudaFail("submit: launching the batch kernel", e);
    }
    try {
      parts_.push_back(p);
    } catch (const std::bad_alloc&) {
      cudaStreamSynchronize(stream_);
      freePart(&p);
      return fail(kOutOfMemory, "submit: out of memory");
    }
    submitted_ += count;
    return ok();
  }

  int states(int first, int count, int32_t* out) override {
    if (init_status_ != kOk) return fail(init_status_, last_error_);
    if (out == nullptr || first < 0 || count < 0 || count > capacity_ - first) {
      return fail(kInvalidArgument, "states: range outside the batch");
    }
    for (int i = 0; i < count; ++i) out[i] = states_[first + i];
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    return ok();
  }

  int wait(int64_t timeout_ns) override {
    if (init_status_ != kOk) return fail(init_status_, last_error_);
    cudaEvent_t last = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (parts_.empty()) return kOk;
      last = parts_.back().done;
    }
    const auto end = std::chrono::steady_clock::now() + std::chrono::nanoseconds(timeout_ns < 0 ? 0 : timeout_ns);
    for (;;) {
      const cudaError_t e = cudaEventQuery(last);
      if (e == cudaSuccess) return kOk;
      if (e != cudaErrorNotReady) return cudaFail("wait: cudaEventQuery", e);
      if (std::chrono::steady_clock::now() >= end) return fail(kTimeout, "wait: the batch kernel still runs");
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

  int cancel() override {
    if (init_status_ != kOk) return fail(init_status_, last_error_);
    *cancel_ = 1;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    return ok();
  }

 private:
  struct Part {
    BatchCopy* copies = nullptr;
    BatchChunk* chunks = nullptr;
    BatchProgress* progress = nullptr;
    cudaEvent_t done = nullptr;
    uint64_t num_chunks = 0;
  };

  int init(std::string* why) {
    cuda_detail::DeviceGuard guard;
    cudaError_t e = cudaSetDevice(device_);
    if (e != cudaSuccess) return cudaWhy("cudaSetDevice", e, why);
    int sms = 0;
    if ((e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device_)) != cudaSuccess) {
      return cudaWhy("cudaDeviceGetAttribute", e, why);
    }
    max_blocks_ = sms * 8;
    if ((e = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)) != cudaSuccess) {
      return cudaWhy("cudaStreamCreateWithFlags", e, why);
    }
    const size_t bytes = (size_t)(capacity_ + 1) * sizeof(int32_t);
    if ((e = cudaHostAlloc(&host_words_, bytes, cudaHostAllocMapped | cudaHostAllocPortable)) != cudaSuccess) {
      return cudaWhy("cudaHostAlloc(states)", e, why);
    }
    std::memset(host_words_, 0, bytes);
    void* dev = nullptr;
    if ((e = cudaHostGetDevicePointer(&dev, host_words_, 0)) != cudaSuccess) {
      return cudaWhy("cudaHostGetDevicePointer", e, why);
    }
    states_ = (volatile int32_t*)host_words_;
    cancel_ = states_ + capacity_;
    states_dev_ = (volatile int32_t*)dev;
    cancel_dev_ = states_dev_ + capacity_;
    return kOk;
  }

  static int cudaWhy(const char* call, cudaError_t e, std::string* why) {
    cudaGetLastError();
    *why = cuda_detail::describe(call, e);
    return cuda_detail::statusOf(e);
  }

  int cudaFail(const char* call, cudaError_t e) {
    std::string why;
    const int st = cudaWhy(call, e, &why);
    return fail(st, why);
  }

  void freePart(Part* p) {
    cudaFree(p->copies);
    cudaFree(p->chunks);
    cudaFree(p->progress);
    if (p->done != nullptr) cudaEventDestroy(p->done);
    cudaGetLastError();
  }

  const int device_;
  const int capacity_;
  int max_blocks_ = 132 * 8;
  std::mutex mu_;
  int submitted_ = 0;
  cudaStream_t stream_ = nullptr;
  void* host_words_ = nullptr;
  volatile int32_t* states_ = nullptr;
  volatile int32_t* cancel_ = nullptr;
  volatile int32_t* states_dev_ = nullptr;
  volatile int32_t* cancel_dev_ = nullptr;
  std::vector<Part> parts_;
};

}  // namespace

TransferBatch* createCudaTransferBatch(int device, int capacity) {
  return new (std::nothrow) CudaTransferBatch(device, capacity);
}

}  // namespace te4j
