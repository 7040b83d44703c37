// batch/kernels/batch_copy_kernel.cuh — one kernel for a whole transfer batch: a chunk array in
// device memory, one thread block per chunk, many chunks per large copy.
//
// Why chunks: a batch is many small blocks (KV-cache pages), where one launch per block costs
// microseconds each, and a few large ones, which one block per copy would leave to a handful
// of SMs. The host cuts every copy into chunks of at most kBatchChunkBytes, so the grid always
// has enough independent work; the chunks of a copy finish it together: the last chunk to
// finish (a counter per copy) writes the copy's state. A copy of one chunk needs no counter.
//
// Why a block per chunk, with four 16-byte loads in flight per thread: a copy is bound by the
// latency of its loads, so each thread keeps several of them outstanding before it stores.
//
// Deadline: a copy is decided once, by its first chunk to run: "run" unless the batch's cancel
// word is set, then "skip". Every chunk follows that decision, so a copy either moves all of
// its bytes (COMPLETED) or none of them (TIMEOUT), never part.
//
// Why the cancel word and the states are in device memory: a load from host memory costs about
// a microsecond and such loads did not overlap across the grid (one per chunk made 4096 chunks
// of 4 KiB take 4 ms instead of 12 us), so the host writes the cancel word with a copy on a
// stream of its own, and the states go to the host in one copy after the kernel, ordered by the
// stream (no fence needed: the kernel's end makes its stores visible to what follows it).
// Header-only: libte4j's CUDA batch and the native test driver launch the same kernel.
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

#include "batch/batch_descriptors.h"
#include "batch/kernels/block_copy.cuh"

namespace te4j {
namespace batch {

/// The batch kernel: grid-stride over chunks, one block each. `copies`, `progress` and `states`
/// start at the part's first request; chunk copy indices count from there. `states` and
/// `cancel` are device memory.
__global__ void __launch_bounds__(kBatchThreads)
    batchCopyKernel(const BatchCopy* copies, const BatchChunk* chunks, uint64_t num_chunks,
                    BatchProgress* progress, int32_t* states, const volatile int32_t* cancel) {
  __shared__ unsigned int decision_of_chunk;
  for (uint64_t c = blockIdx.x; c < num_chunks; c += gridDim.x) {
    const BatchChunk ch = chunks[c];
    const BatchCopy cp = copies[ch.copy];
    if (threadIdx.x == 0) {
      const unsigned int want = *cancel != 0 ? 2u : 1u;
      unsigned int decision = want;
      if (piecesOf(cp.length) > 1) {
        const unsigned int old = atomicCAS(&progress[ch.copy].decision, 0u, want);
        decision = old == 0 ? want : old;
      }
      decision_of_chunk = decision;
      // Every chunk of a copy stores the same final state; the host sees it after the kernel.
      states[ch.copy] = decision == 1 ? kStateCompleted : kStateTimeout;
    }
    __syncthreads();
    const unsigned int decision = decision_of_chunk;
    if (decision == 1) {
      const uint64_t piece = chunkBytesOf(cp.length);
      const uint64_t offset = (uint64_t)ch.piece * piece;
      const uint64_t length = cp.length - offset < piece ? cp.length - offset : piece;
      blockCopy((unsigned char*)(uintptr_t)(cp.dst + offset),
                (const unsigned char*)(uintptr_t)(cp.src + offset), length);
    }
    // The shared decision word is not rewritten before every thread has read it.
    __syncthreads();
  }
}

}  // namespace batch
}  // namespace te4j
