// cuda_batch_resources.h — what a CUDA transfer batch runs on (its streams, completion event,
// state words and descriptor arena), kept in a pool for the next batch. Private to libte4j.
//
// Why a pool: making these costs about 0.6 ms (pinned and device allocations, two streams, an
// occupancy query) and freeing them about 0.3 ms (cudaFree and cudaFreeHost synchronise the
// device), while a batch of small blocks moves in tens of microseconds; Mooncake-style callers
// allocate a batch per transfer. A batch gives its set back quiescent (its streams synchronised)
// and the next batch of the same capacity class on the same device takes it, made ready.
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

#include <cstddef>
#include <string>

#include "batch/batch_descriptors.h"

namespace te4j {
namespace batch {

/// One device block and its pinned staging of the same size.
struct CudaBlock {
  void* dev = nullptr;
  void* stage = nullptr;
  uint64_t bytes = 0;
};

/// Allocates `bytes` of device memory and as much pinned staging; a te4j Status.
int allocateCudaBlock(uint64_t bytes, CudaBlock* out, std::string* why);
void releaseCudaBlock(CudaBlock* block);

struct CudaBatchResources {
  int device = 0;
  int capacity = 0;  // the capacity class: a batch of up to this many requests
  cudaStream_t stream = nullptr;
  cudaStream_t cancel_stream = nullptr;  // carries the cancel word beside running kernels
  cudaEvent_t done = nullptr;            // recorded after each part's kernel
  int32_t* host_words = nullptr;         // pinned: capacity states, then the cancel word
  int32_t* dev_words = nullptr;          // the same words in device memory
  CudaBlock arena;                       // parts' descriptor blocks, one after another
};

/// Where a part's descriptors lie in its one block (staging and device alike): the copies,
/// their progress words, then the chunks, each section 8-byte aligned.
struct PartLayout {
  uint64_t progress_at;
  uint64_t chunks_at;
  uint64_t bytes;

  static PartLayout of(uint64_t copies, uint64_t chunks) {
    PartLayout l;
    l.progress_at = align8(copies * sizeof(BatchCopy));
    l.chunks_at = l.progress_at + align8(copies * sizeof(BatchProgress));
    l.bytes = l.chunks_at + chunks * sizeof(BatchChunk);
    return l;
  }
  BatchCopy* copiesIn(char* block) const { return reinterpret_cast<BatchCopy*>(block); }
  BatchProgress* progressIn(char* block) const {
    return reinterpret_cast<BatchProgress*>(block + progress_at);
  }
  BatchChunk* chunksIn(char* block) const {
    return reinterpret_cast<BatchChunk*>(block + chunks_at);
  }
  static uint64_t align8(uint64_t bytes) { return (bytes + 7) & ~(uint64_t)7; }
};

/// Resources for a batch of `capacity` requests on `device`: an idle set of its class from the
/// pool, or new ones; either way every state reads PENDING and the cancel word is clear, on the
/// host and on the device (cleared before this returns, so a cancel copied on the cancel stream
/// later cannot be overwritten by the clearing). nullptr with a Status in
/// *status and the reason in *why when CUDA refuses.
CudaBatchResources* takeCudaBatchResources(int device, int capacity, int* status, std::string* why);

/// Takes back a batch's resources, which must be quiescent (both streams synchronised): kept
/// for the next batch of the class, or freed when the pool holds enough of them.
void giveBackCudaBatchResources(CudaBatchResources* r);

/// Frees a set that is not to be reused (its streams failed).
void discardCudaBatchResources(CudaBatchResources* r);

/// Frees every idle set (te4j::releaseCachedMemory); the bytes of device and pinned memory freed.
std::size_t releaseIdleCudaBatchResources();

}  // namespace batch
}  // namespace te4j
