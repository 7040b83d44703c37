// cuda_peer_import.cuh — maps one peer's CUDA buffer into this process from its (checked) handle
// blob: a rank of this process by its raw pointer with peer access enabled, a rank of another
// process by opening its CUDA IPC memory handle. Private to libte4j (nvcc only).
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>
#include <stdint.h>

#include <cstddef>
#include <string>
#include <vector>

namespace te4j {

/// What an importer needs to know about its own side.
struct CudaImporter {
  int device = 0;                                      // the transport's device
  const std::vector<cudaUUID_t>* uuids = nullptr;      // of every visible device, by ordinal
  PFN_cuMemGetAddressRange_v3020 get_range = nullptr;  // nullptr: ranges are not checked
};

/// One mapped peer buffer.
struct CudaPeerMapping {
  void* ptr = nullptr;       // the peer's buffer as this process addresses it
  void* ipc_base = nullptr;  // what cudaIpcOpenMemHandle returned; nullptr when not opened
  int atomics_ok = 0;        // native P2P atomics from the importer's device to that memory
  bool same_device = false;  // the memory is on the importer's own device
  int32_t pid = 0;           // the owner process
};

/// Maps rank r's buffer of `bytes` from its blob (header and CUDA words already checked). On
/// failure nothing stays opened; the status is kBadHandle for a handle that names no buffer
/// of that size, kPeerLost when its owner has exited, kUnavailable without a P2P path.
int importCudaPeer(const CudaImporter& importer, int r, const int32_t* blob, std::size_t bytes,
                   CudaPeerMapping* out, std::string* why);

/// Closes what importCudaPeer opened (nothing for a raw pointer of this process).
cudaError_t closeCudaPeer(const CudaPeerMapping& m);

}  // namespace te4j
