// batch/kernels/block_copy.cuh — what the batch kernel and the list kernel share: how a thread
// block copies one chunk, the state values they store, and the grid for a number of chunks.
// Device functions only (inline), so that every kernel file may include it.
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

namespace te4j {
namespace batch {

constexpr int kBatchThreads = 256;

// The state values of te4j/batch_api.h's RequestState.
constexpr int32_t kStateCompleted = 1;
constexpr int32_t kStateTimeout = 2;

/// Copies n bytes with the threads of a block: 16-byte vectors where source and destination
/// share their alignment (four loads in flight per thread), else bytes.
__device__ inline void blockCopy(unsigned char* dst, const unsigned char* src, uint64_t n) {
  const uint64_t tid = threadIdx.x;
  const uint64_t threads = blockDim.x;
  uint64_t head = 0;
  if ((((uintptr_t)src ^ (uintptr_t)dst) & 15) == 0) {
    head = (16 - ((uintptr_t)dst & 15)) & 15;
    if (head > n) head = n;
    for (uint64_t i = tid; i < head; i += threads) dst[i] = src[i];
    const uint64_t vectors = (n - head) / 16;
    const uint4* s = (const uint4*)(src + head);
    uint4* d = (uint4*)(dst + head);
    constexpr int kInFlight = 4;
    for (uint64_t base = tid; base < vectors; base += kInFlight * threads) {
      uint4 v[kInFlight];
#pragma unroll
      for (int k = 0; k < kInFlight; ++k) {
        const uint64_t i = base + k * threads;
        if (i < vectors) v[k] = s[i];
      }
#pragma unroll
      for (int k = 0; k < kInFlight; ++k) {
        const uint64_t i = base + k * threads;
        if (i < vectors) d[i] = v[k];
      }
    }
    head += vectors * 16;
  }
  for (uint64_t i = head + tid; i < n; i += threads) dst[i] = src[i];
}

/// A grid for `num_chunks` chunks: one block each, at most `max_blocks` blocks.
inline int batchBlocks(uint64_t num_chunks, int max_blocks) {
  uint64_t blocks = num_chunks < 1 ? 1 : num_chunks;
  if (blocks > (uint64_t)max_blocks) blocks = (uint64_t)max_blocks;
  return (int)blocks;
}

}  // namespace batch
}  // namespace te4j
