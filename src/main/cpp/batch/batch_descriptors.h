// batch/batch_descriptors.h — the host side of a transfer batch's descriptors: the checks every
// platform applies to each request Java writes (its copy, and its route), and how the CUDA batch
// cuts the copies into chunks for its kernel. Plain C++ (no CUDA header): the host batch, the CUDA
// batch, its kernel and the fuzz target share it.
//
// Why the native side checks at all: the Java layer resolves every request against the
// registered ranges first, so a descriptor that reaches here is in range; these checks are what
// is cheap and guards the arithmetic below (an address range that wraps, a length that would
// overflow a chunk count), so a caller that bypasses the Java layer gets an error, never a
// division by zero or a copy through a wrapped pointer.
#pragma once

#include <stdint.h>

// The chunk arithmetic runs in the batch kernel too.
#ifdef __CUDACC__
#define TE4J_BATCH_HOST_DEVICE __host__ __device__
#else
#define TE4J_BATCH_HOST_DEVICE
#endif

namespace te4j {
namespace batch {

/// The longest request (TransferRequest.MAX_LENGTH).
constexpr uint64_t kMaxRequestBytes = 1ull << 40;
/// batch_api.h's BatchOpcode values.
constexpr int32_t kOpRead = 0;
constexpr int32_t kOpWrite = 1;

/// Why a descriptor is refused; kDescriptorOk when it is not.
enum DescriptorProblem : int {
  kDescriptorOk = 0,
  kBadOpcode,
  kNullAddress,
  kBadLength,      // 0 or over kMaxRequestBytes
  kWrappingRange,  // address + length past 2^64
  kBadRoute,       // neither mapped, lost, nor a rank
  kNoRdma,         // a rank, and no RdmaTransport of that many ranks is attached
  kNullKey,        // an RDMA route with a null local or remote key
};

inline const char* describe(DescriptorProblem p) {
  switch (p) {
    case kDescriptorOk: return "ok";
    case kBadOpcode: return "its opcode is neither READ (0) nor WRITE (1)";
    case kNullAddress: return "a null address";
    case kBadLength: return "its length is 0 or over 2^40";
    case kWrappingRange: return "an address range that wraps past 2^64";
    case kBadRoute: return "a route that is neither mapped (-1), lost (-2) nor an RDMA rank";
    case kNoRdma: return "an RDMA rank, and no RdmaTransport with that rank is attached";
    case kNullKey: return "an RDMA route with a null local or remote key";
  }
  return "?";
}

inline DescriptorProblem checkDescriptor(int32_t opcode, uint64_t local, uint64_t remote,
                                         uint64_t length) {
  if (opcode != kOpRead && opcode != kOpWrite) return kBadOpcode;
  if (local == 0 || remote == 0) return kNullAddress;
  if (length == 0 || length > kMaxRequestBytes) return kBadLength;
  if (local > UINT64_MAX - length || remote > UINT64_MAX - length) return kWrappingRange;
  return kDescriptorOk;
}

/// batch_api.h's BatchRoute values.
constexpr int32_t kRouteMapped = -1;
constexpr int32_t kRoutePeerLost = -2;

/// The route's own check, after checkDescriptor: `ranks` is the attached RdmaTransport's rank
/// count (0 when none is attached). A lost route is final at submit and needs no check.
inline DescriptorProblem checkRoute(int32_t route, uint32_t lkey, uint32_t rkey, int ranks) {
  if (route == kRouteMapped || route == kRoutePeerLost) return kDescriptorOk;
  if (route < 0) return kBadRoute;
  if (route >= ranks) return kNoRdma;
  if (lkey == 0 || rkey == 0) return kNullKey;
  return kDescriptorOk;
}

/// The first bad descriptor of a part: its index in [0, count) and why, or -1.
inline int firstBadDescriptor(int count, const int32_t* opcodes, const uint64_t* local,
                              const uint64_t* remote, const uint64_t* lengths,
                              DescriptorProblem* why) {
  for (int i = 0; i < count; ++i) {
    const DescriptorProblem p = checkDescriptor(opcodes[i], local[i], remote[i], lengths[i]);
    if (p != kDescriptorOk) {
      *why = p;
      return i;
    }
  }
  *why = kDescriptorOk;
  return -1;
}

constexpr uint64_t kBatchChunkBytes = 32 * 1024;

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

/// Per-copy bookkeeping in device memory: whether its chunks copy (decided by the first to run).
struct BatchProgress {
  unsigned int decision;  // 0 undecided, 1 run, 2 skip
};

/// How a copy of `len` bytes is cut: pieces of kBatchChunkBytes, or for copies of more than
/// kMaxChunksPerCopy of those, kMaxChunksPerCopy equal pieces (16-byte multiples), so that the
/// chunk array of even a 2^40-byte request stays small. `len` is 1 .. kMaxRequestBytes
/// (checkDescriptor): the sums below cannot wrap (at 2^64 - 1 they would, to a division by zero).
constexpr uint64_t kMaxChunksPerCopy = 1u << 16;
TE4J_BATCH_HOST_DEVICE inline uint64_t chunkBytesOf(uint64_t len) {
  if (len <= kBatchChunkBytes * kMaxChunksPerCopy) return kBatchChunkBytes;
  const uint64_t per = (len + kMaxChunksPerCopy - 1) / kMaxChunksPerCopy;
  return (per + 15) & ~(uint64_t)15;
}
TE4J_BATCH_HOST_DEVICE inline uint64_t piecesOf(uint64_t len) {
  const uint64_t c = chunkBytesOf(len);
  return (len + c - 1) / c;
}

/// Chunks a batch of copies needs; every length 1 .. kMaxRequestBytes.
inline uint64_t chunkCount(const BatchCopy* copies, uint32_t num_copies) {
  uint64_t n = 0;
  for (uint32_t i = 0; i < num_copies; ++i) n += piecesOf(copies[i].length);
  return n;
}

/// Cuts copies into chunks (the host side of the kernel's contract); progress[i] starts
/// undecided. Returns the number of chunks written to `out` (capacity `max_chunks`), or 0
/// when a copy is empty or longer than kMaxRequestBytes, or they do not fit.
inline uint64_t splitIntoChunks(const BatchCopy* copies, uint32_t num_copies, BatchChunk* out,
                                uint64_t max_chunks, BatchProgress* progress) {
  uint64_t n = 0;
  for (uint32_t i = 0; i < num_copies; ++i) {
    const uint64_t len = copies[i].length;
    if (len == 0 || len > kMaxRequestBytes) return 0;
    const uint64_t pieces = piecesOf(len);
    if (pieces > max_chunks - n) return 0;
    for (uint64_t p = 0; p < pieces; ++p) out[n++] = BatchChunk{i, (uint32_t)p};
    progress[i].decision = 0;
  }
  return n;
}

}  // namespace batch
}  // namespace te4j
