// cuda_exportable_allocation.cu — allocating and recognizing exportable device memory (see the
// header).
#include "p2p/cuda_exportable_allocation.cuh"

#include "core/cuda_driver_entry.cuh"
#include "core/cuda_errors.cuh"
#include "te4j/api.h"

namespace te4j {

using cuda_detail::describe;
using cuda_detail::whyOf;

int allocateExportable(std::size_t bytes, cudaStream_t stream, void** out, std::string* why) {
  void* p = nullptr;
  cudaError_t e = cudaMalloc(&p, bytes);
  if (e != cudaSuccess) return whyOf("cudaMalloc(" + std::to_string(bytes) + ")", e, why);
  e = cudaMemsetAsync(p, 0, bytes, stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
  if (e != cudaSuccess) {
    cudaFree(p);
    return whyOf("zero-filling with cudaMemsetAsync", e, why);
  }
  *out = p;
  return kOk;
}

// Refused: managed memory, host memory, another device's memory, stream-ordered pool memory
// (cudaMallocAsync) and VMM memory (cuMemCreate): CUDA IPC cannot export them.
int locateExportable(const CudaPointerQueries& q, int device, void* ptr, std::size_t bytes,
                     void** alloc_base, std::size_t* offset, std::string* why) {
  cudaPointerAttributes attr;
  cudaError_t e = cudaPointerGetAttributes(&attr, ptr);
  if (e != cudaSuccess) {
    cudaGetLastError();
    *why = describe("cudaPointerGetAttributes", e);
    return kInvalidArgument;
  }
  switch (attr.type) {
    case cudaMemoryTypeDevice: break;
    case cudaMemoryTypeManaged:
      *why =
          "managed memory (cudaMallocManaged) is not "
          "exportable with CUDA IPC; allocate with cudaMalloc";
      return kInvalidArgument;
    case cudaMemoryTypeHost:
      *why =
          "pinned host memory is not device memory; "
          "allocate with cudaMalloc";
      return kInvalidArgument;
    default:
      *why =
          "the pointer is not CUDA memory; allocate "
          "with cudaMalloc";
      return kInvalidArgument;
  }
  if (attr.device != device) {
    *why = "the memory is on device " + std::to_string(attr.device) + ", this transport on " +
           std::to_string(device);
    return kInvalidArgument;
  }
  if (q.get_attribute == nullptr || q.get_range == nullptr) {
    *why =
        "the driver lacks cuPointerGetAttribute or "
        "cuMemGetAddressRange; cannot find the allocation holding ptr";
    return kUnavailable;
  }
  const CUdeviceptr dptr = reinterpret_cast<CUdeviceptr>(ptr);
  CUmemoryPool pool = nullptr;
  if (q.get_attribute(&pool, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, dptr) == CUDA_SUCCESS &&
      pool != nullptr) {
    *why =
        "pool memory is not exportable; allocate "
        "with cudaMalloc (not cudaMallocAsync / a memory pool)";
    return kInvalidArgument;
  }
  int ipc_capable = 1;
  if (q.get_attribute(&ipc_capable, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, dptr) ==
          CUDA_SUCCESS &&
      ipc_capable == 0) {
    *why =
        "the allocation is not exportable with CUDA "
        "IPC (virtual memory from cuMemCreate, e.g. PyTorch "
        "expandable_segments); allocate with cudaMalloc";
    return kInvalidArgument;
  }
  CUdeviceptr base = 0;
  std::size_t size = 0;
  const CUresult r = q.get_range(&base, &size, dptr);
  if (r != CUDA_SUCCESS) {
    *why = "cuMemGetAddressRange failed: " + cuda_detail::driverErrorText(r);
    return kCudaError;
  }
  const std::size_t off = static_cast<std::size_t>(dptr - base);
  if (bytes > size - off) {
    *why = "[ptr, ptr + " + std::to_string(bytes) + ") runs past the end of its allocation (" +
           std::to_string(size - off) + " bytes left)";
    return kInvalidArgument;
  }
  *alloc_base = reinterpret_cast<void*>(base);
  *offset = off;
  return kOk;
}

}  // namespace te4j
