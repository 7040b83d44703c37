// cuda_batch_resources.cu — the CUDA batches' resources and their pool (cuda_batch_resources.h).
#include "batch/cuda_batch_resources.h"

#include <cstring>
#include <mutex>
#include <new>
#include <vector>

#include "core/cuda_bridge.h"
#include "core/cuda_errors.cuh"
#include "core/device_scope.cuh"
#include "te4j/api.h"
#include "te4j/batch_api.h"

namespace te4j {
namespace batch {
namespace {

// Idle sets kept per device and capacity class: enough for a few threads that each allocate a
// batch per transfer; and at most this many bytes in all (a set of the largest class, 2^20
// requests, holds about 100 MiB), so that an idle process holds little.
constexpr size_t kIdlePerClass = 4;
constexpr uint64_t kIdleBytes = 64ull << 20;
// The smallest class: batches of a few requests share one.
constexpr int kMinClass = 64;

int classOf(int capacity) {
  int c = kMinClass;
  while (c < capacity && c < TransferBatch::kMaxBatchCapacity) c *= 2;
  return c < capacity ? capacity : c;
}

int cudaWhy(const char* call, cudaError_t e, std::string* why) {
  cudaGetLastError();
  *why = cuda_detail::describe(call, e);
  return cuda_detail::statusOf(e);
}

uint64_t arenaBytes(int capacity) {
  // Two chunks per request: parts of requests up to 32 KiB, larger ones while the arena lasts.
  // A part's sections round up by at most 4 bytes (the progress words); 16 per part is slack.
  return PartLayout::of((uint64_t)capacity, 2 * (uint64_t)capacity).bytes + 16 * (uint64_t)capacity;
}

uint64_t bytesOf(const CudaBatchResources& r) {
  return 2 * (uint64_t)(r.capacity + 1) * sizeof(int32_t) + 2 * r.arena.bytes;
}

// Frees what is there; errors are ignored (a reset device already lost it).
void destroy(CudaBatchResources* r) {
  cuda_detail::DeviceScope scope(r->device, cuda_detail::DeviceScope::kBind);
  if (scope.status() == cudaSuccess) {
    releaseCudaBlock(&r->arena);
    if (r->done != nullptr) cudaEventDestroy(r->done);
    if (r->stream != nullptr) cudaStreamDestroy(r->stream);
    if (r->cancel_stream != nullptr) cudaStreamDestroy(r->cancel_stream);
    if (r->host_words != nullptr) cudaFreeHost(r->host_words);
    if (r->dev_words != nullptr) cudaFree(r->dev_words);
  }
  cudaGetLastError();
  delete r;
}

int create(CudaBatchResources* r, std::string* why) {
  cudaError_t e;
  if ((e = cudaStreamCreateWithFlags(&r->stream, cudaStreamNonBlocking)) != cudaSuccess) {
    return cudaWhy("cudaStreamCreateWithFlags", e, why);
  }
  if ((e = cudaEventCreateWithFlags(&r->done, cudaEventDisableTiming)) != cudaSuccess) {
    return cudaWhy("cudaEventCreateWithFlags", e, why);
  }
  if ((e = cudaStreamCreateWithFlags(&r->cancel_stream, cudaStreamNonBlocking)) != cudaSuccess) {
    return cudaWhy("cudaStreamCreateWithFlags(cancel)", e, why);
  }
  const size_t words = (size_t)(r->capacity + 1) * sizeof(int32_t);
  if ((e = cudaHostAlloc(&r->host_words, words, cudaHostAllocPortable)) != cudaSuccess) {
    r->host_words = nullptr;
    return cudaWhy("cudaHostAlloc(states)", e, why);
  }
  if ((e = cudaMalloc(&r->dev_words, words)) != cudaSuccess) {
    r->dev_words = nullptr;
    return cudaWhy("cudaMalloc(states)", e, why);
  }
  return allocateCudaBlock(arenaBytes(r->capacity), &r->arena, why);
}

// PENDING states and a clear cancel word, on the host and on the device. The stream is idle,
// so waiting for the clearing costs microseconds; a set whose stream no longer answers (a
// reset device) fails here. The device's states need no clearing: each part's kernel writes
// the state of every request before the copy that brings them to the host.
int makeReady(CudaBatchResources* r, std::string* why) {
  std::memset(r->host_words, 0, (size_t)(r->capacity + 1) * sizeof(int32_t));
  cudaError_t e = cudaMemsetAsync(r->dev_words + r->capacity, 0, sizeof(int32_t), r->stream);
  if (e != cudaSuccess) return cudaWhy("cudaMemsetAsync(cancel word)", e, why);
  if ((e = cudaStreamSynchronize(r->stream)) != cudaSuccess) {
    return cudaWhy("cudaStreamSynchronize", e, why);
  }
  return kOk;
}

struct Pool {
  std::mutex mu;
  std::vector<CudaBatchResources*> idle;
  uint64_t idle_bytes = 0;
};

Pool& pool() {
  // Leaked on purpose: batches may be given back from static destructors at exit.
  static Pool* p = new Pool();
  return *p;
}

}  // namespace

int allocateCudaBlock(uint64_t bytes, CudaBlock* out, std::string* why) {
  cudaError_t e = cudaMalloc(&out->dev, bytes);
  if (e != cudaSuccess) {
    out->dev = nullptr;
    return cudaWhy("descriptor arrays (device memory)", e, why);
  }
  if ((e = cudaHostAlloc(&out->stage, bytes, cudaHostAllocPortable)) != cudaSuccess) {
    out->stage = nullptr;
    releaseCudaBlock(out);
    return cudaWhy("descriptor staging (pinned host memory)", e, why);
  }
  out->bytes = bytes;
  return kOk;
}

void releaseCudaBlock(CudaBlock* block) {
  if (block->dev != nullptr) cudaFree(block->dev);
  if (block->stage != nullptr) cudaFreeHost(block->stage);
  *block = CudaBlock{};
  cudaGetLastError();
}

CudaBatchResources* takeCudaBatchResources(int device, int capacity, int* status,
                                           std::string* why) {
  const int cls = classOf(capacity);
  cuda_detail::DeviceScope scope(device, cuda_detail::DeviceScope::kBind);
  cudaError_t e = scope.status();
  if (e != cudaSuccess) {
    *status = cudaWhy("cudaSetDevice", e, why);
    return nullptr;
  }
  for (;;) {
    CudaBatchResources* r = nullptr;
    {
      std::lock_guard<std::mutex> lock(pool().mu);
      auto& idle = pool().idle;
      for (size_t i = 0; i < idle.size(); ++i) {
        if (idle[i]->device == device && idle[i]->capacity == cls) {
          r = idle[i];
          idle.erase(idle.begin() + (long)i);
          pool().idle_bytes -= bytesOf(*r);
          break;
        }
      }
    }
    if (r == nullptr) break;
    std::string stale;
    if (makeReady(r, &stale) == kOk) return r;
    destroy(r);  // from before a device reset: try the next, or make new ones
  }
  CudaBatchResources* r = new (std::nothrow) CudaBatchResources();
  if (r == nullptr) {
    *status = kOutOfMemory;
    *why = "out of memory";
    return nullptr;
  }
  r->device = device;
  r->capacity = cls;
  int st = create(r, why);
  if (st == kOk) st = makeReady(r, why);
  if (st != kOk) {
    destroy(r);
    *status = st;
    return nullptr;
  }
  return r;
}

void giveBackCudaBatchResources(CudaBatchResources* r) {
  if (r == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(pool().mu);
    auto& idle = pool().idle;
    size_t same = 0;
    for (CudaBatchResources* x : idle) same += x->device == r->device && x->capacity == r->capacity;
    if (same < kIdlePerClass && pool().idle_bytes + bytesOf(*r) <= kIdleBytes) {
      try {
        idle.push_back(r);
        pool().idle_bytes += bytesOf(*r);
        return;
      } catch (const std::bad_alloc&) {
        // freed below
      }
    }
  }
  destroy(r);
}

void discardCudaBatchResources(CudaBatchResources* r) {
  if (r != nullptr) destroy(r);
}

std::size_t releaseIdleCudaBatchResources() {
  std::vector<CudaBatchResources*> all;
  {
    std::lock_guard<std::mutex> lock(pool().mu);
    all.swap(pool().idle);
    pool().idle_bytes = 0;
  }
  std::size_t bytes = 0;
  for (CudaBatchResources* r : all) {
    bytes += bytesOf(*r);
    destroy(r);
  }
  return bytes;
}

}  // namespace batch
}  // namespace te4j

std::size_t te4j::cuda_bridge::releaseIdleBatchResources() {
  return te4j::batch::releaseIdleCudaBatchResources();
}
