// metadata_codec.h — the one definition of the RDMA metadata bytes a rank hands the others: its
// encoder and its strict, fuzz-safe decoder. Java and every other caller see these bytes as
// opaque; they are made by RdmaTransport::encodedMetadata and read back by connectMetadata and
// RdmaTransport::describeMetadata.
//
// Layout, all fields big-endian (offsets in bytes):
//   0      magic "TE4M" (u32)          4  version = 2 (u16)   6 backend (u8)   7 flags (u8, bit 0
//   RoCE) 8      num_ranks (u32)            12  qps_per_rank (u32) 16     gid_index (u32) 20  lid
//   (u32) 24     raddr (u64)                32  rkey (u32)          36 reserved (u32, 0) 40
//   registered bytes (u64)     48  subnet prefix (u64) 56 interface id (u64) 64     qpn count n
//   (u32)          68  n x qpn (u32) 68+4n  NIC key length k (u32, 0 or 32)    72+4n  k bytes: the
//   key 72+4n+k  CRC-32 (core/crc32.h) of all bytes before (u32)
// QP i serves (destination rank i / qps_per_rank, channel i % qps_per_rank). The NIC key (software
// NIC) is what a connecting rank must prove to that rank's NIC; it travels only through the job's
// handle exchange. The GID is subnet prefix and interface id, each as the GID's 8 big-endian bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace te4j {
namespace rdma {

constexpr uint32_t kMetadataMagic = 0x5445344d;  // "TE4M"
constexpr uint32_t kMetadataVersion = 2;
constexpr size_t kMetadataHeaderBytes = 68;
constexpr size_t kMetadataKeyBytes = 32;
constexpr uint32_t kMaxMetadataQpns = 64 * 1024;
constexpr uint32_t kMaxQpn = 0xffffff;  // QP numbers are 24 bits; 0 is never a QP

/// The fields of one rank's metadata.
struct PeerMetadata {
  int backend = 0;  // te4j::RdmaBackend: kRdmaBackendSoft or kRdmaBackendMlx5
  bool roce = false;
  uint32_t num_ranks = 0;
  uint32_t qps_per_rank = 0;
  uint32_t gid_index = 0;
  uint32_t lid = 0;  // InfiniBand LID; the software NIC's TCP port
  uint64_t raddr = 0;
  uint32_t rkey = 0;
  uint64_t registered_bytes = 0;
  uint64_t subnet_prefix = 0;
  uint64_t interface_id = 0;
  std::vector<uint32_t> qpns;  // num_ranks x qps_per_rank
  std::vector<uint8_t> key;    // empty or kMetadataKeyBytes
};

/// The bytes of the layout above (no checks: the encoder is fed by this process's own NIC).
std::vector<uint8_t> encodeMetadata(const PeerMetadata& m);

/// Decodes and validates `length` bytes: magic, version, length, checksum, then every value no
/// te4j rank sends (QP number 0 or over 24 bits, remote key 0, nothing registered, a software
/// NIC address that is not a unicast IPv4 address and TCP port, ...). Reads nothing outside
/// [bytes, bytes + length). Returns true, or false with *why naming the field and the fix.
bool decodeMetadata(const uint8_t* bytes, size_t length, PeerMetadata* out, std::string* why);

/// Where a rank's NIC is reached, for messages: "a.b.c.d:port" (software NIC), "lid N" or a GID.
std::string endpointOf(const PeerMetadata& m);

/// One line for messages: backend, shape, lid, rkey, registered size.
std::string describe(const PeerMetadata& m);

}  // namespace rdma
}  // namespace te4j
