// cuda_handle_fields.cuh — the CUDA platform's words of a handle blob (after the common header of
// handle_blob.h) and the checks an importer runs on them before mapping anything. Private to
// libte4j (nvcc only).
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

#include <cstddef>
#include <string>

#include "p2p/handle_blob.h"
#include "te4j/api.h"

namespace te4j {
namespace cuda_blob {

// In int32 words:
//   10     device   the owner's device ordinal (meaningful only inside the owner process)
//   11..14 uuid     the device's 16-byte UUID
//   15     pci      (PCI domain << 16) | (bus << 8) | device
//   16..17 ptr      the buffer's address in the owner process (lo, hi): used by ranks of the
//                   owner process itself
//   18..19 offset   the buffer's offset inside its cudaMalloc allocation (lo, hi)
//   20..35 ipc      cudaIpcMemHandle_t of the whole allocation (64 bytes)
constexpr int kDeviceAt = 10;
constexpr int kUuidAt = 11;
constexpr int kPciAt = 15;
constexpr int kPtrAt = 16;
constexpr int kOffsetAt = 18;
constexpr int kIpcAt = 20;
constexpr int kCudaHandleInts = 36;
static_assert(kCudaHandleInts == blob::kCudaBlobInts, "CUDA blob length: one definition");
static_assert(sizeof(cudaIpcMemHandle_t) == 64, "cudaIpcMemHandle_t is 16 ints");
static_assert(sizeof(cudaUUID_t) == 16, "cudaUUID_t is 4 ints");

/// The 64-bit value of two words (lo, hi).
inline uint64_t join(const int32_t* lo_hi) {
  return static_cast<uint64_t>(static_cast<uint32_t>(lo_hi[0])) |
         (static_cast<uint64_t>(static_cast<uint32_t>(lo_hi[1])) << 32);
}

/// Writes v as two words (lo, hi).
inline void split(uint64_t v, int32_t* lo_hi) {
  lo_hi[0] = static_cast<int32_t>(static_cast<uint32_t>(v));
  lo_hi[1] = static_cast<int32_t>(static_cast<uint32_t>(v >> 32));
}

/// Checks the CUDA words of rank r's blob for a buffer of `bytes`: kOk or kBadHandle with *why.
inline int checkFields(int r, const int32_t* b, uint64_t bytes, std::string* why) {
  const std::string who = "handle of rank " + std::to_string(r) + ": ";
  if (b[kDeviceAt] < 0) {
    *why = who + "field device is " + std::to_string(b[kDeviceAt]) + ", expected >= 0";
    return kBadHandle;
  }
  if (join(b + kPtrAt) == 0) {
    *why = who + "field ptr is 0";
    return kBadHandle;
  }
  const uint64_t offset = join(b + kOffsetAt);
  if (offset > UINT64_MAX - bytes) {
    *why = who + "field offset " + std::to_string(offset) + " overflows with the size";
    return kBadHandle;
  }
  return kOk;
}

}  // namespace cuda_blob
}  // namespace te4j
