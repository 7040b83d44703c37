// fuzz_metadata_codec.cpp — the decoder of RDMA metadata bytes (rdma/metadata_codec.h) as
// connectMetadata and the Java view (RdmaTransport::describeMetadata) receive them from other
// ranks, through an exchange nobody vouches for.
//
// Input: the bytes, whole. Invariants: the decoder reads nothing outside the input (ASan), never
// accepts bytes whose checksum, length, magic or version is wrong, and what it accepts encodes
// back to exactly the same bytes (one owner of the layout: decode and encode agree); a refusal
// always says why. describeMetadata gives the same verdict as the decoder, and refuses output
// buffers that are too small instead of writing past them.
#include <cstring>
#include <string>
#include <vector>

#include "core/crc32.h"
#include "rdma/metadata_codec.h"
#include "te4j/rdma_api.h"

using namespace te4j;

#define FUZZ_CHECK(cond)                                                          \
  do {                                                                            \
    if (!(cond)) {                                                                \
      std::fprintf(stderr, "fuzz_metadata_codec: invariant failed: %s\n", #cond); \
      std::abort();                                                               \
    }                                                                             \
  } while (0)

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A copy of exactly `size` bytes: ASan then flags any read past the end.
  std::vector<uint8_t> in(data, data + size);
  rdma::PeerMetadata m;
  std::string why;
  const bool ok = rdma::decodeMetadata(in.data(), in.size(), &m, &why);
  if (ok) {
    FUZZ_CHECK(rdma::encodeMetadata(m) == in);
    FUZZ_CHECK(size >= rdma::kMetadataHeaderBytes + 8);
    FUZZ_CHECK(m.qpns.size() == (size_t)m.num_ranks * m.qps_per_rank);
    FUZZ_CHECK(te4j::crc32(in.data(), size - 4) ==
               ((uint32_t)in[size - 4] << 24 | (uint32_t)in[size - 3] << 16 |
                (uint32_t)in[size - 2] << 8 | in[size - 1]));
  } else {
    FUZZ_CHECK(!why.empty());
  }
  if (size > (size_t)INT32_MAX) return 0;
  std::vector<int64_t> values(RdmaTransport::kMetadataValues + rdma::kMaxMetadataQpns);
  uint8_t key[rdma::kMetadataKeyBytes];
  char text[256];
  const int n =
      RdmaTransport::describeMetadata(in.data(), (int)size, values.data(), (int)values.size(), key,
                                      sizeof(key), text, sizeof(text));
  FUZZ_CHECK((n > 0) == ok);
  FUZZ_CHECK(std::strlen(text) < sizeof(text));
  if (ok) {
    FUZZ_CHECK(n == RdmaTransport::kMetadataValues + (int)m.qpns.size());
    std::vector<uint8_t> again(size);
    FUZZ_CHECK(RdmaTransport::encodeMetadataValues(values.data(), n, key, (int)m.key.size(),
                                                   again.data(), (int)again.size()) == (int)size);
    FUZZ_CHECK(again == in);
    // One value short of room: refused, nothing written past it.
    std::vector<int64_t> small((size_t)n - 1);
    FUZZ_CHECK(RdmaTransport::describeMetadata(in.data(), (int)size, small.data(), n - 1, key,
                                               sizeof(key), text,
                                               sizeof(text)) == kInvalidArgument);
  } else {
    FUZZ_CHECK(n == kBadHandle && text[0] != '\0');
  }
  return 0;
}
