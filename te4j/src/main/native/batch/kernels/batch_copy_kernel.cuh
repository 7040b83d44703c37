// batch/kernels/batch_copy_kernel.cuh — one kernel for a whole transfer batch: a chunk array in
// device memory, one warp per chunk, many chunks per descriptor.
//
// Why chunks: a batch is many small blocks (KV-cache pages), where one launch per block costs
// microseconds each, and a few large ones, which a warp per descriptor would leave to a handful
// of SMs. The host splits every descriptor into chunks of at most kBatchChunkBytes, so the
// grid always has enough independent work, and the chunks of a descriptor finish it together:
// the last chunk to finish (a counter per descriptor) writes the descriptor's state.
//
// Deadline: a descriptor is decided once, by its first chunk to run: "run" unless the batch's
// cancel word is set, then "skip". Every chunk follows that decision, so a descriptor either
// copies all of its bytes (COMPLETED) or none of them (TIMEOUT), never part.
//
// States live in host memory mapped into the device (the host polls them without a CUDA call):
// each is written after a system-scope fence that orders the descriptor's bytes before it.
// The chunk arithmetic and structs are host code in batch/batch_descriptors.h.
// Header-only: libte4j's CUDA batch and the native test driver launch the same kernel.
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

#include "batch/batch_descriptors.h"

namespace te4j {
namespace batch {

constexpr int kBatchThreads = 256;  // 8 warps per block

// The state values of te4j/batch_api.h's RequestState.
constexpr int32_t kStateCompleted = 1;
constexpr int32_t kStateTimeout = 2;

/// Copies one chunk with the 32 lanes of a warp: 16-byte vectors where source and destination
/// share their alignment, else bytes.
__device__ inline void warpCopy(unsigned char* dst, const unsigned char* src, uint64_t n, int lane) {
  uint64_t head = 0;
  if ((((uintptr_t)src ^ (uintptr_t)dst) & 15) == 0) {
    head = (16 - ((uintptr_t)dst & 15)) & 15;
    if (head > n) head = n;
    for (uint64_t i = lane; i < head; i += 32) dst[i] = src[i];
    const uint64_t vectors = (n - head) / 16;
    const uint4* s = (const uint4*)(src + head);
    uint4* d = (uint4*)(dst + head);
    for (uint64_t i = lane; i < vectors; i += 32) d[i] = s[i];
    head += vectors * 16;
  }
  for (uint64_t i = head + lane; i < n; i += 32) dst[i] = src[i];
}

/// The batch kernel: grid-stride over chunks, one warp each.
__global__ void batchCopyKernel(const BatchCopy* copies, const BatchChunk* chunks, uint64_t num_chunks,
                                BatchProgress* progress, volatile int32_t* states, uint32_t state_base,
                                const volatile int32_t* cancel) {
  const int lane = threadIdx.x & 31;
  const uint64_t warps_per_block = blockDim.x / 32;
  const uint64_t warp = blockIdx.x * warps_per_block + threadIdx.x / 32;
  const uint64_t stride = (uint64_t)gridDim.x * warps_per_block;
  for (uint64_t c = warp; c < num_chunks; c += stride) {
    const BatchChunk ch = chunks[c];
    unsigned int decision = 0;
    if (lane == 0) {
      decision = *(volatile unsigned int*)&progress[ch.copy].decision;
      if (decision == 0) {
        const unsigned int want = *cancel != 0 ? 2u : 1u;
        const unsigned int old = atomicCAS(&progress[ch.copy].decision, 0u, want);
        decision = old == 0 ? want : old;
      }
    }
    decision = __shfl_sync(0xffffffffu, decision, 0);
    if (decision == 1) {
      const BatchCopy cp = copies[ch.copy];
      warpCopy((unsigned char*)(uintptr_t)(cp.dst + ch.offset),
               (const unsigned char*)(uintptr_t)(cp.src + ch.offset), ch.length, lane);
    }
    __syncwarp();
    if (lane == 0) {
      // Every lane's stores of this chunk before the count: the last chunk publishes them all.
      __threadfence();
      if (atomicSub(&progress[ch.copy].chunks_left, 1u) == 1u) {
        __threadfence_system();
        states[state_base + ch.copy] = decision == 1 ? kStateCompleted : kStateTimeout;
      }
    }
  }
}

/// A grid for `num_chunks` chunks: one warp each, at most `max_blocks` blocks.
inline int batchBlocks(uint64_t num_chunks, int max_blocks) {
  const uint64_t warps = kBatchThreads / 32;
  uint64_t blocks = (num_chunks + warps - 1) / warps;
  if (blocks < 1) blocks = 1;
  if (blocks > (uint64_t)max_blocks) blocks = (uint64_t)max_blocks;
  return (int)blocks;
}

}  // namespace batch
}  // namespace te4j
