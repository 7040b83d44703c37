// cuda_op_stream.cu — te4j::OpStream on the CUDA platform: te4j kernels on one stream.
//
// The stream is te4j's own (cudaStreamNonBlocking, so it never serialises with the legacy
// default stream) or a user's non-default stream (wrapCuda). Every op is one kernel launch and
// nothing else — no host synchronisation, no pageable copies — so every op can be captured into
// a CUDA graph. Errors found on the device (a waitSignal past its deadline, a rank with no route)
// are recorded in the per-stream state of kernels/stream_state.cuh and returned by synchronize().
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "te4j/api.h"
#include "te4j/tuning.h"
#include "transport/device/comm_device.cuh"
#include "transport/device/ibgda/syndrome_text.cuh"
#include "stream/kernels/put_kernels.cuh"
#include "stream/kernels/signal_kernels.cuh"
#include "stream/kernels/wait_kernels.cuh"
#include "stream/put_launch.h"
#include "core/cuda_bridge.h"
#include "core/cuda_errors.cuh"
#include "stream/copy_engine_route.cuh"
#include "stream/body_path.h"
#include "core/device_scope.cuh"
#include "p2p/peer_table_mirror.h"
#include "rdma/device_error_records.h"

using mooncake::device::CommCtx;

namespace te4j {
namespace cuda {
namespace {

// Default put launch: 16 blocks x 512 threads saturate an NVLink peer copy on H100/H200 while
// leaving SMs to the application; smaller puts get fewer threads/blocks (1 per 16-byte word).
constexpr int kDefaultBlocks = 16;
constexpr int kDefaultThreads = 512;
constexpr int kMaxThreads = 1024;
// Longest wait we compute a deadline for (~31 years): keeps now + timeout inside int64.
constexpr int64_t kMaxWaitNs = 1000000000000000000LL;
// synchronize() polls cudaStreamQuery flat out this long, then sleeps between polls.
constexpr int64_t kSpinPhaseNs = 50000;
constexpr int64_t kParkNs = 20000;
// How long the destructor lets queued work drain before it leaks the per-stream state instead
// of freeing memory a kernel may still touch.
constexpr int64_t kCloseDrainNs = 10000000000LL;

const char* opName(uint32_t op) {
  switch (op) {
    case kMcOpPut: return "put";
    case kMcOpPutWithSignal: return "putWithSignal";
    case kMcOpSignal: return "signal";
    case kMcOpRedAdd: return "redAdd";
    case kMcOpWaitSignal: return "waitSignal";
  }
  return "op";
}

using cuda_detail::DeviceScope;

// The per-stream words (256 B scratch in device memory, 64 B status in mapped pinned host
// memory), recycled process-wide per device instead of freed.
//
// Why: cudaFree, cudaFreeHost, cudaMalloc and cudaHostAlloc are implicitly synchronising: work
// issued to the device after them (by ANY thread of the process) does not start until all work
// issued before them has finished. The software NIC's responder applies an incoming masked
// fetch-and-add by launching a kernel on this device (cuda_memory_port.cu). So an OpStream
// destroyed (or created) while other streams' kernels spin in an RDMA quiet parked that
// responder behind them; when the peer rank did the same, each rank's kernels waited for CQEs
// that only the other's parked responder could produce, until the device timeout (the GPU
// host's many-writers failure: every writer but the first, which finished and closed its stream,
// timed out with the NIC writing the missing CQEs only after the kernels had given up).
// Slabs of kSlabEntries are allocated the first time a device needs them (the first OpStream,
// created before any traffic in normal use) and never freed while the process lives.
constexpr size_t kSlabEntries = 64;

struct StreamWords {
  McStreamScratch* scratch = nullptr;
  McStreamStatus* status_host = nullptr;
  McStreamStatus* status_dev = nullptr;
};

class StreamWordPool {
 public:
  static StreamWordPool& instance() {
    static StreamWordPool* pool = new StreamWordPool();  // never destroyed: outlives streams
    return *pool;
  }

  /// Takes a set of words for `device` (current device already set), allocating a slab when
  /// none is free. Returns a CUDA error from the allocation, or cudaSuccess.
  cudaError_t take(int device, StreamWords* out) {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<StreamWords>& free_list = free_[device];
    if (free_list.empty()) {
      void* scratch = nullptr;
      cudaError_t e = cudaMalloc(&scratch, kSlabEntries * sizeof(McStreamScratch));
      if (e != cudaSuccess) return e;
      void* status = nullptr;
      e = cudaHostAlloc(&status, kSlabEntries * sizeof(McStreamStatus), cudaHostAllocMapped);
      if (e != cudaSuccess) {
        cudaFree(scratch);
        return e;
      }
      void* status_dev = nullptr;
      e = cudaHostGetDevicePointer(&status_dev, status, 0);
      if (e != cudaSuccess) {
        cudaFreeHost(status);
        cudaFree(scratch);
        return e;
      }
      for (size_t i = kSlabEntries; i-- > 0;) {
        StreamWords w;
        w.scratch = static_cast<McStreamScratch*>(scratch) + i;
        w.status_host = static_cast<McStreamStatus*>(status) + i;
        w.status_dev = static_cast<McStreamStatus*>(status_dev) + i;
        free_list.push_back(w);
      }
      slabs_.push_back(
          {device, static_cast<McStreamScratch*>(scratch), static_cast<McStreamStatus*>(status)});
    }
    *out = free_list.back();
    free_list.pop_back();
    return cudaSuccess;
  }

  /// Gives back words no queued or running kernel can touch any more.
  void give(int device, const StreamWords& words) {
    std::lock_guard<std::mutex> lock(mu_);
    free_[device].push_back(words);
  }

  /// Frees every slab whose words are all back in the pool (no stream uses them); the caller
  /// accepts the implicit device synchronisation (te4j::releaseCachedMemory). Returns the bytes
  /// freed.
  size_t releaseIdle() {
    std::lock_guard<std::mutex> lock(mu_);
    size_t freed = 0;
    for (size_t i = 0; i < slabs_.size();) {
      const Slab slab = slabs_[i];
      std::vector<StreamWords>& free_list = free_[slab.device];
      auto inSlab = [&slab](const StreamWords& w) {
        return w.scratch >= slab.scratch && w.scratch < slab.scratch + kSlabEntries;
      };
      if ((size_t)std::count_if(free_list.begin(), free_list.end(), inSlab) != kSlabEntries) {
        ++i;
        continue;
      }
      free_list.erase(std::remove_if(free_list.begin(), free_list.end(), inSlab), free_list.end());
      DeviceScope scope(slab.device);
      cudaFree(slab.scratch);
      cudaFreeHost(slab.status);
      cudaGetLastError();
      freed += kSlabEntries * (sizeof(McStreamScratch) + sizeof(McStreamStatus));
      slabs_.erase(slabs_.begin() + (long)i);
    }
    return freed;
  }

 private:
  struct Slab {
    int device;
    McStreamScratch* scratch;  // kSlabEntries of each, as allocated
    McStreamStatus* status;    // host address
  };
  std::mutex mu_;
  std::map<int, std::vector<StreamWords>> free_;
  std::vector<Slab> slabs_;
};

struct LaunchShape {
  unsigned blocks;
  unsigned threads;
};

class CudaOpStream final : public OpStream {
 public:
  CudaOpStream(int device, void* stream, bool owned) : device_(device), owned_(owned) {
    readKnobs();
    init_status_ = init(stream);
    init_error_ = last_error_;
  }

  ~CudaOpStream() override {
    DeviceScope scope(device_);
    if (stream_ != nullptr) {
      cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
      if (cudaStreamIsCapturing(stream_, &capture) == cudaSuccess &&
          capture != cudaStreamCaptureStatusNone) {
        cudaGraph_t graph = nullptr;
        if (cudaStreamEndCapture(stream_, &graph) == cudaSuccess && graph != nullptr) {
          cudaGraphDestroy(graph);
        }
      }
    }
    // Requests posted and not yet quieted complete before the stream's memory can go.
    if (stream_ != nullptr && init_status_ == kOk) (void)quietPosted("close");
    const bool idle = stream_ == nullptr || waitIdle(kCloseDrainNs) == cudaSuccess;
    // Never cudaFree/cudaFreeHost here: see StreamWordPool (they would stall every other
    // stream's RDMA ops behind this device's running kernels).
    if (idle && scratch_ != nullptr) {
      StreamWords words;
      words.scratch = scratch_;
      words.status_host = status_host_;
      words.status_dev = status_dev_;
      StreamWordPool::instance().give(device_, words);
    }  // else: deliberately leaked (256 B + 64 B): a running kernel may still write them.
    if (owned_ && stream_ != nullptr) cudaStreamDestroy(stream_);
    cudaGetLastError();  // leave no error of ours behind on the caller's thread
  }

  int platform() const override { return kPlatformCuda; }
  void* nativeHandle() const override { return stream_; }

  int put(const CommCtx* ctx, int dst_rank, void* recv_ptr, const void* send_ptr,
          std::size_t nbytes, int blocks, int threads) override {
    LaunchShape shape;
    int rc = checkPut("put", ctx, dst_rank, recv_ptr, send_ptr, nbytes, blocks, threads, &shape);
    if (rc != kOk) return rc;
    if (nbytes == 0) return ok();
    DeviceScope scope(device_);
    if (scope.status() != cudaSuccess) {
      return fail(kCudaError, cuda_detail::describe("put: cudaSetDevice", scope.status()));
    }
    const int route = routeOf(ctx, dst_rank);
    refreshKnobs();
    if (orderAfterPosted(ctx, dst_rank, route)) {
      mc_put_kernel<<<shape.blocks, shape.threads, 0, stream_>>>(*ctx, dst_rank, recv_ptr, send_ptr,
                                                                 nbytes, scratch_, status_dev_);
      notePosted(ctx, dst_rank, kMcOpPut);
      return checkLaunch("put");
    }
    const int ce = launchCopyEngine("put", shape, ctx, dst_rank, route, recv_ptr, send_ptr, nbytes,
                                    nullptr, 0);
    if (ce != kNotTaken) return ce;
    // The P2P kernels know no RDMA route: every other route takes them.
    if (launchMappedPut(shape, ctx, dst_rank, recv_ptr, send_ptr, nbytes, nullptr, 0)) {
      return checkLaunch("put");
    }
    mc_put_kernel<<<shape.blocks, shape.threads, 0, stream_>>>(*ctx, dst_rank, recv_ptr, send_ptr,
                                                               nbytes, scratch_, status_dev_);
    return checkLaunch("put");
  }

  int putWithSignal(const CommCtx* ctx, int dst_rank, void* recv_ptr, const void* send_ptr,
                    std::size_t nbytes, uint32_t* sig_ptr, uint32_t value, int blocks,
                    int threads) override {
    LaunchShape shape;
    int rc = checkPut("putWithSignal", ctx, dst_rank, recv_ptr, send_ptr, nbytes, blocks, threads,
                      &shape);
    if (rc == kOk) rc = checkWord("putWithSignal", sig_ptr);
    if (rc != kOk) return rc;
    DeviceScope scope(device_);
    if (scope.status() != cudaSuccess) {
      return fail(kCudaError,
                  cuda_detail::describe("putWithSignal: cudaSetDevice", scope.status()));
    }
    const int route = routeOf(ctx, dst_rank);
    refreshKnobs();
    if (orderAfterPosted(ctx, dst_rank, route)) {
      mc_put_signal_kernel<<<shape.blocks, shape.threads, 0, stream_>>>(
          *ctx, dst_rank, recv_ptr, send_ptr, nbytes, sig_ptr, value, scratch_, status_dev_);
      notePosted(ctx, dst_rank, kMcOpPutWithSignal);
      return checkLaunch("putWithSignal");
    }
    const int ce = launchCopyEngine("putWithSignal", shape, ctx, dst_rank, route, recv_ptr,
                                    send_ptr, nbytes, sig_ptr, value);
    if (ce != kNotTaken) return ce;
    if (launchMappedPut(shape, ctx, dst_rank, recv_ptr, send_ptr, nbytes, sig_ptr, value)) {
      return checkLaunch("putWithSignal");
    }
    mc_put_signal_kernel<<<shape.blocks, shape.threads, 0, stream_>>>(
        *ctx, dst_rank, recv_ptr, send_ptr, nbytes, sig_ptr, value, scratch_, status_dev_);
    return checkLaunch("putWithSignal");
  }

  int signal(const CommCtx* ctx, int dst_rank, uint32_t* sig_ptr, uint32_t value) override {
    return launchAdd(kMcOpSignal, ctx, dst_rank, sig_ptr, value);
  }

  int redAdd(const CommCtx* ctx, int dst_rank, uint32_t* ptr, uint32_t value) override {
    return launchAdd(kMcOpRedAdd, ctx, dst_rank, ptr, value);
  }

  int waitSignal(uint32_t* sig_ptr, uint32_t expected, int64_t timeout_ns) override {
    int rc = checkUsable("waitSignal");
    if (rc == kOk) rc = checkWord("waitSignal", sig_ptr);
    if (rc != kOk) return rc;
    if (timeout_ns < 0) return fail(kInvalidArgument, "waitSignal: timeout_ns < 0");
    DeviceScope scope(device_);
    if (scope.status() != cudaSuccess) {
      return fail(kCudaError, cuda_detail::describe("waitSignal: cudaSetDevice", scope.status()));
    }
    mc_wait_signal_kernel<<<1, 1, 0, stream_>>>(
        sig_ptr, expected, (uint64_t)std::min(timeout_ns, kMaxWaitNs), scratch_, status_dev_);
    return checkLaunch("waitSignal");
  }

  int synchronize(int64_t timeout_ns) override {
    int rc = checkUsable("synchronize");
    if (rc != kOk) return rc;
    if (timeout_ns < 0) return fail(kInvalidArgument, "synchronize: timeout_ns < 0");
    DeviceScope scope(device_);
    if (scope.status() != cudaSuccess) {
      return fail(kCudaError, cuda_detail::describe("synchronize: cudaSetDevice", scope.status()));
    }
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    cudaError_t e = cudaStreamIsCapturing(stream_, &capture);
    if (e != cudaSuccess) {
      return fail(kCudaError, cuda_detail::describe("synchronize: cudaStreamIsCapturing", e));
    }
    if (capture != cudaStreamCaptureStatusNone) {
      return fail(kIllegalState, "synchronize: the stream is capturing a graph (call endCapture)");
    }
    // Completions of the RDMA requests posted since the last quiet, in stream order.
    rc = quietPosted("synchronize");
    if (rc != kOk) return rc;
    e = waitIdle(std::min(timeout_ns, kMaxWaitNs));
    if (e == cudaErrorNotReady) {
      return fail(kTimeout, "synchronize timed out after " + std::to_string(timeout_ns / 1000000) +
                                " ms: work still running on the stream (each te4j waitSignal "
                                "is bounded by its own timeout)");
    }
    if (e != cudaSuccess) {
      // A kernel fault (te4j's or a user's) is DEVICE_FAULT: sticky, the process must restart.
      const bool fault = cuda_detail::statusOf(e) == kDeviceFault;
      return fail(fault ? kDeviceFault : kCudaError,
                  cuda_detail::describe("synchronize: cudaStreamQuery", e) +
                      (fault ? " (a kernel faulted: sticky error, this process's CUDA context is "
                               "unusable: restart the process; compute-sanitizer finds the access)"
                             : " (a sticky device error leaves the CUDA context unusable)"));
    }
    // Idle stream: every kernel's writes to the mapped status word are visible here.
    if (__atomic_load_n(&status_host_->code, __ATOMIC_ACQUIRE) == kMcStreamOk) {
      // Posts that upstream-style device functions could not return (error_record.cuh).
      const std::string posts = takeDeviceErrors(kPlatformCuda, device_);
      if (!posts.empty()) return fail(kRemoteError, "synchronize: " + posts);
      return ok();
    }
    McStreamStatus recorded;
    memcpy(&recorded, status_host_, sizeof(recorded));
    std::string message = describe(recorded);
    // Clear: host word now (nothing runs), device scratch in stream order before any later op.
    memset(status_host_, 0, sizeof(McStreamStatus));
    e = cudaMemsetAsync(scratch_, 0, sizeof(McStreamScratch), stream_);
    if (e != cudaSuccess) {
      message +=
          "; and clearing the stream state failed: " + cuda_detail::describe("cudaMemsetAsync", e);
    }
    return fail(statusOf(recorded), message);
  }

  int beginCapture() override {
    int rc = checkUsable("beginCapture");
    if (rc != kOk) return rc;
    DeviceScope scope(device_);
    if (scope.status() != cudaSuccess) {
      return fail(kCudaError, cuda_detail::describe("beginCapture: cudaSetDevice", scope.status()));
    }
    // Requests posted before the graph complete before it (not inside it).
    rc = quietPosted("beginCapture");
    if (rc != kOk) return rc;
    // ThreadLocal: only this thread's unsafe calls (e.g. a legacy-stream sync) break the capture.
    cudaError_t e = cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal);
    if (e != cudaSuccess)
      return fail(kCudaError, cuda_detail::describe("cudaStreamBeginCapture", e));
    return ok();
  }

  int endCapture(void** graph_exec) override {
    if (graph_exec == nullptr) return fail(kInvalidArgument, "endCapture: graph_exec is null");
    *graph_exec = nullptr;
    int rc = checkUsable("endCapture");
    if (rc != kOk) return rc;
    DeviceScope scope(device_);
    if (scope.status() != cudaSuccess) {
      return fail(kCudaError, cuda_detail::describe("endCapture: cudaSetDevice", scope.status()));
    }
    // Every graph ends with its own RDMA requests quieted, so a replay leaves nothing pending.
    rc = quietPosted("endCapture");
    if (rc != kOk) return rc;
    cudaGraph_t graph = nullptr;
    cudaError_t e = cudaStreamEndCapture(stream_, &graph);
    if (e != cudaSuccess) return fail(kCudaError, cuda_detail::describe("cudaStreamEndCapture", e));
    cudaGraphExec_t exec = nullptr;
    e = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);  // the executable graph keeps what it needs
    if (e != cudaSuccess) return fail(kCudaError, cuda_detail::describe("cudaGraphInstantiate", e));
    *graph_exec = exec;
    return ok();
  }

  int launchGraph(void* graph_exec) override {
    if (graph_exec == nullptr) return fail(kInvalidArgument, "launchGraph: graph_exec is null");
    int rc = checkUsable("launchGraph");
    if (rc != kOk) return rc;
    DeviceScope scope(device_);
    if (scope.status() != cudaSuccess) {
      return fail(kCudaError, cuda_detail::describe("launchGraph: cudaSetDevice", scope.status()));
    }
    cudaError_t e = cudaGraphLaunch(static_cast<cudaGraphExec_t>(graph_exec), stream_);
    if (e != cudaSuccess) return fail(kCudaError, cuda_detail::describe("cudaGraphLaunch", e));
    return ok();
  }

  int destroyGraph(void* graph_exec) override {
    if (graph_exec == nullptr) return fail(kInvalidArgument, "destroyGraph: graph_exec is null");
    DeviceScope scope(device_);
    cudaError_t e = cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(graph_exec));
    if (e != cudaSuccess) return fail(kCudaError, cuda_detail::describe("cudaGraphExecDestroy", e));
    return ok();
  }

 private:
  int init(void* user_stream) {
    if (!owned_) {
      // The legacy default stream implicitly synchronises with every blocking stream, and the
      // per-thread default stream belongs to whichever thread calls: neither is a stream te4j
      // can own the order of.
      if (user_stream == nullptr || user_stream == (void*)cudaStreamLegacy ||
          user_stream == (void*)cudaStreamPerThread) {
        return fail(kInvalidArgument,
                    "wrapCuda: refusing the default stream (nullptr / cudaStreamLegacy / "
                    "cudaStreamPerThread); pass a stream from cudaStreamCreateWithFlags(..., "
                    "cudaStreamNonBlocking)");
      }
    }
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
      return fail(kUnavailable, cuda_detail::describe("OpStream(CUDA): cudaGetDeviceCount", e));
    }
    if (device_ < 0 || device_ >= count) {
      return fail(kInvalidArgument, "OpStream(CUDA): device " + std::to_string(device_) +
                                        " out of range (" + std::to_string(count) + " devices)");
    }
    DeviceScope scope(device_);
    if (scope.status() != cudaSuccess) {
      return fail(kCudaError,
                  cuda_detail::describe("OpStream(CUDA): cudaSetDevice", scope.status()));
    }
    if (owned_) {
      cudaStream_t s = nullptr;
      e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
      if (e != cudaSuccess)
        return fail(kCudaError, cuda_detail::describe("cudaStreamCreateWithFlags", e));
      stream_ = s;
    } else {
      cudaStream_t s = static_cast<cudaStream_t>(user_stream);
      int stream_device = -1;
      e = cudaStreamGetDevice(s, &stream_device);
      if (e != cudaSuccess) {
        return fail(kInvalidArgument, cuda_detail::describe("wrapCuda: cudaStreamGetDevice", e));
      }
      if (stream_device != device_) {
        return fail(kInvalidArgument, "wrapCuda: the stream belongs to device " +
                                          std::to_string(stream_device) + ", not " +
                                          std::to_string(device_));
      }
      cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
      e = cudaStreamIsCapturing(s, &capture);
      if (e != cudaSuccess)
        return fail(kCudaError, cuda_detail::describe("wrapCuda: cudaStreamIsCapturing", e));
      if (capture != cudaStreamCaptureStatusNone) {
        return fail(kIllegalState, "wrapCuda: the stream is capturing a graph");
      }
      stream_ = s;
    }
    // From the pool, not cudaMalloc/cudaHostAlloc (implicitly synchronising: StreamWordPool).
    StreamWords words;
    e = StreamWordPool::instance().take(device_, &words);
    if (e != cudaSuccess) {
      return fail(e == cudaErrorMemoryAllocation ? kOutOfMemory : kCudaError,
                  cuda_detail::describe(
                      "OpStream(CUDA): allocating the stream scratch and status words", e));
    }
    scratch_ = words.scratch;
    status_host_ = words.status_host;
    status_dev_ = words.status_dev;
    memset(status_host_, 0, sizeof(McStreamStatus));
    // In stream order: the zeroed scratch precedes every te4j kernel on this stream.
    e = cudaMemsetAsync(scratch_, 0, sizeof(McStreamScratch), stream_);
    if (e != cudaSuccess)
      return fail(kCudaError, cuda_detail::describe("OpStream(CUDA): cudaMemsetAsync", e));
    return ok();
  }

  int checkUsable(const char* what) {
    if (init_status_ != kOk) {
      return fail(init_status_, std::string(what) + ": unusable CUDA OpStream: " + init_error_);
    }
    return kOk;
  }

  int checkWord(const char* what, const uint32_t* word) {
    if (word == nullptr) return fail(kInvalidArgument, std::string(what) + ": word is null");
    if (reinterpret_cast<uintptr_t>(word) % 4 != 0) {
      return fail(kInvalidArgument, std::string(what) + ": word is not 4-byte aligned");
    }
    return kOk;
  }

  int checkPut(const char* what, const CommCtx* ctx, int dst_rank, void* recv_ptr,
               const void* send_ptr, std::size_t nbytes, int blocks, int threads,
               LaunchShape* shape) {
    int rc = checkUsable(what);
    if (rc != kOk) return rc;
    const std::string name(what);
    if (ctx == nullptr) return fail(kInvalidArgument, name + ": ctx is null");
    if (dst_rank < 0) return fail(kInvalidArgument, name + ": dst_rank < 0");
    if (nbytes > 0 && (recv_ptr == nullptr || send_ptr == nullptr)) {
      return fail(kInvalidArgument, name + ": null buffer with nbytes > 0");
    }
    if (blocks < 0 || threads < 0 || threads > kMaxThreads) {
      return fail(kInvalidArgument, name + ": launch shape " + std::to_string(blocks) + " x " +
                                        std::to_string(threads) +
                                        " (blocks >= 0, 0 <= threads <= 1024; 0 = default)");
    }
    // One thread per 16-byte word up to the default shape.
    const std::size_t words = std::max<std::size_t>(1, (nbytes + 15) / 16);
    std::size_t t = threads > 0 ? (std::size_t)threads
                                : std::min<std::size_t>(kDefaultThreads, (words + 31) / 32 * 32);
    std::size_t b = blocks > 0 ? (std::size_t)blocks
                               : std::min<std::size_t>(kDefaultBlocks, (words + t - 1) / t);
    shape->threads = (unsigned)t;
    shape->blocks = (unsigned)std::max<std::size_t>(1, b);
    return kOk;
  }

  int launchAdd(McStreamOp op, const CommCtx* ctx, int dst_rank, uint32_t* ptr, uint32_t value) {
    int rc = checkUsable(opName(op));
    if (rc != kOk) return rc;
    if (ctx == nullptr) return fail(kInvalidArgument, std::string(opName(op)) + ": ctx is null");
    if (dst_rank < 0) return fail(kInvalidArgument, std::string(opName(op)) + ": dst_rank < 0");
    rc = checkWord(opName(op), ptr);
    if (rc != kOk) return rc;
    DeviceScope scope(device_);
    if (scope.status() != cudaSuccess) {
      return fail(kCudaError, cuda_detail::describe("cudaSetDevice", scope.status()));
    }
    const bool rdma = orderAfterPosted(ctx, dst_rank, routeOf(ctx, dst_rank));
    mc_atomic_add_kernel<<<1, 1, 0, stream_>>>(*ctx, dst_rank, ptr, value, op, scratch_,
                                               status_dev_);
    if (rdma) notePosted(ctx, dst_rank, op);
    return checkLaunch(opName(op));
  }

  static constexpr int kNotTaken = 1;  // launchCopyEngine: not a copy-engine put

  PutLaunch putLaunch(const LaunchShape& shape, const CommCtx* ctx, int dst_rank, void* recv_ptr,
                      const void* send_ptr, std::size_t nbytes, uint32_t* sig_ptr,
                      uint32_t value) const {
    return PutLaunch{device_,  stream_,  shape.blocks, shape.threads, ctx,
                     dst_rank, recv_ptr, send_ptr,     nbytes,        sig_ptr,
                     value,    scratch_, status_dev_,  knobs_.flags,  knobs_.pdl};
  }

  // The copy-engine paths of body_path.h (te4j's policy by route and size, or the knobs put=ce /
  // cesm at every size; copy_engine_route.cuh): enqueues the put on the copy engine and returns
  // its status, or kNotTaken (a kernel's size or knob, or a route without a mapping, which the
  // kernel then takes or reports).
  int launchCopyEngine(const char* what, const LaunchShape& shape, const CommCtx* ctx, int dst_rank,
                       int route, void* recv_ptr, const void* send_ptr, std::size_t nbytes,
                       uint32_t* sig_ptr, uint32_t value) {
    // A launcher of te4j-bench's measures its kernel at every size: no body leaves it.
    if (knobs_.launcher != nullptr) return kNotTaken;
    if (!body_path::mayLeaveKernel(nbytes, knobs_.path)) return kNotTaken;
    const body_path::Path path = body_path::choose(route, nbytes, knobs_.path);
    if (path == body_path::kKernel) return kNotTaken;
    // A copy cannot skip itself once the stream has failed the way kernels do; when a failure is
    // already recorded, the kernel (which will skip) takes the put instead.
    if (__atomic_load_n(&status_host_->code, __ATOMIC_ACQUIRE) != 0) return kNotTaken;
    // The engine needs the host-side address of the peer's copy (the window's published tables;
    // the route is the context's). A range outside the window, or tables already withdrawn,
    // leave the put to the kernel.
    void* dst = nullptr;
    if (!peer_tables::translate(ctx->p2p.peer_ptrs, dst_rank, recv_ptr, nbytes, &dst)) {
      return kNotTaken;
    }
    const std::string name(what);
    cudaError_t e = cudaSuccess;
    const size_t ce_bytes = path == body_path::kCopyEngine
                                ? nbytes
                                : CopyEngineRoute::ceShare(nbytes, knobs_.ce_percent);
    if (ce_bytes == nbytes) {
      if (nbytes > 0) e = CopyEngineRoute::copy(dst, send_ptr, nbytes, stream_);
      if (e != cudaSuccess)
        return fail(kCudaError, cuda_detail::describe((name + ": cudaMemcpyAsync").c_str(), e));
    } else {
      if (ce_bytes > 0) e = copy_engine_.fork(dst, send_ptr, ce_bytes, stream_);
      if (e != cudaSuccess)
        return fail(kCudaError, cuda_detail::describe((name + ": copy-engine fork").c_str(), e));
      e = launchPut(putLaunch(shape, ctx, dst_rank, static_cast<char*>(recv_ptr) + ce_bytes,
                              static_cast<const char*>(send_ptr) + ce_bytes, nbytes - ce_bytes,
                              nullptr, 0));
      if (e != cudaSuccess)
        return fail(kCudaError, cuda_detail::describe((name + ": kernel launch").c_str(), e));
      if (ce_bytes > 0) e = copy_engine_.join(stream_);
      if (e != cudaSuccess)
        return fail(kCudaError, cuda_detail::describe((name + ": copy-engine join").c_str(), e));
    }
    if (sig_ptr != nullptr) {
      mc_atomic_add_kernel<<<1, 1, 0, stream_>>>(*ctx, dst_rank, sig_ptr, value, kMcOpSignal,
                                                 scratch_, status_dev_);
    }
    return checkLaunch(what);
  }

  // The route to dst_rank: the one the context decided when it was connected (McRankRoute,
  // comm_device.cuh). A context built the upstream way carries none; its route is derived here
  // from the window's published tables (the device copy is not readable on the host).
  static int routeOf(const CommCtx* ctx, int dst_rank) {
    using namespace mooncake::device;
    const int decided = mc_decided_route(*ctx, dst_rank);
    if (decided != kMcRankRouteUnknown) return decided;
    if (dst_rank == ctx->rank) return kMcRankRouteSameDevice;
    void* mapped = nullptr;
    if (peer_tables::translate(ctx->p2p.peer_ptrs, dst_rank, ctx->p2p.local_base, 1, &mapped)) {
      return kMcRankRoutePeerDevice;
    }
    return ctx->ibgda.qps != nullptr ? kMcRankRouteRdma : kMcRankRouteNone;
  }

  // The knobs this stream's ops use (te4j/tuning.h), read when it is created and again only
  // after a tuning::apply (one counter compared per op, instead of a load per knob).
  struct Knobs {
    unsigned generation = 0;
    body_path::Knobs path;
    int ce_percent = 0;
    bool pdl = false;
    uint32_t flags = 0;
    PutLauncher launcher = nullptr;  // te4j-bench's put launcher (put_launch.h), or te4j's
  };

  void readKnobs() {
    knobs_.generation = tuning::generation();
    knobs_.path = body_path::Knobs::now();
    knobs_.ce_percent = tuning::copyEnginePercent();
    knobs_.pdl = tuning::get(tuning::kPdl) != 0;
    knobs_.flags = putFlags();
    knobs_.launcher = putLauncher();
  }

  void refreshKnobs() {
    if (tuning::generation() != knobs_.generation) readKnobs();
  }

  // A put to a mapped route by a P2P kernel: te4j's policy (put_launch.h), or te4j-bench's
  // launcher where one is set. Returns false for put=base (the kernels of put_kernels.cuh take
  // it). A launch error stays for checkLaunch to report.
  bool launchMappedPut(const LaunchShape& shape, const CommCtx* ctx, int dst_rank, void* recv_ptr,
                       const void* send_ptr, std::size_t nbytes, uint32_t* sig_ptr,
                       uint32_t value) {
    if (knobs_.path.put == tuning::kPutBase) return false;
    const PutLaunch put =
        putLaunch(shape, ctx, dst_rank, recv_ptr, send_ptr, nbytes, sig_ptr, value);
    const cudaError_t e = knobs_.launcher != nullptr ? knobs_.launcher(put) : launchPut(put);
    if (e != cudaSuccess) put_launch_error_ = e;
    return true;
  }

  // Pipelined RDMA (kernels/rdma_route.cuh): an op to a rank only RDMA reaches is posted by its
  // kernel without waiting. Before an op whose effect could overtake those requests (a P2P or
  // own-rank op, an RDMA op to another QP) the stream quiets them; ops to the same QP need no
  // quiet, one QP executes in order. Returns whether this op goes over RDMA (its route).
  bool orderAfterPosted(const CommCtx* ctx, int dst_rank, int route) {
    const bool rdma = route == mooncake::device::kMcRankRouteRdma;
    if (has_posted_ &&
        !(rdma && posted_ctx_.ibgda.qps == ctx->ibgda.qps && posted_rank_ == dst_rank)) {
      (void)quietPosted("quiet");
    }
    return rdma;
  }

  void notePosted(const CommCtx* ctx, int dst_rank, uint32_t op) {
    posted_ctx_ = *ctx;
    posted_rank_ = dst_rank;
    posted_op_ = op;
    has_posted_ = true;
  }

  // Enqueues the quiet kernel of the posted QP; a failure of the quiet itself is recorded by it
  // for the next synchronize(). Only a launch error is returned here.
  int quietPosted(const char* what) {
    if (!has_posted_) return kOk;
    has_posted_ = false;
    mc_rdma_quiet_kernel<<<1, 1, 0, stream_>>>(posted_ctx_, posted_rank_, posted_op_, scratch_,
                                               status_dev_);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
      return fail(kCudaError,
                  cuda_detail::describe((std::string(what) + ": RDMA quiet launch").c_str(), e));
    return kOk;
  }

  int checkLaunch(const char* what) {
    if (put_launch_error_ != cudaSuccess) {
      const cudaError_t v = put_launch_error_;
      put_launch_error_ = cudaSuccess;
      cudaGetLastError();
      return fail(kCudaError,
                  cuda_detail::describe((std::string(what) + ": kernel launch").c_str(), v));
    }
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) {
      return fail(kCudaError,
                  cuda_detail::describe((std::string(what) + ": kernel launch").c_str(), e));
    }
    return ok();
  }

  // Polls cudaStreamQuery until idle or timeout_ns passes: never blocks without a bound.
  // Returns cudaSuccess, cudaErrorNotReady (timed out) or the stream's error.
  cudaError_t waitIdle(int64_t timeout_ns) {
    const auto start = std::chrono::steady_clock::now();
    const auto deadline = start + std::chrono::nanoseconds(timeout_ns);
    for (;;) {
      const cudaError_t e = cudaStreamQuery(stream_);
      if (e != cudaErrorNotReady) return e;
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline) return cudaErrorNotReady;
      if (now - start >= std::chrono::nanoseconds(kSpinPhaseNs)) {
        std::this_thread::sleep_for(
            std::min<std::chrono::nanoseconds>(std::chrono::nanoseconds(kParkNs), deadline - now));
      }
    }
  }

  // Wait timeouts and RDMA timeouts are kTimeout, RDMA QP errors kRemoteError, the rest
  // (no route) kDeviceFault.
  static int statusOf(const McStreamStatus& s) {
    if (s.code == kMcStreamWaitTimeout) return kTimeout;
    if (s.code == kMcStreamRdmaError) {
      if (s.route == mooncake::device::kMcRdmaTimeout) return kTimeout;
      if (s.route == mooncake::device::kMcRdmaInvalid) return kDeviceFault;
      return kRemoteError;
    }
    if (s.code == kMcStreamNoRoute && s.route == mooncake::device::kMcRdmaTimeout) return kTimeout;
    if (s.code == kMcStreamNoRoute && (s.route == mooncake::device::kMcRdmaQpError ||
                                       s.route == mooncake::device::kMcRdmaFatal)) {
      return kRemoteError;
    }
    return kDeviceFault;
  }

  static std::string describe(const McStreamStatus& s) {
    char buf[512];
    if (s.code == kMcStreamWaitTimeout) {
      snprintf(buf, sizeof(buf),
               "waitSignal timed out after %.3f ms at 0x%llx expected>=%u seen %u "
               "(timeout %.3f ms)",
               (double)s.waited_ns / 1e6, (unsigned long long)s.addr, s.expected, s.seen,
               (double)s.timeout_ns / 1e6);
    } else if (s.code == kMcStreamRdmaError && s.route == mooncake::device::kMcRdmaTimeout) {
      // rdma_route.cuh's QP snapshot: nothing completing (ci stuck below pi) points at the NIC
      // or the peer; pi == ci with the lock held points at another poster.
      snprintf(buf, sizeof(buf),
               "%s to rank %d over RDMA (0x%llx): %s after %.3f ms (device timeout; "
               "RdmaTransport.deviceTimeout); QP to rank %d channel 0: lock %u, WQEBBs posted %u, "
               "completed %u, CQEs consumed %u",
               opName(s.op), s.rank, (unsigned long long)s.addr,
               mooncake::device::mc_route_status_text(s.route), (double)s.timeout_ns / 1e6, s.rank,
               s.expected, s.seen, (uint32_t)(s.waited_ns >> 32), (uint32_t)s.waited_ns);
    } else if (s.code == kMcStreamRdmaError) {
      const uint32_t syndrome = s.expected & 0xffu;
      snprintf(buf, sizeof(buf),
               "%s to rank %d over RDMA (0x%llx): %s: error CQE syndrome 0x%02x (%s), vendor "
               "syndrome 0x%02x%s",
               opName(s.op), s.rank, (unsigned long long)s.addr,
               mooncake::device::mc_route_status_text(s.route), syndrome,
               mooncake::device::mc_rdma_syndrome_text(syndrome), (s.expected >> 8) & 0xffu,
               s.route == mooncake::device::kMcRdmaQpError
                   ? "; the QP stays in the error state until recreateQueuePairs + reconnect at "
                     "both ends"
                   : "");
    } else if (s.code == kMcStreamNoRoute) {
      snprintf(buf, sizeof(buf), "%s: no route to rank %d for 0x%llx (%s; status %d)", opName(s.op),
               s.rank, (unsigned long long)s.addr, mooncake::device::mc_route_status_text(s.route),
               s.route);
    } else {
      snprintf(buf, sizeof(buf), "device error code %u recorded by %s", s.code, opName(s.op));
    }
    return buf;
  }

  int device_;
  bool owned_;
  std::string init_error_;  // why init failed, repeated by every later call
  cudaStream_t stream_ = nullptr;
  McStreamScratch* scratch_ = nullptr;  // device memory
  // The QP with RDMA requests posted since the last quiet (orderAfterPosted), and the op last
  // posted on it; callers serialize the stream's methods.
  bool has_posted_ = false;
  CommCtx posted_ctx_{};
  int posted_rank_ = -1;
  uint32_t posted_op_ = 0;
  McStreamStatus* status_host_ = nullptr;       // mapped pinned host memory, host address
  McStreamStatus* status_dev_ = nullptr;        // the same memory, device address
  cudaError_t put_launch_error_ = cudaSuccess;  // launchMappedPut's failure, for checkLaunch
  CopyEngineRoute copy_engine_;                 // side stream + events of put=cesm
  Knobs knobs_;                                 // readKnobs / refreshKnobs
};

}  // namespace
}  // namespace cuda
}  // namespace te4j

/// te4j::releaseCachedMemory's CUDA part (cuda_bridge.h).
std::size_t te4j::cuda_bridge::releaseIdleStreamWords() {
  return te4j::cuda::StreamWordPool::instance().releaseIdle();
}

/// CUDA factory used by OpStream::create / wrapCuda (op_stream_factory.cpp). owned=true with
/// stream=nullptr creates te4j's own non-blocking stream; owned=false wraps `stream`. nullptr
/// only when memory is exhausted; otherwise check status().
te4j::OpStream* te4j_create_cuda_op_stream(int device, void* stream, bool owned) {
  return new (std::nothrow) te4j::cuda::CudaOpStream(device, stream, owned);
}
