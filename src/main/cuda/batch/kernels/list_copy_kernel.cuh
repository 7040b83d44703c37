// batch/kernels/list_copy_kernel.cuh — the kernel of a posted transfer list: the batch kernel's
// chunk walk (batch/kernels/batch_copy_kernel.cuh: a block per chunk, every copy all or
// nothing) over descriptors that stay in device memory from one post to the next, ending with
// one completion record in pinned host memory that the host polls with a plain load.
//
// Why epochs instead of clearing: a repost must not cost a host-to-device copy or a memset per
// request. Each post carries a number that grows by one; a copy's decision word holds the epoch
// it was decided in, so a word left by an earlier post reads as undecided, and the cancel word
// holds the latest cancelled epoch, so cancelling one post never reaches a later one.
//
// Why a completion record instead of an event: the last block to finish (a ticket counter in
// device memory, reset by that block for the next post) writes the post's skipped count and
// then its epoch to host memory, after a system-scope fence, so the waiter needs no CUDA call
// to learn that the post ended and whether every request completed. The per-request states
// stay in device memory and come to the host only when asked.
// Header-only: libte4j's CUDA list and the native test driver launch the same kernel.
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

#include "batch/batch_descriptors.h"
#include "batch/kernels/block_copy.cuh"

namespace te4j {
namespace batch {

/// Device-side words of a list: written by the kernel (ticket, skipped) and by the cancel copy.
struct ListControl {
  unsigned long long cancel_epoch;  // posts of this epoch or older skip the copies not started
  unsigned int blocks_done;         // blocks of the running post that have finished
  unsigned int skipped;             // copies of the running post decided "skip"
};

/// Host-side (pinned) completion record of the last post.
struct ListRecord {
  unsigned long long done_epoch;  // the epoch of the last post that ended
  unsigned long long cancel_src;  // the source of the cancel copy (host only)
  unsigned int skipped;           // that post's skipped copies, written before done_epoch
  unsigned int pad;
};

/// A decision word: (epoch << 2) | decision, decision 1 run, 2 skip.
constexpr int kEpochShift = 2;

/// Threads per block. Half the batch kernel's: a chunk of a small block (a 4 KiB KV page) is
/// one load per thread at 256 threads, so what bounds it is the chain of dependent loads before
/// the copy (chunk, copy, cancel word); twice as many resident blocks of half the threads keep
/// twice as many of those chains in flight, with the same bytes in flight per SM, and the grid
/// for 4096 pages then needs half the rounds.
constexpr int kListThreads = 128;

/// One post over chunks [0, num_chunks) of `chunks` (the range's first chunk; copy indices are
/// the list's). `copies`, `progress`, `states` and `ctl` are device memory, `record` pinned
/// host memory. Launch with gridDim.x <= num_chunks blocks of kListThreads threads.
__global__ void __launch_bounds__(kListThreads)
    listCopyKernel(const BatchCopy* copies, const BatchChunk* chunks, uint64_t num_chunks,
                   unsigned long long* progress, int32_t* states, ListControl* ctl,
                   ListRecord* record, unsigned long long epoch) {
  __shared__ unsigned int decision_of_chunk;
  const unsigned long long tag = epoch << kEpochShift;
  for (uint64_t c = blockIdx.x; c < num_chunks; c += gridDim.x) {
    const BatchChunk ch = chunks[c];
    const BatchCopy cp = copies[ch.copy];
    if (threadIdx.x == 0) {
      const unsigned long long cancelled =
          *reinterpret_cast<volatile unsigned long long*>(&ctl->cancel_epoch);
      const unsigned int want = cancelled >= epoch ? 2u : 1u;
      unsigned int decision = want;
      bool decider = true;
      if (piecesOf(cp.length) > 1) {
        unsigned long long seen = progress[ch.copy];
        for (;;) {
          if ((seen >> kEpochShift) == epoch) {  // another chunk of this post decided
            decision = (unsigned int)(seen & 3u);
            decider = false;
            break;
          }
          const unsigned long long old = atomicCAS(&progress[ch.copy], seen, tag | want);
          if (old == seen) break;
          seen = old;
        }
      }
      if (decider && decision == 2u) atomicAdd(&ctl->skipped, 1u);
      decision_of_chunk = decision;
      states[ch.copy] = decision == 1u ? kStateCompleted : kStateTimeout;
    }
    __syncthreads();
    const unsigned int decision = decision_of_chunk;
    if (decision == 1u) {
      const uint64_t piece = chunkBytesOf(cp.length);
      const uint64_t offset = (uint64_t)ch.piece * piece;
      const uint64_t length = cp.length - offset < piece ? cp.length - offset : piece;
      blockCopy((unsigned char*)(uintptr_t)(cp.dst + offset),
                (const unsigned char*)(uintptr_t)(cp.src + offset), length);
    }
    __syncthreads();
  }
  // Every thread's stores, then the block's ticket: the last block sees the whole post done.
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    const unsigned int ticket = atomicAdd(&ctl->blocks_done, 1u);
    if (ticket == gridDim.x - 1) {
      __threadfence();
      const unsigned int skipped = atomicExch(&ctl->skipped, 0u);
      ctl->blocks_done = 0;  // every block of this post has taken its ticket
      *reinterpret_cast<volatile unsigned int*>(&record->skipped) = skipped;
      __threadfence_system();
      *reinterpret_cast<volatile unsigned long long*>(&record->done_epoch) = epoch;
    }
  }
}

}  // namespace batch
}  // namespace te4j
