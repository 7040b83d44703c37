// cuda_peer_probe.cu — the reachability probe of a CUDA window's peers (see the header).
#include "p2p/cuda_peer_probe.cuh"

#include "core/cuda_errors.cuh"
#include "p2p/handle_blob.h"
#include "te4j/api.h"

namespace te4j {
namespace {

using cuda_detail::describe;

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

// The owner of every available peer still runs, and the runtime knows its pointer.
int checkPeersKnown(const CudaProbeTables& t, std::string* why) {
  const std::size_t n = t.available->size();
  for (std::size_t r = 0; r < n; ++r) {
    if ((*t.available)[r] == 0) continue;
    const int32_t pid = (*t.pids)[r];
    if (blob::ownerExited(pid)) {
      *why = "rank " + std::to_string(r) +
             ": the owner "
             "process " +
             std::to_string(pid) + " has exited";
      return kPeerLost;
    }
    cudaPointerAttributes attr;
    const cudaError_t e = cudaPointerGetAttributes(&attr, (*t.peer_ptrs)[r]);
    if (e != cudaSuccess || attr.type != cudaMemoryTypeDevice) {
      cudaGetLastError();
      *why = "rank " + std::to_string(r) +
             ": the peer "
             "pointer is no longer known as device memory" +
             (e != cudaSuccess ? ": " + describe("cudaPointerGetAttributes", e) : std::string());
      return kPeerLost;
    }
  }
  return kOk;
}

}  // namespace

int probeCudaPeers(const CudaProbeTables& t, cudaStream_t stream, std::string* why) {
  if (int st = checkPeersKnown(t, why)) return st;
  const int n = static_cast<int>(t.available->size());
  int* scratch = nullptr;  // [0, n) atomics_ok, [n, 2n) seen
  cudaError_t e = cudaMalloc(&scratch, sizeof(int) * 2 * static_cast<size_t>(n));
  if (e != cudaSuccess) return cuda_detail::whyOf("cudaMalloc of the probe flags", e, why);
  std::vector<int> seen(static_cast<size_t>(n), 0);
  const char* step = "cudaMemcpyAsync of the probe flags";
  e = cudaMemcpyAsync(scratch, t.atomics_ok->data(), sizeof(int) * static_cast<size_t>(n),
                      cudaMemcpyHostToDevice, stream);
  if (e == cudaSuccess) e = cudaMemsetAsync(scratch + n, 0, sizeof(int) * n, stream);
  if (e == cudaSuccess) {
    probePeers<<<1, blob::kMaxRanks, 0, stream>>>(t.d_peer_ptrs, t.d_available, scratch, n, t.bytes,
                                                  scratch + n);
    step = "launching the probe kernel";
    e = cudaGetLastError();
  }
  if (e == cudaSuccess) {
    step = "cudaMemcpyAsync of the probe results";
    e = cudaMemcpyAsync(seen.data(), scratch + n, sizeof(int) * static_cast<size_t>(n),
                        cudaMemcpyDeviceToHost, stream);
  }
  if (e == cudaSuccess) {
    step = "the probe kernel (cudaStreamSynchronize)";
    e = cudaStreamSynchronize(stream);
  }
  cudaFree(scratch);
  if (e != cudaSuccess) return cuda_detail::whyOf(step, e, why);
  for (int r = 0; r < n; ++r) {
    if ((*t.available)[static_cast<size_t>(r)] != 0 && seen[static_cast<size_t>(r)] != 1) {
      *why = "rank " + std::to_string(r) +
             " was not "
             "probed: the device tables do not match the host's";
      return kCudaError;
    }
  }
  return kOk;
}

}  // namespace te4j
