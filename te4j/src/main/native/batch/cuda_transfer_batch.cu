// cuda_transfer_batch.cu — te4j::TransferBatch on the CUDA platform: each submitted part is one
// launch of the batch kernel (batch/kernels/batch_copy_kernel.cuh) on the batch's own stream,
// over descriptor arrays in device memory. Remote addresses are peers' memory mapped through
// CUDA IPC (or this process's own), so READ and WRITE are both loads and stores of the kernel.
//
// Why everything is allocated when the batch is made: cudaMalloc and copies from pageable
// memory each cost tens of microseconds to milliseconds, more than a whole batch of small
// blocks takes to move. The batch holds device arrays for its capacity (copies, progress and a
// chunk pool) and pinned staging of the same layout; a part writes its slice of the staging,
// one asynchronous copy moves it, and the kernel follows on the same stream. Parts use
// disjoint slices, so no staging is rewritten while a copy of it may still be pending.
//
// Request states and the cancel word are in device memory (the kernel reads the cancel word
// once per chunk, and loads from host memory do not overlap: see the kernel's header). Each
// part's states come to pinned host memory in one copy after its kernel, where the host reads
// them with plain loads; cancel() stores the host's word and copies it to the device's on a
// stream of its own, so it reaches a kernel that is running. wait() polls the event recorded
// after the last part, spinning briefly before it sleeps: a batch's kernel never waits on
// anything, so it always ends.
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
    if (cancel_ != nullptr) signalCancel();
    // The kernels end on their own (they never wait); cancel makes the rest skip their copies.
    if (stream_ != nullptr) cudaStreamSynchronize(stream_);
    release(&arrays_);
    for (Arrays& a : overflows_) release(&a);
    if (done_ != nullptr) cudaEventDestroy(done_);
    if (cancel_stream_ != nullptr) cudaStreamSynchronize(cancel_stream_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    if (cancel_stream_ != nullptr) cudaStreamDestroy(cancel_stream_);
    if (host_words_ != nullptr) cudaFreeHost(host_words_);
    if (dev_words_ != nullptr) cudaFree(dev_words_);
    cudaGetLastError();
  }

  int capacity() const override { return capacity_; }

  int submit(int first, int count, const int32_t* opcodes, const uint64_t* local,
             const uint64_t* remote, const uint64_t* lengths) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (init_status_ != kOk) return fail(init_status_, last_error_);
    if (count <= 0 || opcodes == nullptr || local == nullptr || remote == nullptr ||
        lengths == nullptr) {
      return fail(kInvalidArgument, "submit: empty part or null descriptor array");
    }
    if (first != submitted_ || count > capacity_ - first) {
      return fail(kInvalidArgument, "submit: requests [" + std::to_string(first) + ", +" +
                                        std::to_string(count) + ") do not follow the " +
                                        std::to_string(submitted_) + " submitted within capacity " +
                                        std::to_string(capacity_));
    }
    if (*cancel_ != 0) return fail(kIllegalState, "submit: the batch was cancelled");
    BatchCopy* copies = stage_.copies + first;
    BatchProgress* progress = stage_.progress + first;
    // Checked first: a length over 2^40 would wrap the chunk arithmetic below.
    batch::DescriptorProblem problem;
    const int bad = batch::firstBadDescriptor(count, opcodes, local, remote, lengths, &problem);
    if (bad >= 0) {
      return fail(kInvalidArgument, "submit: request " + std::to_string(first + bad) + " has " +
                                        batch::describe(problem));
    }
    uint64_t n = 0;
    for (int i = 0; i < count; ++i) {
      const bool read = opcodes[i] == kBatchRead;
      copies[i] = BatchCopy{read ? remote[i] : local[i], read ? local[i] : remote[i], lengths[i]};
      n += batch::piecesOf(lengths[i]);
    }
    if (n > kMaxChunksPerPart) {
      return fail(kInvalidArgument, "submit: the part needs " + std::to_string(n) +
                                        " chunks, at most " + std::to_string(kMaxChunksPerPart) +
                                        ": submit it in parts");
    }
    cuda_detail::DeviceGuard guard;
    cudaError_t e = cudaSetDevice(device_);
    if (e != cudaSuccess) return cudaFail("cudaSetDevice", e);
    // The part's chunks go to the rest of the pool, or, when it is used up, to arrays of its own.
    Arrays overflow;
    BatchChunk* stage_chunks = stage_.chunks + chunks_used_;
    BatchChunk* dev_chunks = dev_.chunks + chunks_used_;
    const bool fits = n <= chunk_capacity_ - chunks_used_;
    if (!fits) {
      if (int st = allocate(0, n, &overflow)) return st;
      stage_chunks = overflow.stage.chunks;
      dev_chunks = overflow.dev.chunks;
    }
    if (batch::splitIntoChunks(copies, (uint32_t)count, stage_chunks, n, progress) != n) {
      release(&overflow);
      return fail(kInvalidArgument, "submit: cannot split the part into chunks");
    }
    // Pinned sources: these copies are asynchronous, ordered before the kernel on the stream.
    if ((e = cudaMemcpyAsync(dev_.copies + first, copies, count * sizeof(BatchCopy),
                             cudaMemcpyHostToDevice, stream_)) != cudaSuccess ||
        (e = cudaMemcpyAsync(dev_.progress + first, progress, count * sizeof(BatchProgress),
                             cudaMemcpyHostToDevice, stream_)) != cudaSuccess ||
        (e = cudaMemcpyAsync(dev_chunks, stage_chunks, n * sizeof(BatchChunk),
                             cudaMemcpyHostToDevice, stream_)) != cudaSuccess) {
      cudaStreamSynchronize(stream_);
      release(&overflow);
      return cudaFail("submit: copying the descriptors", e);
    }
    const int blocks = batch::batchBlocks(n, max_blocks_);
    batch::batchCopyKernel<<<blocks, batch::kBatchThreads, 0, stream_>>>(
        dev_.copies + first, dev_chunks, n, dev_.progress + first, dev_.states + first,
        dev_.cancel);
    if ((e = cudaGetLastError()) != cudaSuccess ||
        (e = cudaMemcpyAsync(const_cast<int32_t*>(states_) + first, dev_.states + first,
                             count * sizeof(int32_t), cudaMemcpyDeviceToHost, stream_)) !=
            cudaSuccess ||
        (e = cudaEventRecord(done_, stream_)) != cudaSuccess) {
      cudaStreamSynchronize(stream_);
      release(&overflow);
      return cudaFail("submit: launching the batch kernel", e);
    }
    if (!fits) {
      try {
        overflows_.push_back(overflow);
      } catch (const std::bad_alloc&) {
        cudaStreamSynchronize(stream_);
        release(&overflow);
        return fail(kOutOfMemory, "submit: out of memory");
      }
    } else {
      chunks_used_ += n;
    }
    submitted_ += count;
    launched_ = true;
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
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!launched_) return kOk;
    }
    const auto start = std::chrono::steady_clock::now();
    const auto end = start + std::chrono::nanoseconds(timeout_ns < 0 ? 0 : timeout_ns);
    // Spin first: a batch of small blocks ends in microseconds, and a sleep costs more than that.
    const auto spin_until = start + std::chrono::microseconds(200);
    for (;;) {
      const cudaError_t e = cudaEventQuery(done_);
      if (e == cudaSuccess) return kOk;
      if (e != cudaErrorNotReady) return cudaFail("wait: cudaEventQuery", e);
      const auto now = std::chrono::steady_clock::now();
      if (now >= end) return fail(kTimeout, "wait: the batch kernel still runs");
      if (now < spin_until) {
        std::this_thread::yield();
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(20));
      }
    }
  }

  int cancel() override {
    if (init_status_ != kOk) return fail(init_status_, last_error_);
    std::lock_guard<std::mutex> lock(mu_);
    const cudaError_t e = signalCancel();
    return e == cudaSuccess ? ok() : cudaFail("cancel: copying the cancel word", e);
  }

 private:
  // Descriptor arrays of one layout: copies and progress per request, then chunks.
  struct Layout {
    BatchCopy* copies = nullptr;
    BatchProgress* progress = nullptr;
    BatchChunk* chunks = nullptr;
    int32_t* states = nullptr;        // device layout only: the request states
    const int32_t* cancel = nullptr;  // device layout only: the cancel word
  };

  // The host's cancel word is set at once (submit refuses after it); the device's follows on
  // the cancel stream, which runs beside the batch's kernels.
  cudaError_t signalCancel() {
    *cancel_ = 1;
    cuda_detail::DeviceGuard guard;
    cudaError_t e = cudaSetDevice(device_);
    if (e == cudaSuccess) {
      e = cudaMemcpyAsync(dev_cancel_, const_cast<int32_t*>(cancel_), sizeof(int32_t),
                          cudaMemcpyHostToDevice, cancel_stream_);
    }
    if (e != cudaSuccess) cudaGetLastError();
    return e;
  }
  struct Arrays {
    Layout dev;    // device memory
    Layout stage;  // pinned host memory
    void* dev_block = nullptr;
    void* stage_block = nullptr;
  };

  int init(std::string* why) {
    cuda_detail::DeviceGuard guard;
    cudaError_t e = cudaSetDevice(device_);
    if (e != cudaSuccess) return cudaWhy("cudaSetDevice", e, why);
    int sms = 0;
    if ((e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device_)) !=
        cudaSuccess) {
      return cudaWhy("cudaDeviceGetAttribute", e, why);
    }
    // As many blocks as are resident at once: the grid strides over the chunks.
    int per_sm = 0;
    if ((e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(
             &per_sm, batch::batchCopyKernel, batch::kBatchThreads, 0)) != cudaSuccess) {
      return cudaWhy("cudaOccupancyMaxActiveBlocksPerMultiprocessor", e, why);
    }
    max_blocks_ = sms * (per_sm > 0 ? per_sm : 1);
    if ((e = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)) != cudaSuccess) {
      return cudaWhy("cudaStreamCreateWithFlags", e, why);
    }
    if ((e = cudaEventCreateWithFlags(&done_, cudaEventDisableTiming)) != cudaSuccess) {
      return cudaWhy("cudaEventCreateWithFlags", e, why);
    }
    if ((e = cudaStreamCreateWithFlags(&cancel_stream_, cudaStreamNonBlocking)) != cudaSuccess) {
      return cudaWhy("cudaStreamCreateWithFlags(cancel)", e, why);
    }
    // States and the cancel word: pinned on the host, the same words in device memory.
    const size_t bytes = (size_t)(capacity_ + 1) * sizeof(int32_t);
    if ((e = cudaHostAlloc(&host_words_, bytes, cudaHostAllocPortable)) != cudaSuccess) {
      return cudaWhy("cudaHostAlloc(states)", e, why);
    }
    std::memset(host_words_, 0, bytes);
    if ((e = cudaMalloc(&dev_words_, bytes)) != cudaSuccess) {
      dev_words_ = nullptr;
      return cudaWhy("cudaMalloc(states)", e, why);
    }
    if ((e = cudaMemset(dev_words_, 0, bytes)) != cudaSuccess)
      return cudaWhy("cudaMemset(states)", e, why);
    states_ = (volatile int32_t*)host_words_;
    cancel_ = states_ + capacity_;
    dev_states_ = static_cast<int32_t*>(dev_words_);
    dev_cancel_ = dev_states_ + capacity_;
    // Two chunks per request: every request up to 32 KiB, and larger ones while the pool lasts.
    chunk_capacity_ = 2 * (uint64_t)capacity_;
    if (allocate((uint64_t)capacity_, chunk_capacity_, &arrays_) != kOk) {
      *why = last_error_;
      return kOutOfMemory;
    }
    dev_ = arrays_.dev;
    stage_ = arrays_.stage;
    dev_.states = dev_states_;
    dev_.cancel = dev_cancel_;
    return kOk;
  }

  // One device block and one pinned block for `requests` copies and `chunks` chunks.
  int allocate(uint64_t requests, uint64_t chunks, Arrays* out) {
    const size_t copies_bytes = align(requests * sizeof(BatchCopy));
    const size_t progress_bytes = align(requests * sizeof(BatchProgress));
    const size_t total = copies_bytes + progress_bytes + align(chunks * sizeof(BatchChunk));
    cudaError_t e = cudaMalloc(&out->dev_block, total);
    if (e != cudaSuccess) {
      out->dev_block = nullptr;
      return cudaFail("descriptor arrays (device memory)", e);
    }
    if ((e = cudaHostAlloc(&out->stage_block, total, cudaHostAllocPortable)) != cudaSuccess) {
      out->stage_block = nullptr;
      release(out);
      return cudaFail("descriptor staging (pinned host memory)", e);
    }
    out->dev = carve(out->dev_block, copies_bytes, progress_bytes);
    out->stage = carve(out->stage_block, copies_bytes, progress_bytes);
    return kOk;
  }

  static size_t align(size_t bytes) { return (bytes + 255) & ~(size_t)255; }

  static Layout carve(void* block, size_t copies_bytes, size_t progress_bytes) {
    char* p = static_cast<char*>(block);
    return Layout{reinterpret_cast<BatchCopy*>(p),
                  reinterpret_cast<BatchProgress*>(p + copies_bytes),
                  reinterpret_cast<BatchChunk*>(p + copies_bytes + progress_bytes)};
  }

  static void release(Arrays* a) {
    if (a->dev_block != nullptr) cudaFree(a->dev_block);
    if (a->stage_block != nullptr) cudaFreeHost(a->stage_block);
    a->dev_block = nullptr;
    a->stage_block = nullptr;
    cudaGetLastError();
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

  const int device_;
  const int capacity_;
  int max_blocks_ = 132 * 8;
  std::mutex mu_;
  int submitted_ = 0;
  cudaStream_t stream_ = nullptr;
  void* host_words_ = nullptr;
  volatile int32_t* states_ = nullptr;
  volatile int32_t* cancel_ = nullptr;
  cudaStream_t cancel_stream_ = nullptr;
  void* dev_words_ = nullptr;
  int32_t* dev_states_ = nullptr;
  int32_t* dev_cancel_ = nullptr;
  cudaEvent_t done_ = nullptr;  // recorded after each part's kernel
  bool launched_ = false;
  Arrays arrays_;
  Layout dev_;
  Layout stage_;
  uint64_t chunk_capacity_ = 0;
  uint64_t chunks_used_ = 0;
  std::vector<Arrays> overflows_;  // chunk arrays of parts the pool could not hold
};

}  // namespace

TransferBatch* createCudaTransferBatch(int device, int capacity) {
  return new (std::nothrow) CudaTransferBatch(device, capacity);
}

}  // namespace te4j
