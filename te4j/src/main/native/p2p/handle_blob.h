// handle_blob.h — the common header of every te4j handle blob (host and CUDA platforms) and the
// checks an importer runs on it. Private to libte4j; plain C++ so nvcc and g++ both include it.
//
// Layout, in int32 words (what follows the header is platform data, see each transport):
//   0  magic     0x4a344554 ('TE4J' read as little-endian bytes "TE4J")
//   1  version   1
//   2  platform  te4j::Platform of the exporter
//   3  pid       owner process id (> 0)
//   4  size lo   buffer size in bytes, low 32 bits
//   5  size hi   high 32 bits
//   6..9 host    host identity: 128-bit hash of boot_id + pid namespace (see hostIdentity)
#pragma once

#include <cstdint>
#include <string>

namespace te4j {
namespace blob {

constexpr int32_t kMagic = 0x4a344554;
constexpr int32_t kVersion = 1;

constexpr int kMagicAt = 0;
constexpr int kVersionAt = 1;
constexpr int kPlatformAt = 2;
constexpr int kPidAt = 3;
constexpr int kSizeLoAt = 4;
constexpr int kSizeHiAt = 5;
constexpr int kHostIdAt = 6;
constexpr int kHostIdInts = 4;
constexpr int kHeaderInts = 10;

/// Windows address ranks through a uint64 mask, hence at most 64 ranks.
constexpr int kMaxRanks = 64;

/// 128 bits naming "this kernel instance + this pid namespace": a hash of
/// /proc/sys/kernel/random/boot_id (hostname when absent) and the /proc/self/ns/pid link.
/// Two processes can map each other's memory by pid only when both agree, so the pid namespace
/// is part of it. Computed once per process.
const uint32_t* hostIdentity();

/// Writes the header words for a buffer of `bytes` owned by this process.
void writeHeader(int32_t* blob, int platform, uint64_t bytes);

/// Size carried by a blob (words 4, 5).
uint64_t sizeOf(const int32_t* blob);

/// Strict check of a peer's header: magic, version, platform, pid > 0, host identity equal to
/// ours, size == expected_bytes. Returns kOk, or kBadHandle with *why naming rank and field.
int checkHeader(const int32_t* blob, int platform, int rank, uint64_t expected_bytes,
                std::string* why);

/// Checks importPeerHandles' arguments shared by both platforms (ranks, mask, handle array).
/// Returns kOk or kInvalidArgument with *why.
int checkImportArgs(int rank, int num_ranks, int transport_ranks, const int32_t* remote_handles,
                    uint64_t active_ranks_mask, std::string* why);

/// True when the owner process `pid` no longer runs: absent, a zombie, or exiting (PF_EXITING:
/// its fds and memory are already being torn down, and /proc answers ENOENT or EACCES for them).
bool ownerExited(int32_t pid);

/// Whether rank r takes part in the window (bit r of the mask).
inline bool isActive(uint64_t mask, int r) { return ((mask >> r) & 1u) != 0; }

}  // namespace blob
}  // namespace te4j
