// cuda_memory_port.cu — the software NIC's access to GPU memory (CUDA build).
//
// Control memory (send rings, CQs, doorbell records, UAR words, fetch scratch) is pinned host
// memory mapped into the GPU: kernels post WQEs and ring doorbells into it, the NIC's progress
// thread reads it, and the NIC writes CQEs the kernels poll (system-scope loads).
// Registered memory is GPU memory. Every access goes through one non-blocking stream of the
// port, so the responder's effects land in arrival order: a WRITE is a cudaMemcpyAsync of its
// data, a masked fetch-and-add a one-thread kernel after it on the same stream, and the NIC
// waits (bounded) for that work before it answers the requester. The stream never serialises
// with te4j's op streams (a kernel spinning on a signal keeps running meanwhile).
//
// Staging is pipelined (memory_port.h): the responder receives a WRITE's payload chunk by
// chunk into a pinned placement arena and queues each chunk's copy as soon as it is in, so
// the PCIe copy of one chunk overlaps the receive of the next; the requester gathers WRITE
// sources into a pinned gather arena on a second non-blocking stream, several requests' copies
// in flight before one send. Completion is watched through events (tickets) and by spinning:
// a copy takes microseconds, and a sleep would cost more than the copy (a 20 us sleep is
// ~70 us with the default timer slack), once per request.
//
// The atomic kernel is loaded and launched once in init(), before any te4j kernel can be waiting
// on this NIC. With lazy module loading (CUDA_MODULE_LOADING=LAZY, the default since CUDA 12.2),
// the first launch of a kernel loads it, and loading may synchronise the whole context: a
// responder loading it while an op-stream kernel of the same process spins in its RDMA quiet
// waits for that kernel, which waits for the peer's responder, which is stuck the same way —
// both ranks' first putWithSignal then time out.
#include <cuda_runtime.h>

#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

#include "rdma/memory_port.h"
#include "core/cuda_errors.cuh"
#include "core/device_scope.cuh"

namespace te4j {
namespace rdma {

namespace {

// Pageable <-> GPU copies go through this much pinned memory at a time.
constexpr size_t kBounceBytes = 8u << 20;
// Pinned arenas of the pipelined staging, one per direction (memory_port.h).
constexpr size_t kArenaBytes = 8u << 20;
// Tickets whose events are kept; a ticket older than this many is waited for before its event
// is recorded again.
constexpr uint64_t kTicketEvents = 64;
// Bound of one copy / atomic on the port's stream; only a hung GPU gets near it.
constexpr auto kFinishTimeout = std::chrono::seconds(30);
// How a waiter for the GPU paces its polls: spinning first (a small copy is done within a
// few microseconds), then yielding the core, and sleeping only once the work is long.
constexpr auto kSpinFor = std::chrono::microseconds(50);
constexpr auto kYieldFor = std::chrono::milliseconds(2);
// Masked fetch-and-add: compare-and-swap attempts before giving up (a word updated that often
// by others is a livelock, reported as a remote operation error).
constexpr uint32_t kCasAttempts = 1u << 20;

// The masked-FA rule of memory_port.h's maskedAdd32, on the device.
__device__ uint32_t masked_add32(uint32_t a, uint32_t b, uint32_t boundary) {
  if (boundary == 0) return a + b;
  uint32_t result = 0;
  uint32_t carry = 0;
  for (int i = 0; i < 32; ++i) {
    const uint32_t s = ((a >> i) & 1u) + ((b >> i) & 1u) + carry;
    result |= (s & 1u) << i;
    carry = (boundary >> i) & 1u ? 0u : s >> 1;
  }
  return result;
}

// result[0]: the old value; result[1]: 1 applied, 2 gave up. System scope: the word may be
// watched by kernels of other streams and read by the host.
__global__ void fetch_add_masked32_kernel(uint32_t* word, uint32_t add, uint32_t boundary,
                                          volatile uint32_t* result) {
  // Earlier WRITEs of this stream completed before this kernel started; the fence makes the
  // add's visibility follow them for every observer.
  __threadfence_system();
  if (boundary == 0) {
    result[0] = atomicAdd_system(word, add);
    __threadfence_system();
    result[1] = 1u;
    return;
  }
  uint32_t seen = *(volatile uint32_t*)word;
  for (uint32_t attempt = 0; attempt < kCasAttempts; ++attempt) {
    const uint32_t prev = atomicCAS_system(word, seen, masked_add32(seen, add, boundary));
    if (prev == seen) {
      result[0] = prev;
      __threadfence_system();
      result[1] = 1u;
      return;
    }
    seen = prev;
  }
  result[1] = 2u;
}

using cuda_detail::DeviceScope;

// Polls `query` (cudaStreamQuery / cudaEventQuery of some work) until the work is done,
// bounded by kFinishTimeout: spin, then yield, then short sleeps.
template <typename Query>
int awaitGpu(Query query, const std::string& what, std::string* err) {
  const auto start = std::chrono::steady_clock::now();
  for (uint32_t polls = 0;; ++polls) {
    const cudaError_t e = query();
    if (e == cudaSuccess) return 0;
    if (e != cudaErrorNotReady) {
      *err = cuda_detail::describe(what.c_str(), e);
      return -1;
    }
    if ((polls & 15u) != 0) continue;  // the clock is read every 16 polls
    const auto waited = std::chrono::steady_clock::now() - start;
    if (waited > kFinishTimeout) {
      *err = what + ": the GPU did not finish a copy/atomic within 30 s";
      return -1;
    }
    if (waited < kSpinFor) continue;
    if (waited < kYieldFor)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

// Tickets over one stream: take() records an event after everything queued so far and names
// it with the next number; await(t) returns once the work of ticket t is done. Tickets are
// taken and awaited under the owner's lock.
class StreamTickets {
 public:
  ~StreamTickets() {
    for (cudaEvent_t& e : events_)
      if (e != nullptr) cudaEventDestroy(e);
  }
  int init(const char* what, std::string* err) {
    for (cudaEvent_t& e : events_) {
      const cudaError_t rc = cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
      if (rc != cudaSuccess) {
        e = nullptr;
        *err =
            cuda_detail::describe((std::string(what) + ": cudaEventCreateWithFlags").c_str(), rc);
        return -1;
      }
    }
    return 0;
  }
  /// 0 with *err on failure.
  uint64_t take(cudaStream_t stream, const char* what, std::string* err) {
    const uint64_t t = next_;
    // Its event slot still names ticket t - kTicketEvents unless that one was awaited.
    if (t > kTicketEvents && await(t - kTicketEvents, what, err) != 0) return 0;
    const cudaError_t e = cudaEventRecord(events_[t % kTicketEvents], stream);
    if (e != cudaSuccess) {
      *err = cuda_detail::describe((std::string(what) + ": cudaEventRecord").c_str(), e);
      return 0;
    }
    ++next_;
    return t;
  }
  int await(uint64_t t, const char* what, std::string* err) {
    if (t <= done_) return 0;
    if (t >= next_) {
      *err = std::string(what) + ": ticket " + std::to_string(t) + " was never taken";
      return -1;
    }
    cudaEvent_t ev = events_[t % kTicketEvents];
    if (awaitGpu([ev] { return cudaEventQuery(ev); }, std::string(what) + ": cudaEventQuery",
                 err) != 0)
      return -1;
    done_ = t;  // events of one stream complete in order
    return 0;
  }

 private:
  cudaEvent_t events_[kTicketEvents] = {};
  uint64_t next_ = 1;  // 0 is "no ticket"
  uint64_t done_ = 0;  // every ticket up to this one is done
};

class CudaMemoryPort final : public MemoryPort {
 public:
  explicit CudaMemoryPort(int device) : device_(device) {}

  ~CudaMemoryPort() override {
    DeviceScope scope(device_);
    if (stream_ != nullptr) {
      std::string ignored;
      finish("close", &ignored);
      cudaStreamDestroy(stream_);
    }
    if (gather_stream_ != nullptr) {
      std::string ignored;
      (void)awaitGpu([this] { return cudaStreamQuery(gather_stream_); }, "close", &ignored);
      cudaStreamDestroy(gather_stream_);
    }
    if (placement_arena_ != nullptr) cudaFreeHost(placement_arena_);
    if (gather_arena_ != nullptr) cudaFreeHost(gather_arena_);
    if (probe_dev_ != nullptr) cudaFree(probe_dev_);
    if (bounce_ != nullptr) cudaFreeHost(bounce_);
    if (result_host_ != nullptr) cudaFreeHost(result_host_);
  }

  int init(std::string* err) {
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess)
      return failed(cuda_detail::describe("CUDA memory port: cudaGetDeviceCount", e), err);
    if (device_ < 0 || device_ >= count)
      return failed("CUDA memory port: device " + std::to_string(device_) + " out of range (" +
                        std::to_string(count) + " devices)",
                    err);
    DeviceScope scope(device_);
    if (scope.status() != cudaSuccess)
      return failed(cuda_detail::describe("CUDA memory port: cudaSetDevice", scope.status()), err);
    cudaStream_t s = nullptr;
    e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    if (e != cudaSuccess)
      return failed(cuda_detail::describe("CUDA memory port: cudaStreamCreateWithFlags", e), err);
    stream_ = s;
    e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    if (e != cudaSuccess)
      return failed(
          cuda_detail::describe("CUDA memory port: cudaStreamCreateWithFlags (gathers)", e), err);
    gather_stream_ = s;
    if (placement_tickets_.init("CUDA memory port", err) != 0) return -1;
    if (gather_tickets_.init("CUDA memory port", err) != 0) return -1;
    void* p = nullptr;
    e = cudaHostAlloc(&p, kArenaBytes, cudaHostAllocPortable);
    if (e != cudaSuccess)
      return failed(cuda_detail::describe("CUDA memory port: cudaHostAlloc (placement arena)", e),
                    err);
    placement_arena_ = (uint8_t*)p;
    e = cudaHostAlloc(&p, kArenaBytes, cudaHostAllocPortable);
    if (e != cudaSuccess)
      return failed(cuda_detail::describe("CUDA memory port: cudaHostAlloc (gather arena)", e),
                    err);
    gather_arena_ = (uint8_t*)p;
    e = cudaHostAlloc(&p, kBounceBytes, cudaHostAllocPortable);
    if (e != cudaSuccess)
      return failed(cuda_detail::describe("CUDA memory port: cudaHostAlloc (bounce buffer)", e),
                    err);
    bounce_ = (uint8_t*)p;
    e = cudaHostAlloc(&p, 64, cudaHostAllocMapped | cudaHostAllocPortable);
    if (e != cudaSuccess)
      return failed(cuda_detail::describe("CUDA memory port: cudaHostAlloc (atomic result)", e),
                    err);
    result_host_ = (uint32_t*)p;
    std::memset(result_host_, 0, 64);
    e = cudaHostGetDevicePointer(&p, result_host_, 0);
    if (e != cudaSuccess)
      return failed(cuda_detail::describe("CUDA memory port: cudaHostGetDevicePointer", e), err);
    result_dev_ = (uint32_t*)p;
    return preloadAtomicKernel(err);
  }

  bool direct() const override { return false; }

  int allocControl(size_t bytes, void** host, void** dev, std::string* err) override {
    DeviceScope scope(device_);
    if (scope.status() != cudaSuccess)
      return failed(cuda_detail::describe("allocControl: cudaSetDevice", scope.status()), err);
    void* h = nullptr;
    // Mapped: kernels write WQEs and doorbells into it; portable: any context may map it.
    cudaError_t e = cudaHostAlloc(&h, bytes, cudaHostAllocMapped | cudaHostAllocPortable);
    if (e != cudaSuccess)
      return failed(cuda_detail::describe("allocControl: cudaHostAlloc", e), err);
    std::memset(h, 0, bytes);
    void* d = nullptr;
    e = cudaHostGetDevicePointer(&d, h, 0);
    if (e != cudaSuccess) {
      cudaFreeHost(h);
      return failed(cuda_detail::describe("allocControl: cudaHostGetDevicePointer", e), err);
    }
    *host = h;
    *dev = d;
    return 0;
  }

  void freeControl(void* host) override {
    DeviceScope scope(device_);
    cudaFreeHost(host);
  }

  int allocTable(size_t bytes, void** dev, std::string* err) override {
    DeviceScope scope(device_);
    if (scope.status() != cudaSuccess)
      return failed(cuda_detail::describe("allocTable: cudaSetDevice", scope.status()), err);
    void* d = nullptr;
    cudaError_t e = cudaMalloc(&d, bytes);
    if (e != cudaSuccess) return failed(cuda_detail::describe("allocTable: cudaMalloc", e), err);
    std::lock_guard<std::mutex> lock(mu_);
    e = cudaMemsetAsync(d, 0, bytes, stream_);
    if (e != cudaSuccess) {
      cudaFree(d);
      return failed(cuda_detail::describe("allocTable: cudaMemsetAsync", e), err);
    }
    if (finish("allocTable", err) != 0) {
      cudaFree(d);
      return -1;
    }
    *dev = d;
    return 0;
  }

  void freeTable(void* dev) override {
    DeviceScope scope(device_);
    cudaFree(dev);
  }

  int toTable(void* dev, const void* src, size_t bytes, std::string* err) override {
    return write((uint64_t)(uintptr_t)dev, src, bytes, err);
  }

  int fromTable(void* dst, const void* dev, size_t bytes, std::string* err) override {
    return read(dst, (uint64_t)(uintptr_t)dev, bytes, err);
  }

  int read(void* dst, uint64_t src, size_t bytes, std::string* err) override {
    DeviceScope scope(device_);
    if (scope.status() != cudaSuccess)
      return failed(cuda_detail::describe("read: cudaSetDevice", scope.status()), err);
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t done = 0; done < bytes;) {
      const size_t n = bytes - done < kBounceBytes ? bytes - done : kBounceBytes;
      const cudaError_t e = cudaMemcpyAsync(bounce_, (const void*)(uintptr_t)(src + done), n,
                                            cudaMemcpyDefault, stream_);
      if (e != cudaSuccess) return failed(cuda_detail::describe("read: cudaMemcpyAsync", e), err);
      if (finish("read", err) != 0) return -1;
      std::memcpy((uint8_t*)dst + done, bounce_, n);
      done += n;
    }
    return 0;
  }

  int write(uint64_t dst, const void* src, size_t bytes, std::string* err) override {
    DeviceScope scope(device_);
    if (scope.status() != cudaSuccess)
      return failed(cuda_detail::describe("write: cudaSetDevice", scope.status()), err);
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t done = 0; done < bytes;) {
      const size_t n = bytes - done < kBounceBytes ? bytes - done : kBounceBytes;
      std::memcpy(bounce_, (const uint8_t*)src + done, n);
      const cudaError_t e =
          cudaMemcpyAsync((void*)(uintptr_t)(dst + done), bounce_, n, cudaMemcpyDefault, stream_);
      if (e != cudaSuccess) return failed(cuda_detail::describe("write: cudaMemcpyAsync", e), err);
      // The bounce buffer is reused next: wait; this also places the data before any later
      // atomic of the port (the contract of MemoryPort::write).
      if (finish("write", err) != 0) return -1;
      done += n;
    }
    return 0;
  }

  int fetchAddMasked32(uint64_t addr, uint32_t add, uint32_t field_boundary, uint32_t* old,
                       std::string* err) override {
    DeviceScope scope(device_);
    if (scope.status() != cudaSuccess)
      return failed(cuda_detail::describe("atomic: cudaSetDevice", scope.status()), err);
    std::lock_guard<std::mutex> lock(mu_);
    result_host_[0] = 0;
    result_host_[1] = 0;
    fetch_add_masked32_kernel<<<1, 1, 0, stream_>>>((uint32_t*)(uintptr_t)addr, add, field_boundary,
                                                    result_dev_);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return failed(cuda_detail::describe("atomic: kernel launch", e), err);
    if (finish("atomic", err) != 0) return -1;
    const uint32_t outcome = __atomic_load_n(&result_host_[1], __ATOMIC_ACQUIRE);
    if (outcome != 1u)
      return failed(
          "masked fetch-and-add did not win its compare-and-swap within 2^20 attempts "
          "(outcome " +
              std::to_string(outcome) + ")",
          err);
    *old = __atomic_load_n(&result_host_[0], __ATOMIC_ACQUIRE);
    return 0;
  }

  uint8_t* placementArena() override { return placement_arena_; }
  size_t placementArenaBytes() const override { return kArenaBytes; }

  int placeAsync(uint64_t dst, size_t offset, size_t bytes, std::string* err) override {
    if (offset > kArenaBytes || bytes > kArenaBytes - offset)
      return failed("placeAsync: arena range out of bounds", err);
    DeviceScope scope(device_);
    if (scope.status() != cudaSuccess)
      return failed(cuda_detail::describe("placeAsync: cudaSetDevice", scope.status()), err);
    std::lock_guard<std::mutex> lock(mu_);
    // The port's ordered stream: after the earlier writes, before a later atomic.
    const cudaError_t e = cudaMemcpyAsync((void*)(uintptr_t)dst, placement_arena_ + offset, bytes,
                                          cudaMemcpyDefault, stream_);
    if (e != cudaSuccess)
      return failed(cuda_detail::describe("placeAsync: cudaMemcpyAsync", e), err);
    return 0;
  }

  uint64_t placementTicket(std::string* err) override {
    DeviceScope scope(device_);
    if (scope.status() != cudaSuccess) {
      *err = cuda_detail::describe("placementTicket: cudaSetDevice", scope.status());
      return 0;
    }
    std::lock_guard<std::mutex> lock(mu_);
    return placement_tickets_.take(stream_, "placement", err);
  }

  int awaitPlacement(uint64_t ticket, std::string* err) override {
    DeviceScope scope(device_);
    if (scope.status() != cudaSuccess)
      return failed(cuda_detail::describe("awaitPlacement: cudaSetDevice", scope.status()), err);
    std::lock_guard<std::mutex> lock(mu_);
    return placement_tickets_.await(ticket, "placement", err);
  }

  uint8_t* gatherArena() override { return gather_arena_; }
  size_t gatherArenaBytes() const override { return kArenaBytes; }

  int gatherAsync(size_t offset, uint64_t src, size_t bytes, std::string* err) override {
    if (offset > kArenaBytes || bytes > kArenaBytes - offset)
      return failed("gatherAsync: arena range out of bounds", err);
    DeviceScope scope(device_);
    if (scope.status() != cudaSuccess)
      return failed(cuda_detail::describe("gatherAsync: cudaSetDevice", scope.status()), err);
    std::lock_guard<std::mutex> lock(gather_mu_);
    const cudaError_t e = cudaMemcpyAsync(gather_arena_ + offset, (const void*)(uintptr_t)src,
                                          bytes, cudaMemcpyDefault, gather_stream_);
    if (e != cudaSuccess)
      return failed(cuda_detail::describe("gatherAsync: cudaMemcpyAsync", e), err);
    return 0;
  }

  uint64_t gatherTicket(std::string* err) override {
    DeviceScope scope(device_);
    if (scope.status() != cudaSuccess) {
      *err = cuda_detail::describe("gatherTicket: cudaSetDevice", scope.status());
      return 0;
    }
    std::lock_guard<std::mutex> lock(gather_mu_);
    return gather_tickets_.take(gather_stream_, "gather", err);
  }

  int awaitGather(uint64_t ticket, std::string* err) override {
    DeviceScope scope(device_);
    if (scope.status() != cudaSuccess)
      return failed(cuda_detail::describe("awaitGather: cudaSetDevice", scope.status()), err);
    std::lock_guard<std::mutex> lock(gather_mu_);
    return gather_tickets_.await(ticket, "gather", err);
  }

 private:
  static int failed(const std::string& message, std::string* err) {
    *err = message;
    return -1;
  }

  // Loads the atomic kernel in this device's context now (cudaFuncGetAttributes forces a lazy
  // load) and runs it once on a device word of its own, so that no responder ever loads a kernel
  // (a possible context synchronisation) while te4j kernels wait for it. Also reports an
  // unusable kernel image at initialize instead of as a remote-operation error mid-traffic.
  int preloadAtomicKernel(std::string* err) {
    cudaFuncAttributes attr;
    cudaError_t e = cudaFuncGetAttributes(&attr, fetch_add_masked32_kernel);
    if (e != cudaSuccess)
      return failed(cuda_detail::describe(
                        "CUDA memory port: loading the atomic kernel (cudaFuncGetAttributes)", e),
                    err);
    void* d = nullptr;
    e = cudaMalloc(&d, 64);
    if (e != cudaSuccess)
      return failed(cuda_detail::describe("CUDA memory port: cudaMalloc (probe word)", e), err);
    probe_dev_ = (uint32_t*)d;
    e = cudaMemsetAsync(probe_dev_, 0, 64, stream_);
    if (e != cudaSuccess)
      return failed(cuda_detail::describe("CUDA memory port: cudaMemsetAsync (probe word)", e),
                    err);
    result_host_[0] = 0;
    result_host_[1] = 0;
    fetch_add_masked32_kernel<<<1, 1, 0, stream_>>>(probe_dev_, 1u, 0u, result_dev_);
    e = cudaGetLastError();
    if (e != cudaSuccess)
      return failed(cuda_detail::describe("CUDA memory port: atomic kernel warm-up launch", e),
                    err);
    if (finish("atomic kernel warm-up", err) != 0) return -1;
    const uint32_t outcome = __atomic_load_n(&result_host_[1], __ATOMIC_ACQUIRE);
    if (outcome != 1u)
      return failed("CUDA memory port: the atomic kernel's warm-up run reported outcome " +
                        std::to_string(outcome) + " (expected 1)",
                    err);
    return 0;
  }

  // Waits (bounded) for everything queued on the port's ordered stream.
  int finish(const char* what, std::string* err) {
    return awaitGpu([this] { return cudaStreamQuery(stream_); },
                    std::string(what) + ": cudaStreamQuery", err);
  }

  const int device_;
  std::mutex mu_;  // one user of the stream, bounce buffer, result words, placements at a time
  cudaStream_t stream_ = nullptr;
  StreamTickets placement_tickets_;  // over stream_
  uint8_t* placement_arena_ = nullptr;
  std::mutex gather_mu_;  // the gather stream, its tickets
  cudaStream_t gather_stream_ = nullptr;
  StreamTickets gather_tickets_;
  uint8_t* gather_arena_ = nullptr;
  uint8_t* bounce_ = nullptr;
  uint32_t* result_host_ = nullptr;
  uint32_t* result_dev_ = nullptr;
  uint32_t* probe_dev_ = nullptr;  // device word of the warm-up atomic (preloadAtomicKernel)
};

}  // namespace

std::unique_ptr<MemoryPort> makeCudaMemoryPort(int device, std::string* err) {
  auto port = std::make_unique<CudaMemoryPort>(device);
  if (port->init(err) != 0) return nullptr;
  return port;
}

}  // namespace rdma
}  // namespace te4j
