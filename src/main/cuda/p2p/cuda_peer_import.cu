// cuda_peer_import.cu — opening a peer's CUDA buffer (see the header).
//
// Why raw pointers inside one process: cudaIpcOpenMemHandle fails in the exporting process
// ("invalid device context"), and a direct pointer needs no mapping at all.
#include "p2p/cuda_peer_import.cuh"

#include <unistd.h>

#include <cstring>

#include "core/cuda_driver_entry.cuh"
#include "core/cuda_errors.cuh"
#include "core/device_scope.cuh"
#include "p2p/cuda_handle_fields.cuh"
#include "p2p/handle_blob.h"
#include "te4j/api.h"

namespace te4j {
namespace {

using cuda_detail::describe;
using cuda_detail::statusOf;
using cuda_detail::whyOf;

// Local ordinal of the device with this UUID, or -1 when it is not visible here.
int ordinalOf(const std::vector<cudaUUID_t>& uuids, const int32_t* uuid_words) {
  for (std::size_t d = 0; d < uuids.size(); ++d) {
    if (std::memcmp(&uuids[d], uuid_words, sizeof(cudaUUID_t)) == 0) return static_cast<int>(d);
  }
  return -1;
}

// kOk when [base + offset, base + offset + bytes) lies inside the allocation holding base.
int checkRange(PFN_cuMemGetAddressRange_v3020 get_range, int r, void* base, uint64_t offset,
               std::size_t bytes, std::string* why) {
  if (get_range == nullptr) return kOk;  // nothing to check with; the handle's word stands
  CUdeviceptr start = 0;
  std::size_t size = 0;
  const CUresult res = get_range(&start, &size, reinterpret_cast<CUdeviceptr>(base));
  if (res != CUDA_SUCCESS) {
    *why = "rank " + std::to_string(r) +
           ": cuMemGetAddressRange of the peer buffer failed: " + cuda_detail::driverErrorText(res);
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

// A rank of this process: its raw pointer, checked, with peer access from importer.device.
int adoptSameProcess(const CudaImporter& importer, int r, const int32_t* b, std::size_t bytes,
                     int peer_device, void** peer, std::string* why) {
  const std::string who = "rank " + std::to_string(r) + ": ";
  *peer = reinterpret_cast<void*>(static_cast<uintptr_t>(cuda_blob::join(b + cuda_blob::kPtrAt)));
  if (peer_device < 0 || peer_device != b[cuda_blob::kDeviceAt]) {
    *why = who + "the handle names device " + std::to_string(b[cuda_blob::kDeviceAt]) +
           " of this "
           "process, but its UUID does not match that device";
    return kBadHandle;
  }
  cudaPointerAttributes attr;
  cudaError_t e = cudaPointerGetAttributes(&attr, *peer);
  if (e != cudaSuccess || attr.type != cudaMemoryTypeDevice || attr.device != peer_device) {
    cudaGetLastError();
    *why = who + "the pointer in the handle is not device memory of device " +
           std::to_string(peer_device) + " in this process";
    return kBadHandle;
  }
  {
    // The driver resolves an address range only in the owning device's context.
    cuda_detail::DeviceScope scope(peer_device, cuda_detail::DeviceScope::kBind);
    if (scope.status() != cudaSuccess) {
      return whyOf(who + "cudaSetDevice(peer)", scope.status(), why);
    }
    if (int st = checkRange(importer.get_range, r, *peer, 0, bytes, why)) return st;
  }
  if (peer_device != importer.device) {
    int can = 0;
    e = cudaDeviceCanAccessPeer(&can, importer.device, peer_device);
    if (e != cudaSuccess) return whyOf(who + "cudaDeviceCanAccessPeer", e, why);
    if (can == 0) {
      *why = who + "device " + std::to_string(importer.device) + " cannot map device " +
             std::to_string(peer_device) +
             "'s memory (no NVLink or PCIe P2P path): check "
             "nvidia-smi topo -m";
      return kUnavailable;
    }
    e = cudaDeviceEnablePeerAccess(peer_device, 0);
    if (e == cudaErrorPeerAccessAlreadyEnabled) {
      cudaGetLastError();  // enabled earlier: fine, but the runtime recorded it as an error
    } else if (e != cudaSuccess) {
      return whyOf(who + "cudaDeviceEnablePeerAccess", e, why);
    }
  }
  return kOk;
}

// A rank of another process: its allocation through CUDA IPC, plus the buffer's offset.
int openFromOtherProcess(const CudaImporter& importer, int r, const int32_t* b, std::size_t bytes,
                         CudaPeerMapping* out, std::string* why) {
  const std::string who = "rank " + std::to_string(r) + ": ";
  cudaIpcMemHandle_t handle;
  std::memcpy(&handle, b + cuda_blob::kIpcAt, sizeof(handle));
  void* base = nullptr;
  const cudaError_t e = cudaIpcOpenMemHandle(&base, handle, cudaIpcMemLazyEnablePeerAccess);
  if (e != cudaSuccess) {
    cudaGetLastError();
    if (blob::ownerExited(out->pid)) {
      *why = who + describe("cudaIpcOpenMemHandle", e) + ": the owner process " +
             std::to_string(out->pid) + " has exited";
      return kPeerLost;
    }
    *why = who + describe("cudaIpcOpenMemHandle", e);
    return e == cudaErrorInvalidValue || e == cudaErrorInvalidResourceHandle ||
                   e == cudaErrorMapBufferObjectFailed
               ? kBadHandle
               : statusOf(e);
  }
  const uint64_t offset = cuda_blob::join(b + cuda_blob::kOffsetAt);
  // A forged size or offset must not let kernels write past the mapped allocation.
  if (int st = checkRange(importer.get_range, r, base, offset, bytes, why)) {
    cudaIpcCloseMemHandle(base);
    cudaGetLastError();
    return st;
  }
  out->ipc_base = base;
  out->ptr = static_cast<unsigned char*>(base) + offset;
  return kOk;
}

}  // namespace

int importCudaPeer(const CudaImporter& importer, int r, const int32_t* b, std::size_t bytes,
                   CudaPeerMapping* out, std::string* why) {
  *out = CudaPeerMapping();
  out->pid = b[blob::kPidAt];
  const int peer_device = ordinalOf(*importer.uuids, b + cuda_blob::kUuidAt);
  if (out->pid == static_cast<int32_t>(::getpid())) {
    if (int st = adoptSameProcess(importer, r, b, bytes, peer_device, &out->ptr, why)) return st;
  } else if (int st = openFromOtherProcess(importer, r, b, bytes, out, why)) {
    return st;
  }
  int atomics = peer_device == importer.device ? 1 : 0;
  if (peer_device >= 0 && peer_device != importer.device) {
    if (cudaDeviceGetP2PAttribute(&atomics, cudaDevP2PAttrNativeAtomicSupported, importer.device,
                                  peer_device) != cudaSuccess) {
      cudaGetLastError();
      atomics = 0;
    }
  }
  out->atomics_ok = atomics != 0 ? 1 : 0;
  // A device whose UUID is not visible here is never the importer's own (that one is visible).
  out->same_device = peer_device == importer.device;
  return kOk;
}

cudaError_t closeCudaPeer(const CudaPeerMapping& m) {
  return m.ipc_base != nullptr ? cudaIpcCloseMemHandle(m.ipc_base) : cudaSuccess;
}

}  // namespace te4j
