// cuda_exportable_allocation.cuh — device memory that CUDA IPC can export: te4j's own zero-filled
// cudaMalloc allocations, and the checks that decide whether memory allocated elsewhere is one
// (and which allocation holds it). Private to libte4j (nvcc only).
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>

#include <cstddef>
#include <string>

namespace te4j {

/// Driver entry points the checks use; either may be nullptr (an old driver).
struct CudaPointerQueries {
  PFN_cuMemGetAddressRange_v3020 get_range = nullptr;
  PFN_cuPointerGetAttribute_v4000 get_attribute = nullptr;
};

/// cudaMalloc of `bytes` on the current device, zero-filled on `stream` before it returns.
/// kOk with *out, or a CUDA status with *why (nothing stays allocated).
int allocateExportable(std::size_t bytes, cudaStream_t stream, void** out, std::string* why);

/// Where [ptr, ptr + bytes) lies: inside one cudaMalloc allocation of `device` that CUDA IPC can
/// export. kOk with *alloc_base and *offset (ptr - alloc_base); otherwise kInvalidArgument
/// naming what the memory is instead and how to allocate it, kUnavailable when the driver cannot
/// tell, or kCudaError.
int locateExportable(const CudaPointerQueries& q, int device, void* ptr, std::size_t bytes,
                     void** alloc_base, std::size_t* offset, std::string* why);

}  // namespace te4j
