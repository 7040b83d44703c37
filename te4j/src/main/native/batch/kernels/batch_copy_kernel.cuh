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
// States live in host memory mapped into the device (the host polls them without a CUDA call):
// each is written after a system-scope fence that orders the copy's bytes before it.
// Header-only: libte4j's CUDA batch and the native test driver launch the same kernel.
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

namespace te4j {
namespace batch {

constexpr uint64_t kBatchChunkBytes = 32 * 1024;
constexpr int kBatchThreads = 256;

/// One copy of a batch, as the host resolved it from the request (READ: remote -> local).
struct BatchCopy {
  uint64_t src;
  uint64_t dst;
  uint64_t length;
};

/// A piece of a copy: bytes [piece * chunkBytesOf(length), ...) of copies[copy].
struct BatchChunk {
  uint32_t copy;
  uint32_t piece;
};

/// Per-copy bookkeeping in device memory: `chunks_left` starts at the copy's chunk count.
struct BatchProgress {
  unsigned int chunks_left;
  unsigned int decision;  // 0 undecided, 1 run, 2 skip
};

// The state values of te4j/batch_api.h's RequestState.
constexpr int32_t kStateCompleted = 1;
constexpr int32_t kStateTimeout = 2;

/// How a copy of `len` bytes is cut: pieces of kBatchChunkBytes, or for copies of more than
/// kMaxChunksPerCopy of those, kMaxChunksPerCopy equal pieces (16-byte multiples), so that the
/// chunk array of even a 2^40-byte request stays small.
constexpr uint64_t kMaxChunksPerCopy = 1u << 16;
__host__ __device__ inline uint64_t chunkBytesOf(uint64_t len) {
  if (len <= kBatchChunkBytes * kMaxChunksPerCopy) return kBatchChunkBytes;
  const uint64_t per = (len + kMaxChunksPerCopy - 1) / kMaxChunksPerCopy;
  return (per + 15) & ~(uint64_t)15;
}
__host__ __device__ inline uint64_t piecesOf(uint64_t len) {
  const uint64_t c = chunkBytesOf(len);
  return (len + c - 1) / c;
}

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

/// The batch kernel: grid-stride over chunks, one block each. `copies`, `progress` and the
/// state index `state_base` start at the part's first request; chunk copy indices count from there.
__global__ void __launch_bounds__(kBatchThreads)
    batchCopyKernel(const BatchCopy* copies, const BatchChunk* chunks, uint64_t num_chunks,
                    BatchProgress* progress, volatile int32_t* states, uint32_t state_base,
                    const volatile int32_t* cancel) {
  __shared__ unsigned int decision_of_chunk;
  for (uint64_t c = blockIdx.x; c < num_chunks; c += gridDim.x) {
    const BatchChunk ch = chunks[c];
    const BatchCopy cp = copies[ch.copy];
    const uint64_t pieces = piecesOf(cp.length);
    if (threadIdx.x == 0) {
      unsigned int decision;
      if (pieces == 1) {
        decision = *cancel != 0 ? 2u : 1u;
      } else {
        decision = *(volatile unsigned int*)&progress[ch.copy].decision;
        if (decision == 0) {
          const unsigned int want = *cancel != 0 ? 2u : 1u;
          const unsigned int old = atomicCAS(&progress[ch.copy].decision, 0u, want);
          decision = old == 0 ? want : old;
        }
      }
      decision_of_chunk = decision;
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
    // Every thread's stores of this chunk happen before thread 0's fence (the barrier), and the
    // shared decision word is not rewritten before all threads have read it.
    __syncthreads();
    if (threadIdx.x == 0) {
      const int32_t state = decision == 1 ? kStateCompleted : kStateTimeout;
      if (pieces == 1) {
        __threadfence_system();
        states[state_base + ch.copy] = state;
      } else {
        __threadfence();
        if (atomicSub(&progress[ch.copy].chunks_left, 1u) == 1u) {
          __threadfence_system();
          states[state_base + ch.copy] = state;
        }
      }
    }
  }
}

/// A grid for `num_chunks` chunks: one block each, at most `max_blocks` blocks.
inline int batchBlocks(uint64_t num_chunks, int max_blocks) {
  uint64_t blocks = num_chunks < 1 ? 1 : num_chunks;
  if (blocks > (uint64_t)max_blocks) blocks = (uint64_t)max_blocks;
  return (int)blocks;
}

/// Chunks a batch of copies needs.
inline uint64_t chunkCount(const BatchCopy* copies, uint32_t num_copies) {
  uint64_t n = 0;
  for (uint32_t i = 0; i < num_copies; ++i) n += piecesOf(copies[i].length);
  return n;
}

/// Cuts copies into chunks (the host side of the kernel's contract); progress[i] gets copy i's
/// chunk count. Returns the number of chunks written to `out` (capacity `max_chunks`), or 0
/// when a copy is empty or they do not fit.
inline uint64_t splitIntoChunks(const BatchCopy* copies, uint32_t num_copies, BatchChunk* out,
                                uint64_t max_chunks, BatchProgress* progress) {
  uint64_t n = 0;
  for (uint32_t i = 0; i < num_copies; ++i) {
    const uint64_t pieces = piecesOf(copies[i].length);
    if (pieces == 0 || n + pieces > max_chunks) return 0;
    for (uint64_t p = 0; p < pieces; ++p) out[n++] = BatchChunk{i, (uint32_t)p};
    progress[i].chunks_left = (unsigned int)pieces;
    progress[i].decision = 0;
  }
  return n;
}

}  // namespace batch
}  // namespace te4j
