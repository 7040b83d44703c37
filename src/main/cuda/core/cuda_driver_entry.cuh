// cuda_driver_entry.cuh — driver API functions fetched at run time through cudart, so that
// libte4j never links libcuda and still loads on machines without the NVIDIA driver.
// Private to libte4j (nvcc only).
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>

#include <string>

namespace te4j {
namespace cuda_detail {

/// The ABI version asked for: every function te4j uses exists with this signature since CUDA
/// 12.0, so any driver that runs a CUDA 13 runtime provides it.
constexpr unsigned int kDriverAbiVersion = 12000;

/// The driver function `symbol` (base name, e.g. "cuMemGetAddressRange") as Fn, or nullptr
/// when the driver lacks it or is absent. Clears the runtime's sticky last error it may leave.
template <typename Fn>
Fn driverEntry(const char* symbol) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  const cudaError_t e =
      cudaGetDriverEntryPointByVersion(symbol, &fn, kDriverAbiVersion, cudaEnableDefault, &found);
  if (e != cudaSuccess || found != cudaDriverEntryPointSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  return reinterpret_cast<Fn>(fn);
}

/// "CUDA_ERROR_X (N)" for a driver result, using cuGetErrorName when the driver has it.
inline std::string driverErrorText(CUresult r) {
  static const auto name_of = driverEntry<PFN_cuGetErrorName_v6000>("cuGetErrorName");
  const char* name = nullptr;
  if (name_of == nullptr || name_of(r, &name) != CUDA_SUCCESS || name == nullptr) name = "?";
  return std::string(name) + " (" + std::to_string(static_cast<int>(r)) + ")";
}

}  // namespace cuda_detail
}  // namespace te4j
