// test_handle_bytes.cpp — native test of the IPC handle wire bytes (p2p/handle_blob.h) and the
// P2pTransport entry points over them (p2p/transport_handle_bytes.cpp), in one process.
//
// Round trip of a real host handle; the shared CRC-32 against its published check value; every
// truncation and every flipped bit refused with the field named; each header field rewritten
// under a valid CRC; oversize and extended bytes; the host identity; describeHandle's output
// bounds; importPeerHandleBytes and mapSegmentBytes between two transports of this process.
// main() returns nonzero when anything failed.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "check.h"
#include "core/crc32.h"
#include "p2p/handle_blob.h"
#include "p2p/host_p2p_transport.h"
#include "te4j/api.h"

namespace {

using te4j::P2pTransport;
namespace blob = te4j::blob;

constexpr uint64_t kSize = 4096;

struct Exported {
  P2pTransport* t = nullptr;
  void* buffer = nullptr;
  std::vector<uint8_t> bytes;
};

Exported exportOne(uint64_t size) {
  Exported e;
  e.t = P2pTransport::create(te4j::kPlatformHost, 0, 2);
  CHECK(e.t != nullptr && e.t->status() == te4j::kOk, "create");
  CHECK(e.t->allocateBuffer(size, &e.buffer) == te4j::kOk, "allocate: %s", e.t->lastError());
  e.bytes.resize((size_t)e.t->handleBytesLength());
  const int n = e.t->exportHandleBytes(e.buffer, e.bytes.data(), (int)e.bytes.size());
  CHECK(n == (int)e.bytes.size(), "exportHandleBytes: %d %s", n, e.t->lastError());
  return e;
}

// The decoder's verdict: "" when accepted, else its reason.
std::string refusal(const std::vector<uint8_t>& bytes) {
  std::vector<int32_t> words;
  std::string why;
  return blob::decodeWire(bytes.data(), bytes.size(), &words, &why) ? std::string() : why;
}

void expectRefused(const std::vector<uint8_t>& bytes, const char* field, const char* what) {
  const std::string why = refusal(bytes);
  CHECK(!why.empty(), "%s: accepted", what);
  CHECK(why.find(field) != std::string::npos, "%s: the refusal should name %s: %s", what, field,
        why.c_str());
}

std::vector<int32_t> wordsOf(const std::vector<uint8_t>& bytes) {
  std::vector<int32_t> words;
  std::string why;
  CHECK(blob::decodeWire(bytes.data(), bytes.size(), &words, &why), "decode: %s", why.c_str());
  return words;
}

std::vector<uint8_t> withWord(const std::vector<uint8_t>& bytes, int word, int32_t value) {
  std::vector<int32_t> w = wordsOf(bytes);
  w[(size_t)word] = value;
  return blob::encodeWire(w.data(), (int)w.size());
}

void runCrc() {
  const char* text = "123456789";
  CHECK(te4j::crc32(reinterpret_cast<const uint8_t*>(text), 9) == 0xcbf43926u,
        "CRC-32 check value");
  CHECK(te4j::crc32(nullptr, 0) == 0, "CRC-32 of nothing");
}

void runRoundTrip(const Exported& e) {
  const std::vector<uint8_t>& b = e.bytes;
  CHECK(b.size() == 4 * (size_t)te4j::kHostHandleInts + 4, "host wire length %zu", b.size());
  CHECK(std::memcmp(b.data(), "TE4J", 4) == 0, "the bytes start with the magic");
  const uint32_t crc = te4j::crc32(b.data(), b.size() - 4);
  const uint8_t* t = b.data() + b.size() - 4;
  CHECK(crc == ((uint32_t)t[0] | (uint32_t)t[1] << 8 | (uint32_t)t[2] << 16 | (uint32_t)t[3] << 24),
        "little-endian CRC trailer");
  const std::vector<int32_t> w = wordsOf(b);
  CHECK(w.size() == (size_t)te4j::kHostHandleInts, "words %zu", w.size());
  CHECK(blob::encodeWire(w.data(), (int)w.size()) == b, "decode then encode gives the same bytes");
  CHECK(blob::sizeOf(w.data()) == kSize && w[blob::kPidAt] > 0, "size and pid");
  CHECK(blob::isFromThisHost(w.data()), "own handle is from this host");
  std::vector<int32_t> foreign = w;
  foreign[blob::kHostIdAt + 2] ^= 0x100;
  CHECK(!blob::isFromThisHost(foreign.data()), "another host identity");
  CHECK(refusal(blob::encodeWire(foreign.data(), (int)foreign.size())).empty(),
        "a foreign handle is well formed");
}

void runCorruptions(const Exported& e) {
  const std::vector<uint8_t>& b = e.bytes;
  CHECK(!refusal({}).empty(), "empty");
  std::vector<int32_t> none;
  std::string why;
  CHECK(!blob::decodeWire(nullptr, 64, &none, &why) && !why.empty(), "null bytes");
  for (size_t len = 0; len < b.size(); ++len) {
    expectRefused(std::vector<uint8_t>(b.begin(), b.begin() + (long)len), "length", "truncated");
  }
  for (size_t bit = 0; bit < 8 * b.size(); ++bit) {
    std::vector<uint8_t> c = b;
    c[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    expectRefused(c,
                  bit < 32   ? "magic"
                  : bit < 64 ? "version"
                  : bit < 96 ? "platform"
                             : "crc32",
                  "one flipped bit");
  }
  expectRefused(withWord(b, blob::kMagicAt, 0x54453448), "magic", "another te4j magic");
  expectRefused(withWord(b, blob::kVersionAt, 2), "version", "a newer version");
  expectRefused(withWord(b, blob::kPlatformAt, 5), "platform", "an unknown platform");
  expectRefused(withWord(b, blob::kPlatformAt, te4j::kPlatformCuda), "length",
                "a CUDA platform word on a host-length blob");
  expectRefused(withWord(b, blob::kPidAt, 0), "pid", "pid 0");
  expectRefused(withWord(b, blob::kPidAt, -5), "pid", "a negative pid");
  std::vector<int32_t> w = wordsOf(b);
  w[blob::kSizeLoAt] = 0;
  w[blob::kSizeHiAt] = 0;
  expectRefused(blob::encodeWire(w.data(), (int)w.size()), "size", "size 0");
  expectRefused(withWord(b, blob::kSizeHiAt, -1), "size", "a negative size");
  expectRefused(std::vector<uint8_t>(blob::kMaxWireBytes + 4, 0), "oversize", "oversize");
  std::vector<uint8_t> odd = b;
  odd.push_back(0);
  expectRefused(odd, "length", "not whole words");
  std::vector<int32_t> longer = wordsOf(b);
  longer.push_back(0);
  expectRefused(blob::encodeWire(longer.data(), (int)longer.size()), "length", "one word more");
}

void runDescribe(const Exported& e) {
  const std::vector<uint8_t>& b = e.bytes;
  int64_t v[P2pTransport::kHandleValues] = {};
  int32_t words[blob::kMaxBlobInts] = {};
  char why[128];
  CHECK(P2pTransport::describeHandle(b.data(), (int)b.size(), v, P2pTransport::kHandleValues, words,
                                     blob::kMaxBlobInts, why, sizeof(why)) == te4j::kOk,
        "describe: %s", why);
  CHECK(v[P2pTransport::kHandlePlatformAt] == te4j::kPlatformHost, "platform");
  CHECK(v[P2pTransport::kHandleSizeAt] == (int64_t)kSize, "size");
  CHECK(v[P2pTransport::kHandlePidAt] == (int64_t)getpid(), "pid");
  CHECK(v[P2pTransport::kHandleFromThisHostAt] == 1, "from this host");
  CHECK(v[P2pTransport::kHandleIntsAt] == te4j::kHostHandleInts, "ints");
  CHECK(words[blob::kMagicAt] == blob::kMagic, "words");
  // Output buffers too small are refused, not overrun; the reason fits any why buffer.
  CHECK(P2pTransport::describeHandle(b.data(), (int)b.size(), v, P2pTransport::kHandleValues - 1,
                                     nullptr, 0, why, sizeof(why)) == te4j::kInvalidArgument,
        "values capacity");
  CHECK(P2pTransport::describeHandle(b.data(), (int)b.size(), v, P2pTransport::kHandleValues, words,
                                     3, why, sizeof(why)) == te4j::kInvalidArgument,
        "words capacity");
  CHECK(P2pTransport::describeHandle(b.data(), (int)b.size(), v, P2pTransport::kHandleValues,
                                     nullptr, 0, why, sizeof(why)) == te4j::kOk,
        "no words wanted");
  char tiny[8];
  std::vector<uint8_t> c = b;
  c[40] ^= 1;
  CHECK(P2pTransport::describeHandle(c.data(), (int)c.size(), v, P2pTransport::kHandleValues,
                                     nullptr, 0, tiny, sizeof(tiny)) == te4j::kBadHandle,
        "corrupt");
  CHECK(std::strlen(tiny) == sizeof(tiny) - 1, "reason truncated to the buffer");
  CHECK(P2pTransport::describeHandle(b.data(), -1, v, P2pTransport::kHandleValues, nullptr, 0, why,
                                     sizeof(why)) == te4j::kInvalidArgument,
        "negative length");
  uint8_t out[16];
  const std::vector<int32_t> w = wordsOf(b);
  CHECK(P2pTransport::encodeHandleWords(w.data(), (int)w.size(), out, sizeof(out)) ==
            te4j::kInvalidArgument,
        "encode into too small a buffer");
  CHECK(P2pTransport::encodeHandleWords(nullptr, 3, out, sizeof(out)) == te4j::kInvalidArgument,
        "encode no words");
}

void runImportAndMap(const Exported& owner) {
  Exported importer = exportOne(kSize);
  P2pTransport* t = importer.t;
  // Rank 1 imports rank 0 (owner); its own entry is empty.
  std::vector<uint8_t> all = owner.bytes;
  int32_t lengths[2] = {(int32_t)owner.bytes.size(), 0};
  const int window = t->importPeerHandleBytes(importer.buffer, 1, 2, all.data(), lengths, 2, 3);
  CHECK(window >= 0, "import: %s", t->lastError());
  if (window >= 0) {
    CHECK(t->verifyPeerAccess(window) == te4j::kOk, "verify: %s", t->lastError());
    CHECK(t->closeWindow(window) == te4j::kOk, "close window");
  }
  std::vector<uint8_t> bad = all;
  bad[30] ^= 0x10;
  CHECK(t->importPeerHandleBytes(importer.buffer, 1, 2, bad.data(), lengths, 2, 3) ==
            te4j::kBadHandle,
        "a corrupt peer handle");
  const std::string why = t->lastError();
  CHECK(why.find("rank 0") != std::string::npos && why.find("crc32") != std::string::npos,
        "the refusal names rank and field: %s", why.c_str());
  CHECK(t->importPeerHandleBytes(importer.buffer, 1, 2, all.data(), nullptr, 2, 3) ==
            te4j::kInvalidArgument,
        "no lengths");
  CHECK(t->importPeerHandleBytes(importer.buffer, 1, 2, all.data(), lengths, 1, 3) ==
            te4j::kInvalidArgument,
        "lengths of the wrong count");
  int32_t negative[2] = {-1, 0};
  CHECK(t->importPeerHandleBytes(importer.buffer, 1, 2, all.data(), negative, 2, 3) ==
            te4j::kInvalidArgument,
        "a negative length");
  CHECK(t->importPeerHandleBytes(importer.buffer, 1, 2, nullptr, lengths, 2, 3) ==
            te4j::kInvalidArgument,
        "null bytes");
  CHECK(t->importPeerHandleBytes(importer.buffer, 1, 0, all.data(), lengths, 0, 3) ==
            te4j::kInvalidArgument,
        "num_ranks 0");
  // Only the own rank active: nothing is read.
  int32_t empty[2] = {0, 0};
  const int alone = t->importPeerHandleBytes(importer.buffer, 1, 2, nullptr, empty, 2, 2);
  CHECK(alone >= 0, "own rank only: %s", t->lastError());
  if (alone >= 0) t->closeWindow(alone);
  // A peer buffer of another size, as a transfer agent maps segments.
  Exported big = exportOne(3 * kSize);
  void* base = nullptr;
  uint64_t size = 0;
  CHECK(t->mapSegmentBytes(big.bytes.data(), (int)big.bytes.size(), &base, &size) == te4j::kOk,
        "map: %s", t->lastError());
  CHECK(base != nullptr && size == 3 * kSize, "mapped %llu bytes", (unsigned long long)size);
  if (base != nullptr) CHECK(t->unmapSegment(base) == te4j::kOk, "unmap");
  bad = big.bytes;
  bad.resize(bad.size() - 4);
  CHECK(t->mapSegmentBytes(bad.data(), (int)bad.size(), &base, &size) == te4j::kBadHandle,
        "map a truncated handle");
  CHECK(t->mapSegmentBytes(bad.data(), -1, &base, &size) == te4j::kInvalidArgument,
        "map a negative length");
  for (Exported* e : {&importer, &big}) {
    e->t->freeBuffer(e->buffer);
    te4j::destroyObject(e->t);
  }
}

}  // namespace

int main() {
  runCrc();
  Exported owner = exportOne(kSize);
  runRoundTrip(owner);
  runCorruptions(owner);
  runDescribe(owner);
  runImportAndMap(owner);
  owner.t->freeBuffer(owner.buffer);
  te4j::destroyObject(owner.t);
  std::printf(g_failures == 0 ? "test_handle_bytes: OK\n" : "test_handle_bytes: %d FAILED\n",
              g_failures);
  return g_failures == 0 ? 0 : 1;
}
