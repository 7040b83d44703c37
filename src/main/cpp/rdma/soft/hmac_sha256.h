// hmac_sha256.h — SHA-256 and HMAC-SHA256 (FIPS 180-4, RFC 2104) for the software NIC's
// connection handshake: a peer proves it knows the listening NIC's key without sending it.
// Self-contained so that the NIC needs no crypto library at build or run time.
#pragma once

#include <cstddef>
#include <cstdint>

namespace te4j {
namespace rdma {

constexpr size_t kSha256Bytes = 32;

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t n);
  void finish(uint8_t out[kSha256Bytes]);

 private:
  void block(const uint8_t* p);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t used_ = 0;
  uint64_t total_ = 0;
};

/// HMAC-SHA256 of the concatenation of `parts` (n_parts pointers with their lengths).
void hmacSha256(const uint8_t* key, size_t key_len, const void* const* parts, const size_t* lengths,
                int n_parts, uint8_t out[kSha256Bytes]);

/// Compares n bytes in time independent of where they differ; true when equal.
bool equalConstantTime(const uint8_t* a, const uint8_t* b, size_t n);

}  // namespace rdma
}  // namespace te4j
