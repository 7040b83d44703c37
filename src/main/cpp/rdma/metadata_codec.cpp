// metadata_codec.cpp — RDMA metadata bytes: encoder, checksum and strict decoder.
#include "rdma/metadata_codec.h"

#include <cstdio>
#include <sstream>

#include "core/crc32.h"
#include "te4j/rdma_api.h"

namespace te4j {
namespace rdma {
namespace {

// Readers and writers of big-endian fields; the decoder checks every length before it reads.
uint32_t get32(const uint8_t* p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}
uint64_t get64(const uint8_t* p) { return (uint64_t)get32(p) << 32 | get32(p + 4); }
void put8(std::vector<uint8_t>* b, uint32_t v) { b->push_back((uint8_t)v); }
void put16(std::vector<uint8_t>* b, uint32_t v) {
  put8(b, v >> 8);
  put8(b, v);
}
void put32(std::vector<uint8_t>* b, uint32_t v) {
  put16(b, v >> 16);
  put16(b, v);
}
void put64(std::vector<uint8_t>* b, uint64_t v) {
  put32(b, (uint32_t)(v >> 32));
  put32(b, (uint32_t)v);
}

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)v);
  return buf;
}

std::string gid(uint64_t prefix, uint64_t ifid) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%016llx:%016llx", (unsigned long long)prefix,
                (unsigned long long)ifid);
  return buf;
}

bool refuse(std::string* why, const std::string& text) {
  *why = "RDMA metadata " + text;
  return false;
}

// What a well-formed encoding can still get wrong (a forged or damaged field under a valid
// checksum): values no te4j rank ever sends.
bool checkValues(const PeerMetadata& m, std::string* why) {
  if (m.registered_bytes == 0)
    return refuse(why, "registers 0 bytes (every rank registers its buffer first)");
  if ((int64_t)m.registered_bytes < 0)
    return refuse(
        why, "registered size " + std::to_string((int64_t)m.registered_bytes) + " is negative");
  if ((int64_t)m.raddr <= 0 || (int64_t)(m.raddr + m.registered_bytes) < 0)
    return refuse(why, "remote address " + hex(m.raddr) + " + " +
                           std::to_string(m.registered_bytes) + " B is not a user-space range");
  if (m.rkey == 0) return refuse(why, "remote key is 0 (no region has key 0)");
  if (m.lid > 0xffff || m.gid_index > 255)
    return refuse(why, "lid " + std::to_string((int32_t)m.lid) + " / GID index " +
                           std::to_string((int32_t)m.gid_index) + " outside [0, 65535] / [0, 255]");
  if (m.backend == kRdmaBackendSoft) {
    // The software NIC's address: GID ::ffff:<unicast IPv4> of its listener, lid its TCP port.
    const uint32_t first = (uint32_t)m.interface_id >> 24;
    if (!m.roce || m.subnet_prefix != 0 || (m.interface_id >> 32) != 0xffff || first == 0 ||
        first >= 224 || m.lid == 0 || m.gid_index != 0)
      return refuse(why,
                    "of a software NIC must name a unicast IPv4 address and a TCP port (GID "
                    "::ffff:a.b.c.d, lid = port, GID index 0); got GID " +
                        gid(m.subnet_prefix, m.interface_id) + ", lid " + std::to_string(m.lid) +
                        ", GID index " + std::to_string(m.gid_index));
  }
  return true;
}

}  // namespace

std::vector<uint8_t> encodeMetadata(const PeerMetadata& m) {
  std::vector<uint8_t> b;
  b.reserve(kMetadataHeaderBytes + 4 * m.qpns.size() + 8 + m.key.size());
  put32(&b, kMetadataMagic);
  put16(&b, kMetadataVersion);
  put8(&b, (uint32_t)m.backend);
  put8(&b, m.roce ? 1 : 0);
  put32(&b, m.num_ranks);
  put32(&b, m.qps_per_rank);
  put32(&b, m.gid_index);
  put32(&b, m.lid);
  put64(&b, m.raddr);
  put32(&b, m.rkey);
  put32(&b, 0);
  put64(&b, m.registered_bytes);
  put64(&b, m.subnet_prefix);
  put64(&b, m.interface_id);
  put32(&b, (uint32_t)m.qpns.size());
  for (uint32_t q : m.qpns) put32(&b, q);
  put32(&b, (uint32_t)m.key.size());
  b.insert(b.end(), m.key.begin(), m.key.end());
  put32(&b, crc32(b.data(), b.size()));
  return b;
}

bool decodeMetadata(const uint8_t* bytes, size_t length, PeerMetadata* out, std::string* why) {
  if (bytes == nullptr) return refuse(why, "is null");
  if (length < kMetadataHeaderBytes + 4)
    return refuse(why, "truncated: " + std::to_string(length) + " bytes, header needs " +
                           std::to_string(kMetadataHeaderBytes + 4));
  const uint32_t magic = get32(bytes);
  if (magic != kMetadataMagic) {
    *why = "not te4j RDMA metadata: magic " + hex(magic) + ", expected 0x5445344d ('TE4M')";
    return false;
  }
  const uint32_t version = (uint32_t)bytes[4] << 8 | bytes[5];
  if (version != kMetadataVersion)
    return refuse(why, "version " + std::to_string(version) + ", this te4j reads " +
                           std::to_string(kMetadataVersion) +
                           " (fix: run the same te4j version on every rank)");
  PeerMetadata m;
  m.backend = bytes[6];
  const uint32_t flags = bytes[7];
  if (m.backend != kRdmaBackendSoft && m.backend != kRdmaBackendMlx5)
    return refuse(why, "has unknown backend " + std::to_string(m.backend));
  if ((flags & ~1u) != 0) return refuse(why, "has unknown flags " + hex(flags));
  m.roce = (flags & 1) != 0;
  m.num_ranks = get32(bytes + 8);
  m.qps_per_rank = get32(bytes + 12);
  m.gid_index = get32(bytes + 16);
  m.lid = get32(bytes + 20);
  m.raddr = get64(bytes + 24);
  m.rkey = get32(bytes + 32);
  const uint32_t reserved = get32(bytes + 36);
  if (reserved != 0)
    return refuse(why, "reserved word is " + hex(reserved) +
                           ", not 0 (fix: run the same te4j version on every rank)");
  m.registered_bytes = get64(bytes + 40);
  m.subnet_prefix = get64(bytes + 48);
  m.interface_id = get64(bytes + 56);
  const uint32_t n = get32(bytes + 64);
  if (m.num_ranks < 1 || m.num_ranks > 64 || m.qps_per_rank < 1 || n > kMaxMetadataQpns ||
      (uint64_t)m.num_ranks * m.qps_per_rank != n)
    return refuse(why, "has " + std::to_string(n) + " QP numbers for " +
                           std::to_string((int32_t)m.num_ranks) + " ranks x " +
                           std::to_string((int32_t)m.qps_per_rank) + " QPs per rank");
  const size_t key_at = kMetadataHeaderBytes + 4 * (size_t)n;
  if (length < key_at + 8)
    return refuse(why, "length mismatch: " + std::to_string(length) + " bytes for " +
                           std::to_string(n) + " QPs");
  const uint32_t key_length = get32(bytes + key_at);
  if (key_length != 0 && key_length != kMetadataKeyBytes)
    return refuse(why, "NIC key of " + std::to_string((int32_t)key_length) + " bytes, not 0 or " +
                           std::to_string(kMetadataKeyBytes));
  if (length != key_at + 4 + key_length + 4)
    return refuse(why, "length mismatch: " + std::to_string(length) + " bytes for " +
                           std::to_string(n) + " QPs and a key of " + std::to_string(key_length) +
                           " bytes");
  if (get32(bytes + length - 4) != crc32(bytes, length - 4))
    return refuse(why, "checksum mismatch (corrupted in transit)");
  m.qpns.resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    m.qpns[i] = get32(bytes + kMetadataHeaderBytes + 4 * (size_t)i);
    if (m.qpns[i] == 0 || m.qpns[i] > kMaxQpn)
      return refuse(why, "QP number " + std::to_string(i) + " is " + hex(m.qpns[i]) +
                             ", not in [1, 0xffffff]");
  }
  m.key.assign(bytes + key_at + 4, bytes + key_at + 4 + key_length);
  if (!checkValues(m, why)) return false;
  *out = std::move(m);
  return true;
}

std::string endpointOf(const PeerMetadata& m) {
  if (m.backend == kRdmaBackendSoft) {
    const uint32_t ip = (uint32_t)m.interface_id;
    std::ostringstream s;
    s << (ip >> 24) << '.' << (ip >> 16 & 0xff) << '.' << (ip >> 8 & 0xff) << '.' << (ip & 0xff)
      << ':' << m.lid;
    return s.str();
  }
  return m.roce ? "GID " + gid(m.subnet_prefix, m.interface_id) : "lid " + std::to_string(m.lid);
}

std::string describe(const PeerMetadata& m) {
  std::ostringstream s;
  s << "RdmaMetadata[" << (m.backend == kRdmaBackendSoft ? "soft" : "mlx5") << " " << m.num_ranks
    << "x" << m.qps_per_rank << " QPs, lid " << m.lid << ", rkey " << hex(m.rkey) << ", "
    << m.registered_bytes << " B]";
  return s.str();
}

}  // namespace rdma
}  // namespace te4j
