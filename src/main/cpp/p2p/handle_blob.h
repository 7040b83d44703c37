// handle_blob.h — the one definition of a te4j IPC handle: the int32 blob every platform's
// exporter writes, its wire bytes (what toBytes gives Java and ranks exchange), and the checks an
// importer runs on it. Private to libte4j; plain C++ so nvcc and g++ both include it. Java and
// every other caller see the wire bytes as opaque (io.github.te4j.IpcHandle is a view over them).
//
// Blob, in int32 words (what follows the header is platform data, see each transport):
//   0  magic     0x4a344554 (little-endian bytes "TE4J"; distinct from every other te4j magic:
//                RDMA metadata "TE4M", rendezvous frames "TE4R", file exchange "TE4F", segment
//                descriptors "TE4S", etcd records)
//   1  version   1
//   2  platform  te4j::Platform of the exporter (0 host, 1 CUDA)
//   3  pid       owner process id (> 0)
//   4  size lo   buffer size in bytes, low 32 bits
//   5  size hi   high 32 bits
//   6..9 host    host identity: 128-bit hash of boot_id + pid namespace (see hostIdentity)
//   10..         platform data: host 5 words (host_p2p_transport.h), CUDA 26 words
//                (cuda_p2p_transport.cu)
//
// Wire bytes: the blob's n words, each little-endian (so the bytes start "TE4J"), then the CRC-32
// (core/crc32.h) of those 4n bytes, little-endian: 4n + 4 bytes, n = handleIntsOf(platform).
// decodeWire refuses anything else, naming the field.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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

/// Words of a whole blob per platform; 0 for a platform te4j does not know.
constexpr int kHostBlobInts = 15;
constexpr int kCudaBlobInts = 36;
constexpr int kMaxBlobInts = kCudaBlobInts;
inline int handleIntsOf(int platform) {
  return platform == 0 ? kHostBlobInts : platform == 1 ? kCudaBlobInts : 0;
}

/// Bytes of a platform's wire encoding (n words and the CRC-32), and the bounds of any.
constexpr int kCrcBytes = 4;
constexpr int kMinWireBytes = 4 * kHeaderInts + kCrcBytes;
constexpr int kMaxWireBytes = 4 * kMaxBlobInts + kCrcBytes;
inline int wireBytesOf(int platform) { return 4 * handleIntsOf(platform) + kCrcBytes; }

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

/// The wire bytes of `count` blob words (the layout above). No checks of the words: an exporter
/// feeds it its own blob; tests feed it forgeries to reach the importer's checks.
std::vector<uint8_t> encodeWire(const int32_t* words, int count);

/// Strict decoder of wire bytes from another rank: length (a whole number of words, between
/// kMinWireBytes and kMaxWireBytes), magic, version, platform, length of that platform's blob
/// (so a truncated handle is named as such), CRC-32, pid > 0, size in 1..2^63-1. Host identity is
/// not checked here (see isFromThisHost): a foreign handle is well formed, only not importable.
/// Reads nothing outside [bytes, bytes + length). Returns true with the words in *words, or false
/// with *why naming the field and the fix.
bool decodeWire(const uint8_t* bytes, size_t length, std::vector<int32_t>* words, std::string* why);

/// Whether a blob's host identity (words 6..9) is this process's: only then can its owner's
/// memory be mapped here. The only host identity te4j has.
bool isFromThisHost(const int32_t* blob);

/// Checks importPeerHandles' arguments shared by both platforms (ranks, mask, handle array).
/// Returns kOk or kInvalidArgument with *why.
int checkImportArgs(int rank, int num_ranks, int transport_ranks, const int32_t* remote_handles,
                    uint64_t active_ranks_mask, std::string* why);

/// True when the owner process `pid` no longer runs: absent, a zombie, or exiting (PF_EXITING:
/// its fds and memory are already being torn down, and /proc answers ENOENT or EACCES for them).
bool ownerExited(int32_t pid);

/// The process (thread group) that `pid` belongs to, from /proc/<pid>/status; -1 when unknown.
/// /proc/<tid>/fd/ shows the fd table of a thread's process too, so a handle whose pid names a
/// thread rather than a process must be caught by comparing the two.
int32_t threadGroupOf(int32_t pid);

/// Whether rank r takes part in the window (bit r of the mask).
inline bool isActive(uint64_t mask, int r) { return ((mask >> r) & 1u) != 0; }

}  // namespace blob
}  // namespace te4j
