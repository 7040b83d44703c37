// cuda_transfer_list.cu — te4j::TransferList on the CUDA platform: the copies, their chunks,
// decision and state words live in device memory from create on (one copy, here), and a post
// is one launch of the list kernel (batch/kernels/list_copy_kernel.cuh) over the range's
// chunks, on the list's own stream.
//
// Why a post is this cheap: the host work of a batch submit (building copies and chunks,
// copying them to the device) is done once; the chunks of a range are contiguous because they
// are laid out in request order, so a range is a first chunk and a count (prefix sums made at
// create). The kernel writes the post's completion record to pinned host memory, so poll() and
// wait() are loads, and cancel() a copy of one word on the cancel stream, as for the batch.
//
// Resources come from the batches' pool (batch/cuda_batch_resources.h): the streams, the
// pinned words (the record at their start, then room to read states into) and the arena (the
// device block); a list whose chunks do not fit the arena gets a block of its own.
#include <cuda_runtime.h>

#include <chrono>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "batch/cuda_batch_resources.h"
#include "batch/kernels/list_copy_kernel.cuh"
#include "batch/transfer_lists.h"
#include "core/cuda_errors.cuh"
#include "core/device_scope.cuh"

namespace te4j {
namespace {

using batch::BatchChunk;
using batch::BatchCopy;
using batch::CudaBatchResources;
using batch::CudaBlock;
using batch::ListControl;
using batch::ListRecord;

// The pinned words hold the record first, then the states read back for states().
constexpr int kRecordWords = static_cast<int>(sizeof(ListRecord) / sizeof(int32_t));
static_assert(sizeof(ListRecord) % sizeof(int32_t) == 0, "the record is whole words");

// Where the list's sections lie in its device block, each 8-byte aligned.
struct ListLayout {
  uint64_t progress_at;
  uint64_t states_at;
  uint64_t control_at;
  uint64_t chunks_at;
  uint64_t bytes;

  static ListLayout of(uint64_t copies, uint64_t chunks) {
    ListLayout l;
    l.progress_at = align8(copies * sizeof(BatchCopy));
    l.states_at = l.progress_at + copies * sizeof(unsigned long long);
    l.control_at = l.states_at + align8(copies * sizeof(int32_t));
    l.chunks_at = l.control_at + align8(sizeof(ListControl));
    l.bytes = l.chunks_at + chunks * sizeof(BatchChunk);
    return l;
  }
  static uint64_t align8(uint64_t b) { return (b + 7) & ~(uint64_t)7; }
};

// More chunks than this are refused: prepare the requests as several lists.
constexpr uint64_t kMaxListChunks = 1ull << 26;

// The list kernel's blocks resident at once on `device`, or a Status; asked once per device.
int listResidentBlocks(int device, std::string* why) {
  static std::mutex mu;
  static std::vector<int> known;  // by device; 0 = not asked yet
  std::lock_guard<std::mutex> lock(mu);
  if (device < (int)known.size() && known[(size_t)device] > 0) return known[(size_t)device];
  int sms = 0;
  cudaError_t e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  int per_sm = 0;
  if (e == cudaSuccess) {
    e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, batch::listCopyKernel,
                                                      batch::kListThreads, 0);
  }
  if (e != cudaSuccess) {
    cudaGetLastError();
    *why = cuda_detail::describe("the list kernel's occupancy", e);
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

class CudaTransferList final : public TransferList {
 public:
  CudaTransferList(int device, int count, const int32_t* opcodes, const uint64_t* local,
                   const uint64_t* remote, const uint64_t* lengths)
      : device_(device), count_(count) {
    std::string why;
    const int st = init(opcodes, local, remote, lengths, &why);
    if (st != kOk) {
      init_status_ = st;
      last_error_ = "TransferList(cuda device " + std::to_string(device) + "): " + why;
    }
  }

  ~CudaTransferList() override {
    if (r_ == nullptr) return;
    cuda_detail::DeviceScope scope(device_, cuda_detail::DeviceScope::kBind);
    if (scope.status() != cudaSuccess) return;  // a lost device: nothing to give back
    // The kernel never waits, so it ends; cancel makes the rest of it skip its copies.
    if (posted_ && !ended()) signalCancel();
    const bool quiet = cudaStreamSynchronize(r_->stream) == cudaSuccess &&
                       cudaStreamSynchronize(r_->cancel_stream) == cudaSuccess;
    cudaGetLastError();
    batch::releaseCudaBlock(&own_);
    if (quiet) {
      batch::giveBackCudaBatchResources(r_);
    } else {
      batch::discardCudaBatchResources(r_);
    }
  }

  int size() const override { return count_; }

  int post(int from, int to) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (init_status_ != kOk) return fail(init_status_, last_error_);
    if (from < 0 || to > count_ || from >= to) {
      return fail(kInvalidArgument, "post: range [" + std::to_string(from) + ", " +
                                        std::to_string(to) + ") is not inside the list's " +
                                        std::to_string(count_) + " requests");
    }
    if (posted_ && !ended()) return fail(kIllegalState, "post: the list's previous post runs");
    cuda_detail::DeviceScope scope(device_, cuda_detail::DeviceScope::kBind);
    cudaError_t e = scope.status();
    if (e != cudaSuccess) return cudaFail("cudaSetDevice", e);
    const uint64_t first = chunk_start_[(size_t)from];
    const uint64_t n = chunk_start_[(size_t)to] - first;
    const int blocks = batch::batchBlocks(n, max_blocks_);
    const unsigned long long epoch = epoch_ + 1;
    batch::listCopyKernel<<<blocks, batch::kListThreads, 0, r_->stream>>>(
        copies_, chunks_ + first, n, progress_, states_, control_, record_, epoch);
    if ((e = cudaGetLastError()) != cudaSuccess) return cudaFail("post: launching the list", e);
    epoch_ = epoch;
    posted_ = true;
    from_ = from;
    to_ = to;
    return ok();
  }

  int poll() override {
    std::lock_guard<std::mutex> lock(mu_);
    if (init_status_ != kOk) return fail(init_status_, last_error_);
    if (!posted_ || ended()) return 1;
    return streamCheck();
  }

  int wait(int64_t timeout_ns) override {
    if (init_status_ != kOk) return fail(init_status_, last_error_);
    unsigned long long epoch;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!posted_ || ended()) return kOk;
      epoch = epoch_;
    }
    const auto start = std::chrono::steady_clock::now();
    const auto end = start + std::chrono::nanoseconds(timeout_ns < 0 ? 0 : timeout_ns);
    // Spin first: a post of small blocks ends in microseconds, a sleep costs more than that.
    const auto spin_until = start + std::chrono::microseconds(200);
    for (int k = 0;; ++k) {
      if (doneEpoch() >= epoch) return kOk;
      if ((k & 63) == 63) {
        std::lock_guard<std::mutex> lock(mu_);
        const int st = streamCheck();
        if (st < 0) return st;
        if (st == 1) return kOk;
      }
      const auto now = std::chrono::steady_clock::now();
      if (now >= end) return fail(kTimeout, "wait: the list's post still runs");
      if (now >= spin_until) std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

  int cancel() override {
    std::lock_guard<std::mutex> lock(mu_);
    if (init_status_ != kOk) return fail(init_status_, last_error_);
    if (!posted_ || ended()) return ok();
    const cudaError_t e = signalCancel();
    return e == cudaSuccess ? ok() : cudaFail("cancel: copying the cancel word", e);
  }

  int skipped() override {
    std::lock_guard<std::mutex> lock(mu_);
    if (init_status_ != kOk) return fail(init_status_, last_error_);
    if (!posted_) return 0;
    if (!ended()) return fail(kIllegalState, "skipped: the post still runs");
    return (int)*reinterpret_cast<volatile unsigned int*>(&record_->skipped);
  }

  int states(int first, int count, int32_t* out) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (init_status_ != kOk) return fail(init_status_, last_error_);
    if (out == nullptr || first < 0 || count < 0 || count > count_ - first) {
      return fail(kInvalidArgument, "states: range outside the list");
    }
    if (posted_ && !ended()) return fail(kIllegalState, "states: the post still runs");
    const bool all_completed = *reinterpret_cast<volatile unsigned int*>(&record_->skipped) == 0;
    if (!posted_ || all_completed) {
      // Nothing was skipped: every request of the post completed, no copy needed.
      for (int i = 0; i < count; ++i) {
        const int at = first + i;
        out[i] = posted_ && at >= from_ && at < to_ ? kRequestCompleted : kRequestPending;
      }
      return ok();
    }
    cuda_detail::DeviceScope scope(device_, cuda_detail::DeviceScope::kBind);
    cudaError_t e = scope.status();
    int32_t* host = r_->host_words + kRecordWords;
    if (e == cudaSuccess) {
      e = cudaMemcpyAsync(host, states_ + first, (size_t)count * sizeof(int32_t),
                          cudaMemcpyDeviceToHost, r_->stream);
    }
    if (e == cudaSuccess) e = cudaStreamSynchronize(r_->stream);
    if (e != cudaSuccess) return cudaFail("states: reading the post's states", e);
    std::memcpy(out, host, (size_t)count * sizeof(int32_t));
    return ok();
  }

 private:
  int init(const int32_t* opcodes, const uint64_t* local, const uint64_t* remote,
           const uint64_t* lengths, std::string* why) {
    int st = kOk;
    {
      cuda_detail::DeviceScope scope(device_, cuda_detail::DeviceScope::kBind);
      const cudaError_t e = scope.status();
      if (e != cudaSuccess) {
        cudaGetLastError();
        *why = cuda_detail::describe("cudaSetDevice", e);
        return cuda_detail::statusOf(e);
      }
      st = listResidentBlocks(device_, why);
      if (st < 0) return st;
      max_blocks_ = st;
    }
    try {
      chunk_start_.resize((size_t)count_ + 1);
    } catch (const std::bad_alloc&) {
      *why = "out of memory for the chunk index";
      return kOutOfMemory;
    }
    uint64_t n = 0;
    for (int i = 0; i < count_; ++i) {
      chunk_start_[(size_t)i] = n;
      n += batch::piecesOf(lengths[i]);
    }
    chunk_start_[(size_t)count_] = n;
    if (n > kMaxListChunks) {
      *why = "the requests need " + std::to_string(n) + " chunks, at most " +
             std::to_string(kMaxListChunks) + ": prepare them as several lists";
      return kInvalidArgument;
    }
    // Room for the record and a state per request in the pinned words.
    r_ = batch::takeCudaBatchResources(device_, count_ + kRecordWords, &st, why);
    if (r_ == nullptr) return st;
    const ListLayout layout = ListLayout::of((uint64_t)count_, n);
    CudaBlock* block = &r_->arena;
    if (layout.bytes > r_->arena.bytes) {
      if ((st = batch::allocateCudaBlock(layout.bytes, &own_, why)) != kOk) return st;
      block = &own_;
    }
    char* stage = static_cast<char*>(block->stage);
    char* dev = static_cast<char*>(block->dev);
    BatchCopy* copies = reinterpret_cast<BatchCopy*>(stage);
    BatchChunk* chunks = reinterpret_cast<BatchChunk*>(stage + layout.chunks_at);
    for (int i = 0; i < count_; ++i) {
      const bool read = opcodes[i] == kBatchRead;
      copies[i] = BatchCopy{read ? remote[i] : local[i], read ? local[i] : remote[i], lengths[i]};
      const uint64_t pieces = batch::piecesOf(lengths[i]);
      uint64_t c = chunk_start_[(size_t)i];
      for (uint64_t p = 0; p < pieces; ++p) chunks[c++] = BatchChunk{(uint32_t)i, (uint32_t)p};
    }
    // Decision words of epoch 0 (no post), PENDING states, a clear control block.
    std::memset(stage + layout.progress_at, 0, layout.chunks_at - layout.progress_at);
    copies_ = reinterpret_cast<BatchCopy*>(dev);
    progress_ = reinterpret_cast<unsigned long long*>(dev + layout.progress_at);
    states_ = reinterpret_cast<int32_t*>(dev + layout.states_at);
    control_ = reinterpret_cast<ListControl*>(dev + layout.control_at);
    chunks_ = reinterpret_cast<BatchChunk*>(dev + layout.chunks_at);
    // Pinned and page-aligned: the kernel writes it through the unified address space.
    record_ = reinterpret_cast<ListRecord*>(r_->host_words);
    std::memset(record_, 0, sizeof(ListRecord));
    cuda_detail::DeviceScope scope(device_, cuda_detail::DeviceScope::kBind);
    cudaError_t e = scope.status();
    if (e == cudaSuccess) {
      e = cudaMemcpyAsync(dev, stage, layout.bytes, cudaMemcpyHostToDevice, r_->stream);
    }
    if (e == cudaSuccess) e = cudaStreamSynchronize(r_->stream);
    if (e != cudaSuccess) {
      cudaGetLastError();
      *why = cuda_detail::describe("copying the list's descriptors to the device", e);
      return cuda_detail::statusOf(e);
    }
    return kOk;
  }

  unsigned long long doneEpoch() const {
    const unsigned long long d =
        *reinterpret_cast<volatile unsigned long long*>(&record_->done_epoch);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);  // the record's skipped count was written before
    return d;
  }

  // Under mu_.
  bool ended() const { return doneEpoch() >= epoch_; }

  // Under mu_, the post not seen ended: 1 when the stream is idle (then the record must be
  // there), 0 while it runs, or the stream's error.
  int streamCheck() {
    cuda_detail::DeviceScope scope(device_, cuda_detail::DeviceScope::kBind);
    cudaError_t e = scope.status();
    if (e == cudaSuccess) e = cudaStreamQuery(r_->stream);
    if (e == cudaErrorNotReady) {
      cudaGetLastError();
      return 0;
    }
    if (e != cudaSuccess) return cudaFail("the list's stream", e);
    if (ended()) return 1;
    return fail(kDeviceFault, "the list's kernel ended without its completion record");
  }

  // Cancels posts up to the current one: the host's source word is pinned, and the copy is
  // awaited so that the source is not rewritten under it by a later cancel.
  cudaError_t signalCancel() {
    record_->cancel_src = epoch_;
    cuda_detail::DeviceScope scope(device_, cuda_detail::DeviceScope::kBind);
    cudaError_t e = scope.status();
    if (e == cudaSuccess) {
      e = cudaMemcpyAsync(&control_->cancel_epoch, &record_->cancel_src, sizeof(unsigned long long),
                          cudaMemcpyHostToDevice, r_->cancel_stream);
    }
    if (e == cudaSuccess) e = cudaStreamSynchronize(r_->cancel_stream);
    if (e != cudaSuccess) cudaGetLastError();
    return e;
  }

  int cudaFail(const char* call, cudaError_t e) {
    cudaGetLastError();
    return fail(cuda_detail::statusOf(e), cuda_detail::describe(call, e));
  }

  const int device_;
  const int count_;
  CudaBatchResources* r_ = nullptr;  // from the pool, given back by the destructor
  CudaBlock own_;                    // the device block when the arena is too small
  int max_blocks_ = 0;
  std::vector<uint64_t> chunk_start_;  // the first chunk of each request; [count_] = all
  BatchCopy* copies_ = nullptr;
  BatchChunk* chunks_ = nullptr;
  unsigned long long* progress_ = nullptr;
  int32_t* states_ = nullptr;
  ListControl* control_ = nullptr;
  ListRecord* record_ = nullptr;
  std::mutex mu_;
  unsigned long long epoch_ = 0;  // of the last post, guarded by mu_
  bool posted_ = false;
  int from_ = 0;
  int to_ = 0;
};

}  // namespace

TransferList* createCudaTransferList(int device, int count, const int32_t* opcodes,
                                     const uint64_t* local, const uint64_t* remote,
                                     const uint64_t* lengths) {
  return new (std::nothrow) CudaTransferList(device, count, opcodes, local, remote, lengths);
}

}  // namespace te4j
