// cuda_p2p_transport.cu — te4j::P2pTransport for kPlatformCuda: symmetric buffers are whole
// cudaMalloc allocations (or registered ones), shared through CUDA IPC handles; ranks of one
// process on different GPUs use each other's raw pointers with peer access enabled.
//
// This file is the composition: the windows, their checks and their order are the skeleton's
// (symmetric_window_transport.h); the blob's CUDA words are in cuda_handle_fields.cuh, opening a
// peer in cuda_peer_import, the reachability probe in cuda_peer_probe, exportable memory in
// cuda_exportable_allocation. What stays here: the device, the buffers, and the device copies of
// the tables (kernels read them through CommCtx).
// Why fabric handles are not used: see fabricStatus in cuda_runtime_api.cu (TODO(fabric)).
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
#include "core/cuda_driver_entry.cuh"
#include "core/cuda_errors.cuh"
#include "core/device_scope.cuh"
#include "p2p/cuda_exportable_allocation.cuh"
#include "p2p/cuda_handle_fields.cuh"
#include "p2p/cuda_peer_import.cuh"
#include "p2p/cuda_peer_probe.cuh"
#include "p2p/handle_blob.h"
#include "p2p/peer_table_mirror.h"
#include "p2p/symmetric_window_transport.h"
#include "transport/device/comm_device.cuh"

namespace te4j {
namespace {

using cuda_detail::describe;
using cuda_detail::statusOf;
using cuda_detail::whyOf;
using namespace cuda_blob;

struct Buffer {
  void* ptr = nullptr;
  size_t bytes = 0;
  void* alloc_base = nullptr;  // base of the cudaMalloc allocation holding ptr
  size_t offset = 0;           // ptr - alloc_base
  bool owned = false;          // from allocateBuffer (freed with cudaFree) or registered
};

struct CudaWindow final : SymmetricWindow {
  int* d_available = nullptr;  // device copies of the tables (what kernels read)
  void** d_peer_ptrs = nullptr;
  std::vector<void*> ipc_bases;  // what cudaIpcOpenMemHandle returned; nullptr if not opened
  std::vector<int> atomics_ok;   // native P2P atomics from this device to the peer's memory
  std::vector<int32_t> pids;     // owner process of each peer
};

CudaWindow* cudaWindow(SymmetricWindow* w) { return static_cast<CudaWindow*>(w); }

class CudaP2pTransport final : public SymmetricWindowTransport {
 public:
  CudaP2pTransport(int device, int num_ranks)
      : SymmetricWindowTransport(num_ranks), device_(device) {
    if (init_status_ != kOk) return;  // num_ranks refused
    const int st = init();
    if (st != kOk) {
      init_status_ = st;
      last_error_ = init_error_;
    }
  }

  ~CudaP2pTransport() override {
    std::lock_guard<std::mutex> lock(mu_);
    cuda_detail::DeviceScope scope(device_, cuda_detail::DeviceScope::kBind);
    if (scope.status() != cudaSuccess) return;  // CUDA is gone: nothing to release
    releaseAll();
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
    cuda_detail::DeviceScope scope;
    if (int st = enter(&scope)) return st;
    if (out == nullptr) return fail(kInvalidArgument, "allocateBuffer: out is null");
    *out = nullptr;
    if (bytes == 0) return fail(kInvalidArgument, "allocateBuffer: bytes must be > 0");
    Buffer b;
    std::string why;
    if (int st = allocateExportable(bytes, stream_, &b.ptr, &why)) {
      return fail(st, "allocateBuffer: " + why);
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
    cuda_detail::DeviceScope scope;
    if (int st = enter(&scope)) return st;
    for (size_t i = 0; i < buffers_.size(); ++i) {
      if (buffers_[i].ptr != ptr) continue;
      if (int st = refuseIfInUse(ptr)) return st;
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
  // freeBuffer(ptr). What is refused: see locateExportable.
  int registerBuffer(void* ptr, std::size_t bytes) override {
    std::lock_guard<std::mutex> lock(mu_);
    cuda_detail::DeviceScope scope;
    if (int st = enter(&scope)) return st;
    if (ptr == nullptr || bytes == 0) {
      return fail(kInvalidArgument, "registerBuffer: ptr is null or bytes is 0");
    }
    Buffer b;
    b.ptr = ptr;
    b.bytes = bytes;
    b.owned = false;
    std::string why;
    if (int st = locateExportable(queries_, device_, ptr, bytes, &b.alloc_base, &b.offset, &why)) {
      return fail(st, "registerBuffer: " + why);
    }
    for (const Buffer& o : buffers_) {
      const uintptr_t a0 = reinterpret_cast<uintptr_t>(ptr);
      const uintptr_t b0 = reinterpret_cast<uintptr_t>(o.ptr);
      if (a0 < b0 + o.bytes && b0 < a0 + bytes) {
        return fail(kInvalidArgument,
                    "registerBuffer: the range overlaps a buffer already "
                    "allocated or registered here");
      }
    }
    cudaIpcMemHandle_t handle;
    const cudaError_t e = cudaIpcGetMemHandle(&handle, b.alloc_base);
    if (e != cudaSuccess) {
      cudaGetLastError();
      return fail(kInvalidArgument, "registerBuffer: " + describe("cudaIpcGetMemHandle", e) +
                                        ": pool memory is not exportable; allocate with "
                                        "cudaMalloc");
    }
    try {
      buffers_.push_back(b);
    } catch (const std::bad_alloc&) {
      return fail(kOutOfMemory, "registerBuffer: out of memory for bookkeeping");
    }
    return ok();
  }

 protected:
  int enterPlatform(std::string* why) override {
    had_previous_ = cudaGetDevice(&previous_device_) == cudaSuccess;
    const cudaError_t e = cudaSetDevice(device_);
    return e == cudaSuccess ? kOk : whyOf("cudaSetDevice", e, why);
  }

  void leavePlatform() override {
    if (had_previous_) cudaSetDevice(previous_device_);
    had_previous_ = false;
  }

  const char* handleKind() const override { return "CUDA"; }

  bool findBuffer(const void* p, void** start, std::size_t* bytes) const override {
    const Buffer* b = findContaining(p);
    if (b == nullptr) return false;
    *start = b->ptr;
    *bytes = b->bytes;
    return true;
  }

  int writeHandle(void* start, int32_t* out, std::string* why) override {
    const Buffer* b = findContaining(start);
    cudaIpcMemHandle_t handle;
    const cudaError_t e = cudaIpcGetMemHandle(&handle, b->alloc_base);
    if (e != cudaSuccess) return whyOf("cudaIpcGetMemHandle", e, why);
    std::memset(out, 0, sizeof(int32_t) * kCudaHandleInts);
    out[kDeviceAt] = device_;
    std::memcpy(out + kUuidAt, &uuid_, sizeof(uuid_));
    out[kPciAt] = pci_;
    split(reinterpret_cast<uintptr_t>(b->ptr), out + kPtrAt);
    split(b->offset, out + kOffsetAt);
    std::memcpy(out + kIpcAt, &handle, sizeof(handle));
    return kOk;
  }

  int checkPlatformFields(int rank, const int32_t* b, uint64_t bytes, std::string* why) override {
    return checkFields(rank, b, bytes, why);
  }

  std::unique_ptr<SymmetricWindow> newWindow() override {
    return std::unique_ptr<SymmetricWindow>(new (std::nothrow) CudaWindow());
  }

  void sizePeerState(SymmetricWindow* w, std::size_t n) override {
    CudaWindow* cw = cudaWindow(w);
    cw->ipc_bases.assign(n, nullptr);
    cw->atomics_ok.assign(n, 0);
    cw->pids.assign(n, 0);
  }

  void adoptLocal(SymmetricWindow* w) override {
    const size_t self = static_cast<size_t>(w->rank);
    cudaWindow(w)->atomics_ok[self] = 1;
    cudaWindow(w)->pids[self] = static_cast<int32_t>(::getpid());
  }

  // Same process: its raw pointer; else: CUDA IPC.
  int mapPeer(SymmetricWindow* w, int r, const int32_t* b, void** peer, std::string* why) override {
    CudaWindow* cw = cudaWindow(w);
    const size_t ri = static_cast<size_t>(r);
    cw->pids[ri] = b[blob::kPidAt];
    CudaPeerMapping m;
    if (int st = importCudaPeer(importer(), r, b, w->bytes, &m, why)) return st;
    cw->ipc_bases[ri] = m.ipc_base;
    cw->atomics_ok[ri] = m.atomics_ok;
    w->routes[ri] = m.same_device ? mooncake::device::kMcRankRouteSameDevice
                                  : mooncake::device::kMcRankRoutePeerDevice;
    *peer = m.ptr;
    return kOk;
  }

  int publishTables(SymmetricWindow* w, std::string* why) override {
    CudaWindow* cw = cudaWindow(w);
    const size_t n = w->available.size();
    cudaError_t e = cudaMalloc(&cw->d_available, sizeof(int) * n);
    if (e == cudaSuccess) e = cudaMalloc(&cw->d_peer_ptrs, sizeof(void*) * n);
    if (e != cudaSuccess) return whyOf("cudaMalloc of the peer tables", e, why);
    e = cudaMemcpy(cw->d_available, w->available.data(), sizeof(int) * n, cudaMemcpyHostToDevice);
    if (e == cudaSuccess) {
      e = cudaMemcpy(cw->d_peer_ptrs, w->peer_ptrs.data(), sizeof(void*) * n,
                     cudaMemcpyHostToDevice);
    }
    if (e != cudaSuccess) return whyOf("cudaMemcpy of the peer tables", e, why);
    peer_tables::publish(cw->d_peer_ptrs, w->local_base, w->bytes, w->available, w->peer_ptrs);
    return kOk;
  }

  // Closes the IPC mappings and frees the tables; continues past failures, reports the first.
  int releaseWindow(SymmetricWindow* w, std::string* why) override {
    CudaWindow* cw = cudaWindow(w);
    int status = kOk;
    peer_tables::withdraw(cw->d_peer_ptrs);  // before anything it names goes away
    for (size_t r = 0; r < cw->ipc_bases.size(); ++r) {
      if (cw->ipc_bases[r] == nullptr) continue;
      const cudaError_t e = cudaIpcCloseMemHandle(cw->ipc_bases[r]);
      if (e != cudaSuccess && status == kOk) {
        status = whyOf("rank " + std::to_string(r) + ": cudaIpcCloseMemHandle", e, why);
      }
      cw->ipc_bases[r] = nullptr;
    }
    cudaError_t e = cw->d_available != nullptr ? cudaFree(cw->d_available) : cudaSuccess;
    if (e != cudaSuccess && status == kOk) status = whyOf("cudaFree of a peer table", e, why);
    e = cw->d_peer_ptrs != nullptr ? cudaFree(cw->d_peer_ptrs) : cudaSuccess;
    if (e != cudaSuccess && status == kOk) status = whyOf("cudaFree of a peer table", e, why);
    cw->d_available = nullptr;
    cw->d_peer_ptrs = nullptr;
    std::vector<int>().swap(cw->atomics_ok);
    return status;
  }

  void* availableTable(SymmetricWindow* w) override { return cudaWindow(w)->d_available; }
  void* peerPtrsTable(SymmetricWindow* w) override { return cudaWindow(w)->d_peer_ptrs; }

  int probeWindow(SymmetricWindow* w, std::string* why) override {
    CudaWindow* cw = cudaWindow(w);
    CudaProbeTables t;
    t.available = &w->available;
    t.peer_ptrs = &w->peer_ptrs;
    t.atomics_ok = &cw->atomics_ok;
    t.pids = &cw->pids;
    t.d_available = cw->d_available;
    t.d_peer_ptrs = cw->d_peer_ptrs;
    t.bytes = w->bytes;
    return probeCudaPeers(t, stream_, why);
  }

  int checkSegmentFields(const int32_t* b, uint64_t size, std::string* why) override {
    if (size == 0) {
      *why = "the handle's size is 0";
      return kBadHandle;
    }
    return checkFields(0, b, size, why);
  }

  // The same checks and mapping as a window's peer (raw pointer in this process, CUDA IPC from
  // another), with the size the handle carries.
  int openSegment(const int32_t* b, uint64_t size, SegmentMapping* m, std::string* why) override {
    CudaPeerMapping peer;
    if (int st = importCudaPeer(importer(), 0, b, static_cast<size_t>(size), &peer, why)) {
      return st;
    }
    m->base = peer.ptr;
    m->bytes = static_cast<size_t>(size);
    m->opened = peer.ipc_base;
    return kOk;
  }

  int closeSegment(const SegmentMapping& m, std::string* why) override {
    if (m.opened == nullptr) return kOk;
    const cudaError_t e = cudaIpcCloseMemHandle(m.opened);
    return e == cudaSuccess ? kOk : whyOf("cudaIpcCloseMemHandle", e, why);
  }

 private:
  int init() {
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) return initFail("cudaGetDeviceCount", e);
    if (device_ < 0 || device_ >= count) {
      init_error_ = "device " + std::to_string(device_) + " is outside 0.." +
                    std::to_string(count - 1) + " (" + std::to_string(count) +
                    " visible CUDA devices)";
      return kInvalidArgument;
    }
    cuda_detail::DeviceScope scope(device_, cuda_detail::DeviceScope::kBind);
    e = scope.status();
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
    queries_.get_range =
        cuda_detail::driverEntry<PFN_cuMemGetAddressRange_v3020>("cuMemGetAddressRange");
    queries_.get_attribute =
        cuda_detail::driverEntry<PFN_cuPointerGetAttribute_v4000>("cuPointerGetAttribute");
    return kOk;
  }

  int initFail(const char* call, cudaError_t e) {
    cudaGetLastError();
    init_error_ = describe(call, e);
    return statusOf(e);
  }

  // The entry of the buffer methods (the skeleton's own methods enter through enterPlatform):
  // the object is usable and the device is current on this thread.
  // Checks the transport, then makes its device current in *scope (the caller's device comes
  // back when the scope ends).
  int enter(cuda_detail::DeviceScope* scope) {
    if (int st = checkInit()) return st;
    const cudaError_t e = scope->enter(device_, cuda_detail::DeviceScope::kBind);
    if (e != cudaSuccess) return cudaFail("cudaSetDevice", e);
    return kOk;
  }

  int cudaFail(const std::string& what, cudaError_t e) {
    std::string why;
    const int st = whyOf(what, e, &why);
    return fail(st, why);
  }

  CudaImporter importer() const {
    CudaImporter i;
    i.device = device_;
    i.uuids = &uuids_;
    i.get_range = queries_.get_range;
    return i;
  }

  const Buffer* findContaining(const void* p) const {
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    for (const Buffer& b : buffers_) {
      const uintptr_t s = reinterpret_cast<uintptr_t>(b.ptr);
      if (a >= s && a - s < b.bytes) return &b;
    }
    return nullptr;
  }

  const int device_;
  cudaStream_t stream_ = nullptr;  // te4j's own, for zero-fills and probes
  cudaUUID_t uuid_{};
  int pci_ = 0;
  std::vector<cudaUUID_t> uuids_;  // of every visible device, by ordinal
  CudaPointerQueries queries_;
  std::vector<Buffer> buffers_;
  // The caller's current device while a skeleton method runs (under mu_: one at a time).
  int previous_device_ = 0;
  bool had_previous_ = false;
};

}  // namespace
}  // namespace te4j

te4j::P2pTransport* te4j_create_cuda_p2p_transport(int device, int num_ranks) {
  return new (std::nothrow) te4j::CudaP2pTransport(device, num_ranks);
}
