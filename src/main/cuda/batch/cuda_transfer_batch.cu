// cuda_transfer_batch.cu — te4j::TransferBatch on the CUDA platform: each submitted part is one
// launch of the batch kernel (batch/kernels/batch_copy_kernel.cuh) on the batch's own stream,
// over descriptor arrays in device memory. Remote addresses are peers' memory mapped through
// CUDA IPC (or this process's own), so READ and WRITE are both loads and stores of the kernel.
//
// The descriptors are host memory the caller writes in place (TransferBatch::descriptors); a
// submit reads its part's slots once, into the copies the kernel takes. The CUDA platform has no
// RDMA route (its queue pairs are posted by kernels only): a part that names one is refused.
//
// Why a submit allocates nothing: cudaMalloc and copies from pageable memory each cost tens of
// microseconds to milliseconds, more than a whole batch of small blocks takes to move. The
// batch runs on a set of resources (batch/cuda_batch_resources.h, pooled across batches): a
// device arena for the descriptors and a pinned staging arena of the same size. A part writes
// its descriptors as one contiguous block of the staging (PartLayout: copies, progress,
// chunks), one asynchronous copy moves the block, and the kernel follows on the same stream: a
// submit is three CUDA calls (copy, launch, states back) and an event record. Parts use
// disjoint blocks, so no staging is rewritten while a copy of it may still be pending; a part
// the arena's rest cannot hold gets a block of its own.
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
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "batch/cuda_batch_resources.h"
#include "batch/kernels/batch_copy_kernel.cuh"
#include "batch/transfer_batch_base.h"
#include "batch/transfer_batches.h"
#include "core/cuda_errors.cuh"
#include "core/device_scope.cuh"

namespace te4j {
namespace {

using batch::BatchCopy;
using batch::CudaBatchResources;
using batch::CudaBlock;
using batch::PartLayout;

// More chunks in one part than this are refused: submit the batch in parts.
constexpr uint64_t kMaxChunksPerPart = 1ull << 24;

// The batch kernel's blocks resident at once on `device` (its grid strides over the chunks), or
// a Status. Asked once per device: the occupancy query is part of what made a batch slow to make.
int residentBlocks(int device, std::string* why) {
  static std::mutex mu;
  static std::vector<int> known;  // by device; 0 = not asked yet
  std::lock_guard<std::mutex> lock(mu);
  if (device < (int)known.size() && known[(size_t)device] > 0) return known[(size_t)device];
  int sms = 0;
  cudaError_t e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (e != cudaSuccess) {
    cudaGetLastError();
    *why = cuda_detail::describe("cudaDeviceGetAttribute", e);
    return cuda_detail::statusOf(e);
  }
  int per_sm = 0;
  e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, batch::batchCopyKernel,
                                                    batch::kBatchThreads, 0);
  if (e != cudaSuccess) {
    cudaGetLastError();
    *why = cuda_detail::describe("cudaOccupancyMaxActiveBlocksPerMultiprocessor", e);
    return cuda_detail::statusOf(e);
  }
  try {
    if (device >= (int)known.size()) known.resize((size_t)device + 1, 0);
  } catch (const std::bad_alloc&) {
    *why = "out of memory";
    return kOutOfMemory;
  }
  known[(size_t)device] = sms * (per_sm > 0 ? per_sm : 1);
  return known[(size_t)device];
}

class CudaTransferBatch final : public batch::TransferBatchBase {
 public:
  CudaTransferBatch(int device, int capacity) : TransferBatchBase(capacity), device_(device) {
    descriptors_.reset(new (std::nothrow) BatchDescriptor[static_cast<size_t>(capacity)]);
    if (!descriptors_) {
      init_status_ = kOutOfMemory;
      last_error_ = "TransferBatch: out of memory for " + std::to_string(capacity) + " descriptors";
      return;
    }
    std::string why;
    int st = kOk;
    {
      cuda_detail::DeviceScope scope(device, cuda_detail::DeviceScope::kBind);
      const cudaError_t e = scope.status();
      st = e == cudaSuccess ? residentBlocks(device, &why) : cuda_detail::statusOf(e);
      if (e != cudaSuccess) {
        cudaGetLastError();
        why = cuda_detail::describe("cudaSetDevice", e);
      }
    }
    if (st > 0) {
      max_blocks_ = st;
      r_ = batch::takeCudaBatchResources(device, capacity, &st, &why);
    }
    if (r_ == nullptr) {
      init_status_ = st;
      last_error_ = "TransferBatch(cuda device " + std::to_string(device) + "): " + why;
      return;
    }
    states_ = r_->host_words;
    cancel_ = states_ + r_->capacity;
    dev_states_ = r_->dev_words;
    dev_cancel_ = dev_states_ + r_->capacity;
  }

  ~CudaTransferBatch() override {
    if (r_ == nullptr) return;
    cuda_detail::DeviceScope scope(device_, cuda_detail::DeviceScope::kBind);
    if (scope.status() != cudaSuccess) return;  // a lost device: nothing to give back
    // The kernels end on their own (they never wait); cancel makes the rest skip their copies.
    if (launched_) signalCancel();
    const bool quiet = cudaStreamSynchronize(r_->stream) == cudaSuccess &&
                       cudaStreamSynchronize(r_->cancel_stream) == cudaSuccess;
    cudaGetLastError();
    for (CudaBlock& b : overflows_) batch::releaseCudaBlock(&b);
    // Only a set whose streams finished cleanly is reused.
    if (quiet) {
      batch::giveBackCudaBatchResources(r_);
    } else {
      batch::discardCudaBatchResources(r_);
    }
  }

  BatchDescriptor* descriptors() override { return r_ != nullptr ? descriptors_.get() : nullptr; }

  int attachRdma(RdmaTransport*) override {
    if (init_status_ != kOk) return fail(init_status_, last_error_);
    return fail(kUnavailable,
                "attachRdma: a CUDA batch has no RDMA route (its queue pairs are device memory)");
  }

 protected:
  int rdmaRanks() override { return 0; }

  int run(const batch::CheckedPart& part) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (part.mapped != part.count) {
      return fail(kUnavailable, "submit: a CUDA batch runs mapped requests only");
    }
    if (*cancel_ != 0) return fail(kIllegalState, "submit: the batch was cancelled");
    const int first = part.first;
    const int count = part.count;
    const BatchDescriptor* d = descriptors_.get() + first;
    uint64_t n = 0;
    for (int i = 0; i < count; ++i) n += batch::piecesOf(d[i].length);
    if (n > kMaxChunksPerPart) {
      return fail(kInvalidArgument, "submit: the part needs " + std::to_string(n) +
                                        " chunks, at most " + std::to_string(kMaxChunksPerPart) +
                                        ": submit it in parts");
    }
    cuda_detail::DeviceScope scope(device_, cuda_detail::DeviceScope::kBind);
    cudaError_t e = scope.status();
    if (e != cudaSuccess) return cudaFail("cudaSetDevice", e);
    // The part's block goes to the rest of the arena, or, when it is used up, to one of its own.
    const PartLayout layout = PartLayout::of((uint64_t)count, n);
    CudaBlock overflow;
    char* stage = static_cast<char*>(r_->arena.stage) + arena_used_;
    char* dev = static_cast<char*>(r_->arena.dev) + arena_used_;
    const bool fits = layout.bytes <= r_->arena.bytes - arena_used_;
    if (!fits) {
      std::string why;
      if (int st = batch::allocateCudaBlock(layout.bytes, &overflow, &why)) return fail(st, why);
      stage = static_cast<char*>(overflow.stage);
      dev = static_cast<char*>(overflow.dev);
    }
    BatchCopy* copies = layout.copiesIn(stage);
    for (int i = 0; i < count; ++i) {
      const bool read = d[i].opcode == kBatchRead;
      copies[i] =
          BatchCopy{read ? d[i].remote : d[i].local, read ? d[i].local : d[i].remote, d[i].length};
    }
    if (batch::splitIntoChunks(copies, (uint32_t)count, layout.chunksIn(stage), n,
                               layout.progressIn(stage)) != n) {
      batch::releaseCudaBlock(&overflow);
      return fail(kInvalidArgument, "submit: cannot split the part into chunks");
    }
    // A pinned source: the copy is asynchronous, ordered before the kernel on the stream.
    if ((e = cudaMemcpyAsync(dev, stage, layout.bytes, cudaMemcpyHostToDevice, r_->stream)) !=
        cudaSuccess) {
      cudaStreamSynchronize(r_->stream);
      batch::releaseCudaBlock(&overflow);
      return cudaFail("submit: copying the descriptors", e);
    }
    const int blocks = batch::batchBlocks(n, max_blocks_);
    batch::batchCopyKernel<<<blocks, batch::kBatchThreads, 0, r_->stream>>>(
        layout.copiesIn(dev), layout.chunksIn(dev), n, layout.progressIn(dev), dev_states_ + first,
        dev_cancel_);
    if ((e = cudaGetLastError()) != cudaSuccess ||
        (e = cudaMemcpyAsync(const_cast<int32_t*>(states_) + first, dev_states_ + first,
                             count * sizeof(int32_t), cudaMemcpyDeviceToHost, r_->stream)) !=
            cudaSuccess ||
        (e = cudaEventRecord(r_->done, r_->stream)) != cudaSuccess) {
      cudaStreamSynchronize(r_->stream);
      batch::releaseCudaBlock(&overflow);
      return cudaFail("submit: launching the batch kernel", e);
    }
    if (!fits) {
      try {
        overflows_.push_back(overflow);
      } catch (const std::bad_alloc&) {
        cudaStreamSynchronize(r_->stream);
        batch::releaseCudaBlock(&overflow);
        return fail(kOutOfMemory, "submit: out of memory");
      }
    } else {
      arena_used_ += layout.bytes;
    }
    launched_ = true;
    return ok();
  }

 public:
  int states(int first, int count, int32_t* out) override {
    if (init_status_ != kOk) return fail(init_status_, last_error_);
    if (out == nullptr || first < 0 || count < 0 || count > capacity() - first) {
      return fail(kInvalidArgument, "states: range outside the batch");
    }
    for (int i = 0; i < count; ++i) out[i] = states_[first + i];
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    return ok();
  }

  int syndromes(int first, int count, int32_t* out) override {
    if (init_status_ != kOk) return fail(init_status_, last_error_);
    if (out == nullptr || first < 0 || count < 0 || count > capacity() - first) {
      return fail(kInvalidArgument, "syndromes: range outside the batch");
    }
    for (int i = 0; i < count; ++i) out[i] = 0;  // no RDMA route
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
      const cudaError_t e = cudaEventQuery(r_->done);
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
  // The host's cancel word is set at once (submit refuses after it); the device's follows on
  // the cancel stream, which runs beside the batch's kernels.
  cudaError_t signalCancel() {
    *cancel_ = 1;
    cuda_detail::DeviceScope scope(device_, cuda_detail::DeviceScope::kBind);
    cudaError_t e = scope.status();
    if (e == cudaSuccess) {
      e = cudaMemcpyAsync(dev_cancel_, const_cast<int32_t*>(cancel_), sizeof(int32_t),
                          cudaMemcpyHostToDevice, r_->cancel_stream);
    }
    if (e != cudaSuccess) cudaGetLastError();
    return e;
  }

  int cudaFail(const char* call, cudaError_t e) {
    cudaGetLastError();
    return fail(cuda_detail::statusOf(e), cuda_detail::describe(call, e));
  }

  const int device_;
  std::unique_ptr<BatchDescriptor[]> descriptors_;
  CudaBatchResources* r_ = nullptr;  // taken from the pool, given back by the destructor
  int max_blocks_ = 0;
  std::mutex mu_;
  volatile int32_t* states_ = nullptr;  // pinned: the requests' states, read by states()
  volatile int32_t* cancel_ = nullptr;  // pinned: the host's cancel word
  int32_t* dev_states_ = nullptr;
  int32_t* dev_cancel_ = nullptr;
  bool launched_ = false;
  uint64_t arena_used_ = 0;
  std::vector<CudaBlock> overflows_;  // blocks of parts the arena's rest could not hold
};

}  // namespace

TransferBatch* createCudaTransferBatch(int device, int capacity) {
  return new (std::nothrow) CudaTransferBatch(device, capacity);
}

}  // namespace te4j
