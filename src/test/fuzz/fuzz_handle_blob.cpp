// fuzz_handle_blob.cpp — host-platform IPC handles as importPeerHandles receives them from
// other ranks (through an exchange nobody vouches for).
//
// Input: byte 0 the rank, byte 1 the num_ranks argument (the transport has 4), byte 2 the
// active mask, byte 3 the buffer size class; then, for each rank, a byte of choices and
// 15 words. The choice bits replace groups of the fuzzed words with those of a real handle:
// the header (magic, version, platform, pid, size, host identity), the fd, the token; the real
// handle is another transport's segment of this process, or the importer's own buffer. Without
// them the fuzzer could not learn the pid, host identity and tokens, which change every run, and
// would never get past the header check into mapping. The window made, if any, is verified and
// closed; the importing transport is made fresh for every input, so nothing carries over.
// Also checkHeader alone on the first blob, with a fuzzed platform and expected size.
// Invariants: a header check that passes means the fields are the expected ones; an import
// that succeeds maps exactly the local size (verifyPeerAccess touches both ends).
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "fuzz_support.h"
#include "p2p/handle_blob.h"
#include "p2p/host_p2p_transport.h"
#include "te4j/api.h"

using namespace te4j;
namespace fz = te4j::fuzz;

namespace {

constexpr int kRanks = 4;
constexpr size_t kSizes[4] = {4096, 8192, 4096 * 3, 100};

struct Exporter {
  P2pTransport* t = nullptr;
  int32_t handle[4][kHostHandleInts] = {};  // one segment per size class
};

Exporter& exporter() {
  static Exporter* e = [] {
    Exporter* x = new Exporter();
    x->t = P2pTransport::create(kPlatformHost, 0, kRanks);
    FUZZ_ASSERT(x->t != nullptr && x->t->status() == kOk);
    for (int i = 0; i < 4; ++i) {
      void* p = nullptr;
      FUZZ_ASSERT(x->t->allocateBuffer(kSizes[i], &p) == kOk);
      FUZZ_ASSERT(x->t->exportIpcHandle(p, x->handle[i], kHostHandleInts) == kHostHandleInts);
    }
    return x;
  }();
  return *e;
}

struct Importer {
  P2pTransport* t = nullptr;
  ~Importer() { destroyObject(t); }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fz::Bytes in{data, size};
  const int rank = (int)(in.u8() % (kRanks + 1));  // one past the end included
  const uint8_t ranks_byte = in.u8();
  const int num_ranks = ranks_byte < 200 ? kRanks : (int)(ranks_byte - 200) - 1;  // -1 .. 54
  const uint64_t mask = in.u8() & 0x1f;  // bit 4: a rank past num_ranks
  const int size_class = in.u8() & 3;
  const size_t bytes = kSizes[size_class];

  Exporter& ex = exporter();
  Importer im;
  im.t = P2pTransport::create(kPlatformHost, 0, kRanks);
  FUZZ_ASSERT(im.t != nullptr && im.t->status() == kOk);
  void* local = nullptr;
  FUZZ_ASSERT(im.t->allocateBuffer(bytes, &local) == kOk);
  int32_t own[kHostHandleInts];
  FUZZ_ASSERT(im.t->exportIpcHandle(local, own, kHostHandleInts) == kHostHandleInts);

  const int rows = num_ranks > 0 ? num_ranks : 1;
  std::vector<int32_t> blobs((size_t)rows * kHostHandleInts);
  for (int r = 0; r < rows; ++r) {
    const uint8_t choice = in.u8();
    int32_t* b = blobs.data() + (size_t)r * kHostHandleInts;
    for (int i = 0; i < kHostHandleInts; ++i) b[i] = (int32_t)in.u32();
    const int32_t* real = (choice & 8) ? own : ex.handle[(choice >> 4) & 3];
    if (choice & 1) std::memcpy(b, real, sizeof(int32_t) * blob::kHeaderInts);
    if (choice & 2) b[kHostFdAt] = real[kHostFdAt];
    if (choice & 4) std::memcpy(b + kHostTokenAt, real + kHostTokenAt, sizeof(int32_t) * 4);
  }

  std::string why;
  const int platform = (int)(in.u8() % 3);
  const uint64_t expected = in.u8() < 128 ? bytes : in.u64();
  if (blob::checkHeader(blobs.data(), platform, 0, expected, &why) == kOk) {
    FUZZ_ASSERT(blobs[blob::kMagicAt] == blob::kMagic && blobs[blob::kPlatformAt] == platform);
    FUZZ_ASSERT(blob::sizeOf(blobs.data()) == expected && blobs[blob::kPidAt] > 0);
  } else {
    FUZZ_ASSERT(!why.empty());
  }

  const int window = im.t->importPeerHandles(local, rank, num_ranks, blobs.data(), mask);
  // Replaying one input with TE4J_FUZZ_VERBOSE=1 says what became of it.
  static const bool verbose = std::getenv("TE4J_FUZZ_VERBOSE") != nullptr;
  if (verbose)
    std::fprintf(stderr, "import: %d %s\n", window, window >= 0 ? "" : im.t->lastError());
  if (window >= 0) {
    FUZZ_ASSERT(rank >= 0 && rank < kRanks && num_ranks == kRanks);
    // Touches the first and last word of every mapping: a mapping shorter than the window
    // would fault here.
    (void)im.t->verifyPeerAccess(window);
    FUZZ_ASSERT(im.t->closeWindow(window) == kOk);
  } else {
    FUZZ_ASSERT(std::strlen(im.t->lastError()) > 0);
  }
  FUZZ_ASSERT(im.t->freeBuffer(local) == kOk);
  return 0;
}
