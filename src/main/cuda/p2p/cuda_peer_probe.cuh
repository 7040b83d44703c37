// cuda_peer_probe.cuh — whether every available peer of a CUDA window is reachable now: its
// owner still runs, the runtime still knows its pointer, and a kernel that touches it through
// the window's device tables completes without a fault. Private to libte4j (nvcc only).
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

#include <cstddef>
#include <string>
#include <vector>

namespace te4j {

/// A window's tables as the probe reads them: host copies and the device copies kernels read.
struct CudaProbeTables {
  const std::vector<int>* available = nullptr;
  const std::vector<void*>* peer_ptrs = nullptr;
  const std::vector<int>* atomics_ok = nullptr;  // native P2P atomics to each peer
  const std::vector<int32_t>* pids = nullptr;    // owner process of each peer
  const int* d_available = nullptr;
  void* const* d_peer_ptrs = nullptr;
  std::size_t bytes = 0;  // of each peer buffer
};

/// Checks, in order: each peer's owner process still runs; the runtime knows each peer pointer
/// as device memory; a kernel on `stream` reading the device tables touches every peer buffer
/// (both ends, plus an atomic add of 0 where native P2P atomics exist) and completes. kOk, or
/// kPeerLost / a CUDA status with *why naming the rank or the step.
int probeCudaPeers(const CudaProbeTables& t, cudaStream_t stream, std::string* why);

}  // namespace te4j
