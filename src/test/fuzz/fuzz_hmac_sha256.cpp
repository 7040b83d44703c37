// fuzz_hmac_sha256.cpp — the software NIC's own SHA-256 and HMAC-SHA256 against OpenSSL's.
//
// The NIC authenticates its connections with a hand-written HMAC-SHA256 (so that libte4j needs
// no crypto library to load); this target checks it against libcrypto on fuzzed keys (of every
// length, including longer than a block, which are hashed first) and messages split into up to
// four parts at fuzzed places, and the streaming SHA-256 fed in fuzzed pieces against one-shot
// SHA256(). OpenSSL is linked into this program only.
// Input: byte 0 the key length, bytes 1-3 the part boundaries (fractions of what follows the
// key), then the key, then the message.
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include <cstring>

#include "fuzz_support.h"
#include "rdma/soft/hmac_sha256.h"

using namespace te4j::rdma;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  size_t key_len = data[0];
  const uint8_t* rest = data + 4;
  size_t rest_len = size - 4;
  if (key_len > rest_len) key_len = rest_len;
  const uint8_t* key = rest;
  const uint8_t* msg = rest + key_len;
  const size_t msg_len = rest_len - key_len;

  size_t cut[5] = {0, 0, 0, 0, msg_len};
  for (int i = 1; i <= 3; ++i) cut[i] = msg_len * data[i] / 255;
  for (int i = 1; i <= 3; ++i)
    if (cut[i] < cut[i - 1]) cut[i] = cut[i - 1];
  const void* parts[4];
  size_t lengths[4];
  for (int i = 0; i < 4; ++i) {
    parts[i] = msg + cut[i];
    lengths[i] = cut[i + 1] - cut[i];
  }

  uint8_t mine[kSha256Bytes];
  hmacSha256(key, key_len, parts, lengths, 4, mine);
  uint8_t theirs[EVP_MAX_MD_SIZE];
  unsigned int theirs_len = 0;
  FUZZ_ASSERT(HMAC(EVP_sha256(), key, (int)key_len, msg, msg_len, theirs, &theirs_len) != nullptr);
  FUZZ_ASSERT(theirs_len == kSha256Bytes);
  FUZZ_ASSERT(std::memcmp(mine, theirs, kSha256Bytes) == 0);
  FUZZ_ASSERT(equalConstantTime(mine, theirs, kSha256Bytes));
  if (msg_len > 0) {
    theirs[msg[0] % kSha256Bytes] ^= (uint8_t)(1u << (msg[msg_len - 1] % 8));
    FUZZ_ASSERT(!equalConstantTime(mine, theirs, kSha256Bytes));
  }

  Sha256 s;
  for (int i = 0; i < 4; ++i) s.update(parts[i], lengths[i]);
  s.finish(mine);
  SHA256(msg, msg_len, theirs);
  FUZZ_ASSERT(std::memcmp(mine, theirs, kSha256Bytes) == 0);
  return 0;
}
