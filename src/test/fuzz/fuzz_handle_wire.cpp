// fuzz_handle_wire.cpp — the decoder of IPC handle wire bytes (p2p/handle_blob.h) as
// IpcHandle.fromBytes (P2pTransport::describeHandle) and importPeerHandleBytes receive them from
// other ranks, through an exchange nobody vouches for.
//
// Input: the bytes, whole. Invariants: the decoder reads nothing outside the input (ASan), never
// accepts bytes whose length, magic, version, platform or CRC-32 is wrong, and what it accepts
// encodes back to exactly the same bytes (one owner of the layout); a refusal always says why.
// describeHandle gives the same verdict and refuses output buffers that are too small instead of
// writing past them. The bytes as rank 0's handle of a real import either fail with a reason or
// map exactly the local size (the window is verified and closed).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/crc32.h"
#include "p2p/handle_blob.h"
#include "te4j/api.h"

using namespace te4j;

#define FUZZ_CHECK(cond)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      std::fprintf(stderr, "fuzz_handle_wire: invariant failed: %s\n", #cond); \
      std::abort();                                                            \
    }                                                                          \
  } while (0)

namespace {

constexpr size_t kLocalBytes = 4096;

struct Importer {
  P2pTransport* t = nullptr;
  void* local = nullptr;
};

Importer& importer() {
  static Importer* im = [] {
    Importer* x = new Importer();
    x->t = P2pTransport::create(kPlatformHost, 0, 2);
    FUZZ_CHECK(x->t != nullptr && x->t->status() == kOk);
    FUZZ_CHECK(x->t->allocateBuffer(kLocalBytes, &x->local) == kOk);
    return x;
  }();
  return *im;
}

uint32_t le32(const uint8_t* p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A copy of exactly `size` bytes: ASan then flags any read past the end.
  std::vector<uint8_t> in(data, data + size);
  std::vector<int32_t> words;
  std::string why;
  const bool ok = blob::decodeWire(in.data(), in.size(), &words, &why);
  if (ok) {
    FUZZ_CHECK(blob::encodeWire(words.data(), (int)words.size()) == in);
    FUZZ_CHECK(size == (size_t)blob::wireBytesOf(words[blob::kPlatformAt]));
    FUZZ_CHECK(words[blob::kMagicAt] == blob::kMagic && words[blob::kVersionAt] == blob::kVersion);
    FUZZ_CHECK(crc32(in.data(), size - 4) == le32(in.data() + size - 4));
    FUZZ_CHECK(words[blob::kPidAt] > 0 && (int64_t)blob::sizeOf(words.data()) > 0);
  } else {
    FUZZ_CHECK(!why.empty());
  }
  if (size > (size_t)blob::kMaxWireBytes + 64) return 0;

  int64_t values[P2pTransport::kHandleValues];
  int32_t got[blob::kMaxBlobInts];
  char text[96];
  const int s =
      P2pTransport::describeHandle(in.data(), (int)size, values, P2pTransport::kHandleValues, got,
                                   blob::kMaxBlobInts, text, sizeof(text));
  FUZZ_CHECK(std::strlen(text) < sizeof(text));
  if (ok) {
    FUZZ_CHECK(s == kOk);
    FUZZ_CHECK(values[P2pTransport::kHandleIntsAt] == (int64_t)words.size());
    FUZZ_CHECK(std::memcmp(got, words.data(), sizeof(int32_t) * words.size()) == 0);
    FUZZ_CHECK(values[P2pTransport::kHandleFromThisHostAt] ==
               (blob::isFromThisHost(words.data()) ? 1 : 0));
    // One word short of room: refused, nothing written past it.
    FUZZ_CHECK(P2pTransport::describeHandle(in.data(), (int)size, values,
                                            P2pTransport::kHandleValues, got, (int)words.size() - 1,
                                            text, sizeof(text)) == kInvalidArgument);
  } else {
    FUZZ_CHECK(s == kBadHandle && text[0] != '\0');
  }

  Importer& im = importer();
  const int32_t lengths[2] = {(int32_t)size, 0};
  const int window = im.t->importPeerHandleBytes(im.local, 1, 2, in.data(), lengths, 2, 0x3);
  if (window >= 0) {
    FUZZ_CHECK(ok && blob::sizeOf(words.data()) == kLocalBytes);
    (void)im.t->verifyPeerAccess(window);
    FUZZ_CHECK(im.t->closeWindow(window) == kOk);
  } else {
    FUZZ_CHECK(std::strlen(im.t->lastError()) > 0);
  }
  return 0;
}
