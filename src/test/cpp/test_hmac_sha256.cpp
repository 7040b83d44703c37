// test_hmac_sha256.cpp — the software NIC's SHA-256 and HMAC-SHA256 against published vectors:
// FIPS 180-4's SHA-256 examples and the seven HMAC-SHA-256 cases of RFC 4231 (case 5 compares
// the first 128 bits, as the RFC truncates it). The NIC authenticates every connection with
// this code; fuzz_hmac_sha256 compares it with OpenSSL on fuzzed inputs.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "check.h"
#include "rdma/soft/hmac_sha256.h"

using namespace te4j::rdma;

namespace {

std::vector<uint8_t> unhex(const char* hex) {
  std::vector<uint8_t> out;
  for (size_t i = 0; hex[i] != 0 && hex[i + 1] != 0; i += 2) {
    unsigned v = 0;
    std::sscanf(hex + i, "%2x", &v);
    out.push_back((uint8_t)v);
  }
  return out;
}

std::string hex(const uint8_t* p, size_t n) {
  std::string s;
  char b[3];
  for (size_t i = 0; i < n; ++i) {
    std::snprintf(b, sizeof(b), "%02x", p[i]);
    s += b;
  }
  return s;
}

void sha(const std::string& msg, const char* expected, const char* name) {
  uint8_t out[kSha256Bytes];
  Sha256 s;
  s.update(msg.data(), msg.size());
  s.finish(out);
  CHECK(hex(out, sizeof(out)) == expected, "SHA-256 %s: %s", name, hex(out, sizeof(out)).c_str());
  // The same message a byte at a time: the block buffering must not matter.
  Sha256 bytewise;
  for (char c : msg) bytewise.update(&c, 1);
  bytewise.finish(out);
  CHECK(hex(out, sizeof(out)) == expected, "SHA-256 %s byte-wise: %s", name,
        hex(out, sizeof(out)).c_str());
}

void hmac(const std::vector<uint8_t>& key, const std::vector<uint8_t>& data, const char* expected,
          const char* name) {
  uint8_t out[kSha256Bytes];
  const void* parts[] = {data.data()};
  const size_t lengths[] = {data.size()};
  hmacSha256(key.data(), key.size(), parts, lengths, 1, out);
  const size_t n = std::strlen(expected) / 2;
  CHECK(hex(out, n) == expected, "HMAC %s: %s", name, hex(out, n).c_str());
  // Split into three parts: the NIC hashes a label, a nonce and a header as separate parts.
  const size_t a = data.size() / 3, b = 2 * data.size() / 3;
  const void* split[] = {data.data(), data.data() + a, data.data() + b};
  const size_t split_lengths[] = {a, b - a, data.size() - b};
  uint8_t again[kSha256Bytes];
  hmacSha256(key.data(), key.size(), split, split_lengths, 3, again);
  CHECK(std::memcmp(out, again, sizeof(out)) == 0, "HMAC %s in three parts differs", name);
}

std::vector<uint8_t> bytes(const std::string& s) {
  return std::vector<uint8_t>(s.begin(), s.end());
}

}  // namespace

int main() {
  sha("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", "abc");
  sha("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "empty");
  sha("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1", "448 bits");
  sha(std::string(1000000, 'a'), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0",
      "a million a");

  // RFC 4231, section 4.
  hmac(std::vector<uint8_t>(20, 0x0b), bytes("Hi There"),
       "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7", "case 1");
  hmac(bytes("Jefe"), bytes("what do ya want for nothing?"),
       "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843", "case 2");
  hmac(std::vector<uint8_t>(20, 0xaa), std::vector<uint8_t>(50, 0xdd),
       "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe", "case 3");
  hmac(unhex("0102030405060708090a0b0c0d0e0f10111213141516171819"), std::vector<uint8_t>(50, 0xcd),
       "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b", "case 4");
  hmac(std::vector<uint8_t>(20, 0x0c), bytes("Test With Truncation"),
       "a3b6167473100ee06e0c796c2955552b", "case 5 (128 bits)");
  hmac(std::vector<uint8_t>(131, 0xaa),
       bytes("Test Using Larger Than Block-Size Key - Hash Key First"),
       "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54", "case 6");
  hmac(std::vector<uint8_t>(131, 0xaa),
       bytes("This is a test using a larger than block-size key and a larger than block-size data. "
             "The key "
             "needs to be hashed before being used by the HMAC algorithm."),
       "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2", "case 7");

  uint8_t a[4] = {1, 2, 3, 4}, b[4] = {1, 2, 3, 4};
  CHECK(equalConstantTime(a, b, 4), "equal bytes compare unequal");
  b[3] ^= 0x80;
  CHECK(!equalConstantTime(a, b, 4), "a difference in the last byte is missed");
  CHECK(equalConstantTime(a, b, 0), "zero bytes compare unequal");

  if (g_failures != 0) {
    std::fprintf(stderr, "test_hmac_sha256: %d failures\n", g_failures);
    return 1;
  }
  std::printf("test_hmac_sha256: OK (4 SHA-256 vectors, 7 RFC 4231 cases)\n");
  return 0;
}
