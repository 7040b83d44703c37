// cuda_p2p_transport.cu — te4j::P2pTransport for kPlatformCuda: symmetric buffers are whole
// cudaMalloc allocations (or registered ones), shared through CUDA IPC handles; ranks of one
// process on different GPUs use each other's raw pointers with peer access enabled.
//
// Why raw pointers inside one process: cudaIpcOpenMemHandle fails in the exporting process
// ("invalid device context"), and a direct pointer needs no mapping at all.
// Why fabric handles are not used: see fabricStatus in cuda_runtime_api.cu (TODO(fabric)).
// Tables are in device memory: kernels read them through CommCtx.
//
// Threading: every method takes the object's mutex and restores the caller's current device.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "core/cuda_bridge.h"
#include "handle_blob.h"
#include "peer_table_mirror.h"
#include "core/cuda_driver_entry.cuh"
#include "core/cuda_errors.cuh"
#include "transport/device/comm_device.cuh"

namespace te4j {
namespace {

using cuda_detail::describe;
using cuda_detail::statusOf;

// Handle blob of the CUDA platform, in int32 words after the common header (handle_blob.h):
//   10     device   the owner's device ordinal (meaningful only inside the owner process)
//   11..14 uuid     the device's 16-byte UUID
//   15     pci      (PCI domain << 16) | (bus << 8) | device
//   16..17 ptr      the buffer's address in the owner process (lo, hi): used by ranks of the
//                   owner process itself
//   18..19 offset   the buffer's offset inside its cudaMalloc allocation (lo, hi)
//   20..35 ipc      cudaIpcMemHandle_t of the whole allocation (64 bytes)
constexpr int kDeviceAt = 10;
constexpr int kUuidAt = 11;
constexpr int kPciAt = 15;
constexpr int kPtrAt = 16;
constexpr int kOffsetAt = 18;
constexpr int kIpcAt = 20;
constexpr int kCudaHandleInts = 36;
static_assert(sizeof(cudaIpcMemHandle_t) == 64, "cudaIpcMemHandle_t is 16 ints");
static_assert(sizeof(cudaUUID_t) == 16, "cudaUUID_t is 4 ints");

uint64_t join(const int32_t* lo_hi) {
  return static_cast<uint64_t>(static_cast<uint32_t>(lo_hi[0])) |
         (static_cast<uint64_t>(static_cast<uint32_t>(lo_hi[1])) << 32);
}

void split(uint64_t v, int32_t* lo_hi) {
  lo_hi[0] = static_cast<int32_t>(static_cast<uint32_t>(v));
  lo_hi[1] = static_cast<int32_t>(static_cast<uint32_t>(v >> 32));
}

// Reads a byte at both ends of each available peer buffer and, where native P2P atomics exist
// and the base is aligned, adds 0 to its first word (a write that changes nothing).
// One thread per rank; seen[r] = 1 when rank r was probed.
__global__ void probePeers(void* const* peer_ptrs, const int* available, const int* atomics_ok,
                           int num_ranks, size_t bytes, int* seen) {
  const int r = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (r >= num_ranks) return;
  if (available[r] == 0) {
    seen[r] = 0;
    return;
  }
  unsigned char* base = static_cast<unsigned char*>(peer_ptrs[r]);
  const volatile unsigned char* bytes_v = base;
  const unsigned char first = bytes_v[0];
  const unsigned char last = bytes_v[bytes - 1];
  if (atomics_ok[r] != 0 && bytes >= sizeof(unsigned int) &&
      (reinterpret_cast<uintptr_t>(base) & 3u) == 0) {
    atomicAdd_system(reinterpret_cast<unsigned int*>(base), 0u);
  }
  seen[r] = 1 + ((first & last) & 0);
}

struct Buffer {
  void* ptr = nullptr;
  size_t bytes = 0;
  void* alloc_base = nullptr;  // base of the cudaMalloc allocation holding ptr
  size_t offset = 0;           // ptr - alloc_base
  bool owned = false;          // from allocateBuffer (freed with cudaFree) or registered
};

struct Window {
  bool open = true;
  void* local_base = nullptr;
  size_t bytes = 0;
  int rank = 0;
  int* d_available = nullptr;  // device copies of the tables (what kernels read)
  void** d_peer_ptrs = nullptr;
  std::vector<int> available;  // host copies
  std::vector<void*> peer_ptrs;
  std::vector<void*> ipc_bases;  // what cudaIpcOpenMemHandle returned; nullptr if not opened
  std::vector<int> atomics_ok;   // native P2P atomics from this device to the peer's memory
  std::vector<int32_t> pids;     // owner process of each peer
};

class CudaP2pTransport final : public P2pTransport {
 public:
  CudaP2pTransport(int device, int num_ranks) : device_(device), num_ranks_(num_ranks) {
    const int st = init();
    if (st != kOk) {
      init_status_ = st;
      last_error_ = init_error_;
    }
  }

  ~CudaP2pTransport() override {
    std::lock_guard<std::mutex> lock(mu_);
    cuda_detail::DeviceGuard guard;
    if (cudaSetDevice(device_) != cudaSuccess) return;  // CUDA is gone: nothing to release
    std::string ignored;
    for (auto& w : windows_) releaseWindow(w.get(), &ignored);
    for (auto& m : segment_maps_) {
      if (m->ipc_bases[0] != nullptr) cudaIpcCloseMemHandle(m->ipc_bases[0]);
    }
    for (Buffer& b : buffers_) {
      if (b.owned) cudaFree(b.ptr);
    }
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    cudaGetLastError();
  }

  int platform() const override { return kPlatformCuda; }
  int device() const override { return device_; }
  int handleInts() const override { return kCudaHandleInts; }

  int allocateBuffer(std::size_t bytes, void** out) override {
    std::lock_guard<std::mutex> lock(mu_);
    cuda_detail::DeviceGuard guard;
    if (int st = enter()) return st;
    if (out == nullptr) return fail(kInvalidArgument, "allocateBuffer: out is null");
    *out = nullptr;
    if (bytes == 0) return fail(kInvalidArgument, "allocateBuffer: bytes must be > 0");
    Buffer b;
    cudaError_t e = cudaMalloc(&b.ptr, bytes);
    if (e != cudaSuccess) {
      return cudaFail("allocateBuffer: cudaMalloc(" + std::to_string(bytes) + ")", e);
    }
    e = cudaMemsetAsync(b.ptr, 0, bytes, stream_);
    if (e == cudaSuccess) e = cudaStreamSynchronize(stream_);
    if (e != cudaSuccess) {
      cudaFree(b.ptr);
      return cudaFail("allocateBuffer: zero-filling with cudaMemsetAsync", e);
    }
    b.bytes = bytes;
    b.alloc_base = b.ptr;
    b.owned = true;
    try {
      buffers_.push_back(b);
    } catch (const std::bad_alloc&) {
      cudaFree(b.ptr);
      return fail(kOutOfMemory, "allocateBuffer: out of memory for bookkeeping");
    }
    *out = b.ptr;
    return ok();
  }

  // Refused while an open window uses the buffer as its local buffer: kernels and peers address
  // it through the window's tables. Peers must close their windows before the owner frees: CUDA
  // leaves freeing an allocation that others still map undefined.
  int freeBuffer(void* ptr) override {
    std::lock_guard<std::mutex> lock(mu_);
    cuda_detail::DeviceGuard guard;
    if (int st = enter()) return st;
    for (size_t i = 0; i < buffers_.size(); ++i) {
      if (buffers_[i].ptr != ptr) continue;
      for (size_t w = 0; w < windows_.size(); ++w) {
        if (windows_[w]->open && windows_[w]->local_base == ptr) {
          return fail(kIllegalState, "freeBuffer: the buffer is used by open window " +
                                         std::to_string(w) + "; close the window first");
        }
      }
      if (buffers_[i].owned) {
        const cudaError_t e = cudaFree(ptr);
        if (e != cudaSuccess) return cudaFail("freeBuffer: cudaFree", e);
      }
      buffers_.erase(buffers_.begin() + static_cast<std::ptrdiff_t>(i));
      return ok();
    }
    return fail(kInvalidArgument,
                "freeBuffer: pointer is not the start of a buffer of this "
                "transport");
  }

  // Registers [ptr, ptr + bytes) of a cudaMalloc allocation made elsewhere. ptr may lie inside
  // the allocation: the handle exports the whole allocation plus the offset (so peers can reach
  // the whole allocation, not only the range). The caller keeps the allocation alive until
  // freeBuffer(ptr). Refused: managed memory, host memory, another device's memory, stream-
  // ordered pool memory (cudaMallocAsync) and VMM memory (cuMemCreate): CUDA IPC cannot export
  // them.
  int registerBuffer(void* ptr, std::size_t bytes) override {
    std::lock_guard<std::mutex> lock(mu_);
    cuda_detail::DeviceGuard guard;
    if (int st = enter()) return st;
    if (ptr == nullptr || bytes == 0) {
      return fail(kInvalidArgument, "registerBuffer: ptr is null or bytes is 0");
    }
    cudaPointerAttributes attr;
    cudaError_t e = cudaPointerGetAttributes(&attr, ptr);
    if (e != cudaSuccess) {
      cudaGetLastError();
      return fail(kInvalidArgument, "registerBuffer: " + describe("cudaPointerGetAttributes", e));
    }
    switch (attr.type) {
      case cudaMemoryTypeDevice: break;
      case cudaMemoryTypeManaged:
        return fail(kInvalidArgument,
                    "registerBuffer: managed memory (cudaMallocManaged) is not "
                    "exportable with CUDA IPC; allocate with cudaMalloc");
      case cudaMemoryTypeHost:
        return fail(kInvalidArgument,
                    "registerBuffer: pinned host memory is not device memory; "
                    "allocate with cudaMalloc");
      default:
        return fail(kInvalidArgument,
                    "registerBuffer: the pointer is not CUDA memory; allocate "
                    "with cudaMalloc");
    }
    if (attr.device != device_) {
      return fail(kInvalidArgument, "registerBuffer: the memory is on device " +
                                        std::to_string(attr.device) + ", this transport on " +
                                        std::to_string(device_));
    }
    if (get_attribute_ == nullptr || get_range_ == nullptr) {
      return fail(kUnavailable,
                  "registerBuffer: the driver lacks cuPointerGetAttribute or "
                  "cuMemGetAddressRange; cannot find the allocation holding ptr");
    }
    const CUdeviceptr dptr = reinterpret_cast<CUdeviceptr>(ptr);
    CUmemoryPool pool = nullptr;
    if (get_attribute_(&pool, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, dptr) == CUDA_SUCCESS &&
        pool != nullptr) {
      return fail(kInvalidArgument,
                  "registerBuffer: pool memory is not exportable; allocate "
                  "with cudaMalloc (not cudaMallocAsync / a memory pool)");
    }
    int ipc_capable = 1;
    if (get_attribute_(&ipc_capable, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, dptr) ==
            CUDA_SUCCESS &&
        ipc_capable == 0) {
      return fail(kInvalidArgument,
                  "registerBuffer: the allocation is not exportable with CUDA "
                  "IPC (virtual memory from cuMemCreate, e.g. PyTorch "
                  "expandable_segments); allocate with cudaMalloc");
    }
    CUdeviceptr base = 0;
    size_t size = 0;
    const CUresult r = get_range_(&base, &size, dptr);
    if (r != CUDA_SUCCESS) {
      return fail(kCudaError, "registerBuffer: cuMemGetAddressRange failed: " +
                                  cuda_detail::driverErrorText(r));
    }
    const size_t offset = static_cast<size_t>(dptr - base);
    if (bytes > size - offset) {
      return fail(kInvalidArgument, "registerBuffer: [ptr, ptr + " + std::to_string(bytes) +
                                        ") runs past the end of its allocation (" +
                                        std::to_string(size - offset) + " bytes left)");
    }
    for (const Buffer& b : buffers_) {
      const uintptr_t a0 = reinterpret_cast<uintptr_t>(ptr);
      const uintptr_t b0 = reinterpret_cast<uintptr_t>(b.ptr);
      if (a0 < b0 + b.bytes && b0 < a0 + bytes) {
        return fail(kInvalidArgument,
                    "registerBuffer: the range overlaps a buffer already "
                    "allocated or registered here");
      }
    }
    cudaIpcMemHandle_t handle;
    e = cudaIpcGetMemHandle(&handle, reinterpret_cast<void*>(base));
    if (e != cudaSuccess) {
      cudaGetLastError();
      return fail(kInvalidArgument, "registerBuffer: " + describe("cudaIpcGetMemHandle", e) +
                                        ": pool memory is not exportable; allocate with "
                                        "cudaMalloc");
    }
    Buffer b;
    b.ptr = ptr;
    b.bytes = bytes;
    b.alloc_base = reinterpret_cast<void*>(base);
    b.offset = offset;
    b.owned = false;
    try {
      buffers_.push_back(b);
    } catch (const std::bad_alloc&) {
      return fail(kOutOfMemory, "registerBuffer: out of memory for bookkeeping");
    }
    return ok();
  }

  int exportIpcHandle(void* ptr, int32_t* out, int capacity) override {
    std::lock_guard<std::mutex> lock(mu_);
    cuda_detail::DeviceGuard guard;
    if (int st = enter()) return st;
    if (out == nullptr || capacity < kCudaHandleInts) {
      return fail(kInvalidArgument, "exportIpcHandle: blob is null or capacity " +
                                        std::to_string(capacity) + " < " +
                                        std::to_string(kCudaHandleInts) + " ints");
    }
    const Buffer* b = findContaining(ptr);
    if (b == nullptr) {
      return fail(kInvalidArgument,
                  "exportIpcHandle: pointer is not inside a buffer of this "
                  "transport");
    }
    cudaIpcMemHandle_t handle;
    const cudaError_t e = cudaIpcGetMemHandle(&handle, b->alloc_base);
    if (e != cudaSuccess) return cudaFail("exportIpcHandle: cudaIpcGetMemHandle", e);
    std::memset(out, 0, sizeof(int32_t) * kCudaHandleInts);
    blob::writeHeader(out, kPlatformCuda, b->bytes);
    out[kDeviceAt] = device_;
    std::memcpy(out + kUuidAt, &uuid_, sizeof(uuid_));
    out[kPciAt] = pci_;
    split(reinterpret_cast<uintptr_t>(b->ptr), out + kPtrAt);
    split(b->offset, out + kOffsetAt);
    std::memcpy(out + kIpcAt, &handle, sizeof(handle));
    ok();
    return kCudaHandleInts;
  }

  // A one-peer window of its own per segment: the same checks and mapping as a window's peer
  // (raw pointer in this process, CUDA IPC from another), with the size the handle carries.
  int mapSegment(const int32_t* b, int ints, void** base, uint64_t* bytes) override {
    std::lock_guard<std::mutex> lock(mu_);
    cuda_detail::DeviceGuard guard;
    if (int st = enter()) return st;
    if (b == nullptr || base == nullptr || bytes == nullptr)
      return fail(kInvalidArgument, "mapSegment: null argument");
    if (ints != kCudaHandleInts) {
      return fail(kBadHandle, "mapSegment: a CUDA handle has " + std::to_string(kCudaHandleInts) +
                                  " ints, got " + std::to_string(ints));
    }
    const uint64_t size = blob::sizeOf(b);
    std::string why;
    if (int st = blob::checkHeader(b, kPlatformCuda, 0, size, &why))
      return fail(st, "mapSegment: " + why);
    if (size == 0) return fail(kBadHandle, "mapSegment: the handle's size is 0");
    if (int st = checkCudaFields(0, b, (size_t)size, &why)) return fail(st, "mapSegment: " + why);
    std::unique_ptr<Window> w(new (std::nothrow) Window());
    if (w == nullptr) return fail(kOutOfMemory, "mapSegment: out of memory");
    try {
      w->bytes = (size_t)size;
      w->available.assign(1, 0);
      w->peer_ptrs.assign(1, nullptr);
      w->ipc_bases.assign(1, nullptr);
      w->atomics_ok.assign(1, 0);
      w->pids.assign(1, 0);
      segment_maps_.reserve(segment_maps_.size() + 1);
    } catch (const std::bad_alloc&) {
      return fail(kOutOfMemory, "mapSegment: out of memory");
    }
    if (int st = mapPeer(0, b, w.get(), &why)) {
      if (w->ipc_bases[0] != nullptr) cudaIpcCloseMemHandle(w->ipc_bases[0]);
      cudaGetLastError();
      return fail(st, "mapSegment: " + why);
    }
    *base = w->peer_ptrs[0];
    *bytes = size;
    segment_maps_.push_back(std::move(w));
    return ok();
  }

  int unmapSegment(void* base) override {
    std::lock_guard<std::mutex> lock(mu_);
    cuda_detail::DeviceGuard guard;
    if (int st = enter()) return st;
    for (auto it = segment_maps_.begin(); it != segment_maps_.end(); ++it) {
      if ((*it)->peer_ptrs[0] != base) continue;
      const cudaError_t e =
          (*it)->ipc_bases[0] != nullptr ? cudaIpcCloseMemHandle((*it)->ipc_bases[0]) : cudaSuccess;
      segment_maps_.erase(it);
      if (e != cudaSuccess) {
        std::string why;
        return fail(cudaWhy("unmapSegment: cudaIpcCloseMemHandle", e, &why), why);
      }
      return ok();
    }
    return fail(kInvalidArgument, "unmapSegment: no segment is mapped at that address");
  }

  int importPeerHandles(void* local_ptr, int rank, int num_ranks, const int32_t* remote_handles,
                        uint64_t active_ranks_mask) override {
    std::lock_guard<std::mutex> lock(mu_);
    cuda_detail::DeviceGuard guard;
    if (int st = enter()) return st;
    std::string why;
    if (int st = blob::checkImportArgs(rank, num_ranks, num_ranks_, remote_handles,
                                       active_ranks_mask, &why)) {
      return fail(st, "importPeerHandles: " + why);
    }
    const Buffer* local = findContaining(local_ptr);
    if (local == nullptr || local->ptr != local_ptr) {
      return fail(kInvalidArgument, local == nullptr
                                        ? "importPeerHandles: local_ptr is not a buffer of this "
                                          "transport"
                                        : "importPeerHandles: local_ptr must be the start of its "
                                          "buffer, not an address inside it");
    }
    for (int r = 0; r < num_ranks; ++r) {
      if (r == rank || !blob::isActive(active_ranks_mask, r)) continue;
      const int32_t* b = remote_handles + static_cast<size_t>(r) * kCudaHandleInts;
      if (int st = blob::checkHeader(b, kPlatformCuda, r, local->bytes, &why)) {
        return fail(st, "importPeerHandles: " + why);
      }
      if (int st = checkCudaFields(r, b, local->bytes, &why)) {
        return fail(st, "importPeerHandles: " + why);
      }
    }
    std::unique_ptr<Window> w(new (std::nothrow) Window());
    if (w == nullptr) return fail(kOutOfMemory, "importPeerHandles: out of memory");
    try {
      const size_t n = static_cast<size_t>(num_ranks);
      w->available.assign(n, 0);
      w->peer_ptrs.assign(n, nullptr);
      w->ipc_bases.assign(n, nullptr);
      w->atomics_ok.assign(n, 0);
      w->pids.assign(n, 0);
      windows_.reserve(windows_.size() + 1);
    } catch (const std::bad_alloc&) {
      return fail(kOutOfMemory, "importPeerHandles: out of memory for the peer tables");
    }
    w->local_base = local->ptr;
    w->bytes = local->bytes;
    w->rank = rank;
    const size_t self = static_cast<size_t>(rank);
    w->available[self] = 1;
    w->peer_ptrs[self] = local->ptr;
    w->atomics_ok[self] = 1;
    w->pids[self] = static_cast<int32_t>(::getpid());
    int st = kOk;
    for (int r = 0; r < num_ranks && st == kOk; ++r) {
      if (r == rank || !blob::isActive(active_ranks_mask, r)) continue;
      const int32_t* b = remote_handles + static_cast<size_t>(r) * kCudaHandleInts;
      st = mapPeer(r, b, w.get(), &why);
    }
    if (st == kOk) st = uploadTables(w.get(), &why);
    if (st != kOk) {
      std::string ignored;
      releaseWindow(w.get(), &ignored);
      return fail(st, "importPeerHandles: " + why);
    }
    windows_.push_back(std::move(w));
    ok();
    return static_cast<int>(windows_.size() - 1);
  }

  int closeWindow(int window) override {
    std::lock_guard<std::mutex> lock(mu_);
    cuda_detail::DeviceGuard guard;
    if (int st = enter()) return st;
    Window* w = findWindow(window);
    if (w == nullptr) {
      return fail(kInvalidArgument,
                  "closeWindow: window " + std::to_string(window) + " is not open");
    }
    std::string why;
    const int st = releaseWindow(w, &why);
    return st == kOk ? ok() : fail(st, "closeWindow: " + why);
  }

  void* availableTablePtr(int window) override {
    std::lock_guard<std::mutex> lock(mu_);
    Window* w = findWindow(window);
    if (w == nullptr) {
      fail(kInvalidArgument,
           "availableTablePtr: window " + std::to_string(window) + " is not open");
      return nullptr;
    }
    return w->d_available;
  }

  void* peerPtrsTablePtr(int window) override {
    std::lock_guard<std::mutex> lock(mu_);
    Window* w = findWindow(window);
    if (w == nullptr) {
      fail(kInvalidArgument, "peerPtrsTablePtr: window " + std::to_string(window) + " is not open");
      return nullptr;
    }
    return w->d_peer_ptrs;
  }

  bool allPeersAccessible(int window) override {
    std::lock_guard<std::mutex> lock(mu_);
    Window* w = findWindow(window);
    if (w == nullptr) return false;
    for (int a : w->available) {
      if (a == 0) return false;
    }
    return true;
  }

  // Checks, in order: each peer's owner process still runs; the runtime knows each peer pointer
  // as device memory; a kernel reading the device tables touches every peer buffer (both ends,
  // plus an atomic add of 0 where native P2P atomics exist) and completes without a fault.
  int verifyPeerAccess(int window) override {
    std::lock_guard<std::mutex> lock(mu_);
    cuda_detail::DeviceGuard guard;
    if (int st = enter()) return st;
    Window* w = findWindow(window);
    if (w == nullptr) {
      return fail(kInvalidArgument,
                  "verifyPeerAccess: window " + std::to_string(window) + " is not open");
    }
    const int n = static_cast<int>(w->available.size());
    for (int r = 0; r < n; ++r) {
      if (w->available[static_cast<size_t>(r)] == 0) continue;
      if (blob::ownerExited(w->pids[static_cast<size_t>(r)])) {
        return fail(kPeerLost, "verifyPeerAccess: rank " + std::to_string(r) +
                                   ": the owner "
                                   "process " +
                                   std::to_string(w->pids[static_cast<size_t>(r)]) + " has exited");
      }
      cudaPointerAttributes attr;
      const cudaError_t e = cudaPointerGetAttributes(&attr, w->peer_ptrs[static_cast<size_t>(r)]);
      if (e != cudaSuccess || attr.type != cudaMemoryTypeDevice) {
        cudaGetLastError();
        return fail(kPeerLost,
                    "verifyPeerAccess: rank " + std::to_string(r) +
                        ": the peer "
                        "pointer is no longer known as device memory" +
                        (e != cudaSuccess ? ": " + describe("cudaPointerGetAttributes", e)
                                          : std::string()));
      }
    }
    int* scratch = nullptr;  // [0, n) atomics_ok, [n, 2n) seen
    cudaError_t e = cudaMalloc(&scratch, sizeof(int) * 2 * static_cast<size_t>(n));
    if (e != cudaSuccess) return cudaFail("verifyPeerAccess: cudaMalloc of the probe flags", e);
    std::vector<int> seen(static_cast<size_t>(n), 0);
    const char* step = "cudaMemcpyAsync of the probe flags";
    e = cudaMemcpyAsync(scratch, w->atomics_ok.data(), sizeof(int) * static_cast<size_t>(n),
                        cudaMemcpyHostToDevice, stream_);
    if (e == cudaSuccess) e = cudaMemsetAsync(scratch + n, 0, sizeof(int) * n, stream_);
    if (e == cudaSuccess) {
      probePeers<<<1, blob::kMaxRanks, 0, stream_>>>(w->d_peer_ptrs, w->d_available, scratch, n,
                                                     w->bytes, scratch + n);
      step = "launching the probe kernel";
      e = cudaGetLastError();
    }
    if (e == cudaSuccess) {
      step = "cudaMemcpyAsync of the probe results";
      e = cudaMemcpyAsync(seen.data(), scratch + n, sizeof(int) * static_cast<size_t>(n),
                          cudaMemcpyDeviceToHost, stream_);
    }
    if (e == cudaSuccess) {
      step = "the probe kernel (cudaStreamSynchronize)";
      e = cudaStreamSynchronize(stream_);
    }
    cudaFree(scratch);
    if (e != cudaSuccess) return cudaFail(std::string("verifyPeerAccess: ") + step, e);
    for (int r = 0; r < n; ++r) {
      if (w->available[static_cast<size_t>(r)] != 0 && seen[static_cast<size_t>(r)] != 1) {
        return fail(kCudaError, "verifyPeerAccess: rank " + std::to_string(r) +
                                    " was not "
                                    "probed: the device tables do not match the host's");
      }
    }
    return ok();
  }

  int makeCommCtx(int window, mooncake::device::CommCtx* ctx) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (init_status_ != kOk) return fail(init_status_, init_error_);
    if (ctx == nullptr) return fail(kInvalidArgument, "makeCommCtx: ctx is null");
    Window* w = findWindow(window);
    if (w == nullptr) {
      return fail(kInvalidArgument,
                  "makeCommCtx: window " + std::to_string(window) + " is not open");
    }
    mooncake::device::P2PContext p2p;
    p2p.available = w->d_available;
    p2p.peer_ptrs = w->d_peer_ptrs;
    p2p.local_base = w->local_base;
    mooncake::device::IbgdaContext ibgda;
    std::memset(&ibgda, 0, sizeof(ibgda));
    *ctx = mooncake::device::make_comm_ctx(p2p, ibgda, w->rank);
    return ok();
  }

 private:
  int init() {
    if (num_ranks_ < 1 || num_ranks_ > blob::kMaxRanks) {
      init_error_ = "num_ranks " + std::to_string(num_ranks_) + " is outside 1.." +
                    std::to_string(blob::kMaxRanks);
      return kInvalidArgument;
    }
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) return initFail("cudaGetDeviceCount", e);
    if (device_ < 0 || device_ >= count) {
      init_error_ = "device " + std::to_string(device_) + " is outside 0.." +
                    std::to_string(count - 1) + " (" + std::to_string(count) +
                    " visible CUDA devices)";
      return kInvalidArgument;
    }
    cuda_detail::DeviceGuard guard;
    e = cudaSetDevice(device_);
    if (e != cudaSuccess) return initFail("cudaSetDevice", e);
    int unified = 0;
    e = cudaDeviceGetAttribute(&unified, cudaDevAttrUnifiedAddressing, device_);
    if (e != cudaSuccess) return initFail("cudaDeviceGetAttribute(UnifiedAddressing)", e);
    if (unified == 0) {
      init_error_ = "device " + std::to_string(device_) +
                    " has no unified addressing, which "
                    "CUDA IPC requires";
      return kUnavailable;
    }
    uuids_.assign(static_cast<size_t>(count), cudaUUID_t());
    for (int d = 0; d < count; ++d) {
      cudaDeviceProp prop;
      e = cudaGetDeviceProperties(&prop, d);
      if (e != cudaSuccess) return initFail("cudaGetDeviceProperties", e);
      uuids_[static_cast<size_t>(d)] = prop.uuid;
      if (d == device_) {
        uuid_ = prop.uuid;
        pci_ = ((prop.pciDomainID & 0xffff) << 16) | ((prop.pciBusID & 0xff) << 8) |
               (prop.pciDeviceID & 0xff);
      }
    }
    e = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
    if (e != cudaSuccess) return initFail("cudaStreamCreateWithFlags", e);
    get_range_ = cuda_detail::driverEntry<PFN_cuMemGetAddressRange_v3020>("cuMemGetAddressRange");
    get_attribute_ =
        cuda_detail::driverEntry<PFN_cuPointerGetAttribute_v4000>("cuPointerGetAttribute");
    return kOk;
  }

  int initFail(const char* call, cudaError_t e) {
    cudaGetLastError();
    init_error_ = describe(call, e);
    return statusOf(e);
  }

  // Every method's entry: the object is usable and the device is current on this thread.
  int enter() {
    if (init_status_ != kOk) return fail(init_status_, init_error_);
    const cudaError_t e = cudaSetDevice(device_);
    if (e != cudaSuccess) return cudaFail("cudaSetDevice", e);
    return kOk;
  }

  int cudaFail(const std::string& what, cudaError_t e) {
    cudaGetLastError();
    return fail(statusOf(e), describe(what.c_str(), e));
  }

  const Buffer* findContaining(const void* p) const {
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    for (const Buffer& b : buffers_) {
      const uintptr_t s = reinterpret_cast<uintptr_t>(b.ptr);
      if (a >= s && a - s < b.bytes) return &b;
    }
    return nullptr;
  }

  // window -1 means the most recent open window (the device API's accessors take no window).
  Window* findWindow(int window) {
    if (window == -1) {
      for (size_t i = windows_.size(); i > 0; --i) {
        if (windows_[i - 1]->open) return windows_[i - 1].get();
      }
      return nullptr;
    }
    if (window < 0 || static_cast<size_t>(window) >= windows_.size()) return nullptr;
    Window* w = windows_[static_cast<size_t>(window)].get();
    return w->open ? w : nullptr;
  }

  // Local ordinal of the device with this UUID, or -1 when it is not visible here.
  int ordinalOf(const int32_t* uuid_words) const {
    for (size_t d = 0; d < uuids_.size(); ++d) {
      if (std::memcmp(&uuids_[d], uuid_words, sizeof(cudaUUID_t)) == 0) return static_cast<int>(d);
    }
    return -1;
  }

  static int checkCudaFields(int r, const int32_t* b, size_t bytes, std::string* why) {
    const std::string who = "handle of rank " + std::to_string(r) + ": ";
    if (b[kDeviceAt] < 0) {
      *why = who + "field device is " + std::to_string(b[kDeviceAt]) + ", expected >= 0";
      return kBadHandle;
    }
    if (join(b + kPtrAt) == 0) {
      *why = who + "field ptr is 0";
      return kBadHandle;
    }
    const uint64_t offset = join(b + kOffsetAt);
    if (offset > UINT64_MAX - bytes) {
      *why = who + "field offset " + std::to_string(offset) + " overflows with the size";
      return kBadHandle;
    }
    return kOk;
  }

  // Maps rank r's buffer into w (same process: its raw pointer; else: CUDA IPC).
  int mapPeer(int r, const int32_t* b, Window* w, std::string* why) {
    const std::string who = "rank " + std::to_string(r) + ": ";
    const size_t ri = static_cast<size_t>(r);
    const int32_t pid = b[blob::kPidAt];
    w->pids[ri] = pid;
    const int peer_device = ordinalOf(b + kUuidAt);
    void* peer = nullptr;
    if (pid == static_cast<int32_t>(::getpid())) {
      peer = reinterpret_cast<void*>(static_cast<uintptr_t>(join(b + kPtrAt)));
      if (peer_device < 0 || peer_device != b[kDeviceAt]) {
        *why = who + "the handle names device " + std::to_string(b[kDeviceAt]) +
               " of this "
               "process, but its UUID does not match that device";
        return kBadHandle;
      }
      cudaPointerAttributes attr;
      cudaError_t e = cudaPointerGetAttributes(&attr, peer);
      if (e != cudaSuccess || attr.type != cudaMemoryTypeDevice || attr.device != peer_device) {
        cudaGetLastError();
        *why = who + "the pointer in the handle is not device memory of device " +
               std::to_string(peer_device) + " in this process";
        return kBadHandle;
      }
      {
        // The driver resolves an address range only in the owning device's context.
        cuda_detail::DeviceGuard guard;
        if (cudaSetDevice(peer_device) != cudaSuccess) {
          return cudaWhy(who + "cudaSetDevice(peer)", cudaGetLastError(), why);
        }
        if (int st = checkRange(r, peer, 0, w->bytes, why)) return st;
      }
      if (peer_device != device_) {
        int can = 0;
        e = cudaDeviceCanAccessPeer(&can, device_, peer_device);
        if (e != cudaSuccess) return cudaWhy(who + "cudaDeviceCanAccessPeer", e, why);
        if (can == 0) {
          *why = who + "device " + std::to_string(device_) + " cannot map device " +
                 std::to_string(peer_device) +
                 "'s memory (no NVLink or PCIe P2P path): check "
                 "nvidia-smi topo -m";
          return kUnavailable;
        }
        e = cudaDeviceEnablePeerAccess(peer_device, 0);
        if (e == cudaErrorPeerAccessAlreadyEnabled) {
          cudaGetLastError();  // enabled earlier: fine, but the runtime recorded it as an error
        } else if (e != cudaSuccess) {
          return cudaWhy(who + "cudaDeviceEnablePeerAccess", e, why);
        }
      }
    } else {
      cudaIpcMemHandle_t handle;
      std::memcpy(&handle, b + kIpcAt, sizeof(handle));
      void* base = nullptr;
      const cudaError_t e = cudaIpcOpenMemHandle(&base, handle, cudaIpcMemLazyEnablePeerAccess);
      if (e != cudaSuccess) {
        cudaGetLastError();
        if (blob::ownerExited(pid)) {
          *why = who + describe("cudaIpcOpenMemHandle", e) + ": the owner process " +
                 std::to_string(pid) + " has exited";
          return kPeerLost;
        }
        *why = who + describe("cudaIpcOpenMemHandle", e);
        return e == cudaErrorInvalidValue || e == cudaErrorInvalidResourceHandle ||
                       e == cudaErrorMapBufferObjectFailed
                   ? kBadHandle
                   : statusOf(e);
      }
      w->ipc_bases[ri] = base;
      const uint64_t offset = join(b + kOffsetAt);
      peer = static_cast<unsigned char*>(base) + offset;
      // A forged size or offset must not let kernels write past the mapped allocation.
      if (int st = checkRange(r, base, offset, w->bytes, why)) return st;
    }
    int atomics = peer_device == device_ ? 1 : 0;
    if (peer_device >= 0 && peer_device != device_) {
      if (cudaDeviceGetP2PAttribute(&atomics, cudaDevP2PAttrNativeAtomicSupported, device_,
                                    peer_device) != cudaSuccess) {
        cudaGetLastError();
        atomics = 0;
      }
    }
    w->atomics_ok[ri] = atomics != 0 ? 1 : 0;
    w->peer_ptrs[ri] = peer;
    w->available[ri] = 1;
    return kOk;
  }

  // kOk when [base + offset, base + offset + bytes) lies inside the allocation holding base.
  int checkRange(int r, void* base, uint64_t offset, size_t bytes, std::string* why) {
    if (get_range_ == nullptr) return kOk;  // nothing to check with; the handle's word stands
    CUdeviceptr start = 0;
    size_t size = 0;
    const CUresult res = get_range_(&start, &size, reinterpret_cast<CUdeviceptr>(base));
    if (res != CUDA_SUCCESS) {
      *why = "rank " + std::to_string(r) + ": cuMemGetAddressRange of the peer buffer failed: " +
             cuda_detail::driverErrorText(res);
      return kBadHandle;
    }
    const uint64_t used = reinterpret_cast<uintptr_t>(base) - start + offset;
    if (used > size || bytes > size - used) {
      *why = "rank " + std::to_string(r) + ": the handle's offset " + std::to_string(offset) +
             " and size " + std::to_string(bytes) + " run past the peer's allocation (" +
             std::to_string(size) + " bytes)";
      return kBadHandle;
    }
    return kOk;
  }

  int cudaWhy(const std::string& what, cudaError_t e, std::string* why) {
    cudaGetLastError();
    *why = describe(what.c_str(), e);
    return statusOf(e);
  }

  int uploadTables(Window* w, std::string* why) {
    const size_t n = w->available.size();
    cudaError_t e = cudaMalloc(&w->d_available, sizeof(int) * n);
    if (e == cudaSuccess) e = cudaMalloc(&w->d_peer_ptrs, sizeof(void*) * n);
    if (e != cudaSuccess) return cudaWhy("cudaMalloc of the peer tables", e, why);
    e = cudaMemcpy(w->d_available, w->available.data(), sizeof(int) * n, cudaMemcpyHostToDevice);
    if (e == cudaSuccess) {
      e = cudaMemcpy(w->d_peer_ptrs, w->peer_ptrs.data(), sizeof(void*) * n,
                     cudaMemcpyHostToDevice);
    }
    if (e != cudaSuccess) return cudaWhy("cudaMemcpy of the peer tables", e, why);
    peer_tables::publish(w->d_peer_ptrs, w->local_base, w->bytes, w->available, w->peer_ptrs);
    return kOk;
  }

  // Closes the IPC mappings and frees the tables; continues past failures, reports the first.
  int releaseWindow(Window* w, std::string* why) {
    int status = kOk;
    peer_tables::withdraw(w->d_peer_ptrs);  // before anything it names goes away
    for (size_t r = 0; r < w->ipc_bases.size(); ++r) {
      if (w->ipc_bases[r] == nullptr) continue;
      const cudaError_t e = cudaIpcCloseMemHandle(w->ipc_bases[r]);
      if (e != cudaSuccess && status == kOk) {
        status = cudaWhy("rank " + std::to_string(r) + ": cudaIpcCloseMemHandle", e, why);
      }
      w->ipc_bases[r] = nullptr;
    }
    cudaError_t e = w->d_available != nullptr ? cudaFree(w->d_available) : cudaSuccess;
    if (e != cudaSuccess && status == kOk) status = cudaWhy("cudaFree of a peer table", e, why);
    e = w->d_peer_ptrs != nullptr ? cudaFree(w->d_peer_ptrs) : cudaSuccess;
    if (e != cudaSuccess && status == kOk) status = cudaWhy("cudaFree of a peer table", e, why);
    w->d_available = nullptr;
    w->d_peer_ptrs = nullptr;
    w->open = false;
    std::vector<int>().swap(w->available);
    std::vector<void*>().swap(w->peer_ptrs);
    std::vector<int>().swap(w->atomics_ok);
    return status;
  }

  std::mutex mu_;
  const int device_;
  const int num_ranks_;
  std::string init_error_;
  cudaStream_t stream_ = nullptr;  // te4j's own, for zero-fills and probes
  cudaUUID_t uuid_{};
  int pci_ = 0;
  std::vector<cudaUUID_t> uuids_;  // of every visible device, by ordinal
  PFN_cuMemGetAddressRange_v3020 get_range_ = nullptr;
  PFN_cuPointerGetAttribute_v4000 get_attribute_ = nullptr;
  std::vector<Buffer> buffers_;
  std::vector<std::unique_ptr<Window>> windows_;       // index = window id; closed ones stay empty
  std::vector<std::unique_ptr<Window>> segment_maps_;  // mapSegment's one-peer windows
};

}  // namespace
}  // namespace te4j

te4j::P2pTransport* te4j_create_cuda_p2p_transport(int device, int num_ranks) {
  return new (std::nothrow) te4j::CudaP2pTransport(device, num_ranks);
}
