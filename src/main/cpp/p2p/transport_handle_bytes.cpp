// transport_handle_bytes.cpp — P2pTransport's handle wire bytes: this rank's export, the
// read-only description the Java view is built from, and imports and mappings from the bytes
// peers sent. The bytes' layout and checks live in handle_blob.h; the platforms' transports see
// only blob words, through their existing exportIpcHandle / importPeerHandles / mapSegment.
#include <cstring>
#include <string>
#include <vector>

#include "core/copy_text.h"
#include "p2p/handle_blob.h"
#include "p2p/host_p2p_transport.h"
#include "te4j/api.h"

namespace te4j {
static_assert(kHostHandleInts == blob::kHostBlobInts, "host blob length: one definition");

int P2pTransport::describeHandle(const uint8_t* bytes, int length, int64_t* out, int capacity,
                                 int32_t* words, int words_capacity, char* why, int why_capacity) {
  if (length < 0) {
    copyText("IPC handle length is negative", why, why_capacity);
    return kInvalidArgument;
  }
  std::vector<int32_t> w;
  std::string reason;
  if (!blob::decodeWire(bytes, (size_t)length, &w, &reason)) {
    copyText(reason, why, why_capacity);
    return kBadHandle;
  }
  if (out == nullptr || capacity < kHandleValues || words_capacity < 0 ||
      (words == nullptr && words_capacity > 0)) {
    copyText("describeHandle: room for " + std::to_string(kHandleValues) + " values needed", why,
             why_capacity);
    return kInvalidArgument;
  }
  out[kHandlePlatformAt] = w[blob::kPlatformAt];
  out[kHandleSizeAt] = (int64_t)blob::sizeOf(w.data());
  out[kHandlePidAt] = w[blob::kPidAt];
  out[kHandleFromThisHostAt] = blob::isFromThisHost(w.data()) ? 1 : 0;
  out[kHandleIntsAt] = (int64_t)w.size();
  if (words_capacity > 0) {
    if (words_capacity < (int)w.size()) {
      copyText("describeHandle: room for " + std::to_string(w.size()) + " words needed", why,
               why_capacity);
      return kInvalidArgument;
    }
    std::memcpy(words, w.data(), sizeof(int32_t) * w.size());
  }
  copyText("", why, why_capacity);
  return kOk;
}

int P2pTransport::encodeHandleWords(const int32_t* words, int count, uint8_t* out, int capacity) {
  if (words == nullptr || count <= 0 || count > blob::kMaxBlobInts) return kInvalidArgument;
  const std::vector<uint8_t> bytes = blob::encodeWire(words, count);
  if (out == nullptr || capacity < (int)bytes.size()) return kInvalidArgument;
  std::memcpy(out, bytes.data(), bytes.size());
  return (int)bytes.size();
}

int P2pTransport::handleBytesLength() const { return 4 * handleInts() + blob::kCrcBytes; }

int P2pTransport::exportHandleBytes(void* ptr, uint8_t* out, int capacity) {
  const int need = handleBytesLength();
  if (out == nullptr || capacity < need)
    return fail(kInvalidArgument, "exportHandleBytes: capacity " + std::to_string(capacity) +
                                      " below " + std::to_string(need) + " bytes");
  std::vector<int32_t> words((size_t)handleInts());
  const int n = exportIpcHandle(ptr, words.data(), (int)words.size());
  if (n < 0) return n;
  const std::vector<uint8_t> bytes = blob::encodeWire(words.data(), n);
  if ((int)bytes.size() > capacity)
    return fail(kIllegalState, "exportHandleBytes: the transport wrote " + std::to_string(n) +
                                   " words, more than its " + std::to_string(handleInts()));
  std::memcpy(out, bytes.data(), bytes.size());
  return (int)bytes.size();
}

int P2pTransport::importPeerHandleBytes(void* local_ptr, int rank, int num_ranks,
                                        const uint8_t* all, const int32_t* lengths, int num_entries,
                                        uint64_t active_ranks_mask) {
  if (num_ranks < 1 || num_ranks > blob::kMaxRanks)
    return fail(kInvalidArgument, "importPeerHandles: num_ranks " + std::to_string(num_ranks) +
                                      " is outside 1.." + std::to_string(blob::kMaxRanks));
  if (num_entries != num_ranks || lengths == nullptr)
    return fail(kInvalidArgument, "importPeerHandles: " + std::to_string(num_entries) +
                                      " handle lengths for " + std::to_string(num_ranks) +
                                      " ranks");
  std::vector<size_t> at((size_t)num_ranks + 1, 0);
  for (int r = 0; r < num_ranks; ++r) {
    if (lengths[r] < 0)
      return fail(kInvalidArgument,
                  "importPeerHandles: handle length of rank " + std::to_string(r) + " is negative");
    at[(size_t)r + 1] = at[(size_t)r] + (size_t)lengths[r];
  }
  if (all == nullptr && at[(size_t)num_ranks] != 0)
    return fail(kInvalidArgument, "importPeerHandles: the handle bytes are null");
  const int ints = handleInts();
  std::vector<int32_t> flat((size_t)num_ranks * (size_t)ints, 0);
  std::vector<int32_t> words;
  std::string why;
  for (int r = 0; r < num_ranks; ++r) {
    if (r == rank || !blob::isActive(active_ranks_mask, r)) continue;
    const std::string who = "handle of rank " + std::to_string(r) + ": ";
    if (!blob::decodeWire(all + at[(size_t)r], (size_t)lengths[r], &words, &why))
      return fail(kBadHandle, who + why);
    if (words[blob::kPlatformAt] != platform() || (int)words.size() != ints)
      return fail(kBadHandle, who + "field platform is " +
                                  std::to_string(words[blob::kPlatformAt]) +
                                  ", this transport is platform " + std::to_string(platform()) +
                                  " (0 = host, 1 = cuda): all ranks must use the same platform");
    std::memcpy(flat.data() + (size_t)r * ints, words.data(), sizeof(int32_t) * (size_t)ints);
  }
  return importPeerHandles(local_ptr, rank, num_ranks, flat.data(), active_ranks_mask);
}

int P2pTransport::mapSegmentBytes(const uint8_t* bytes, int length, void** base, uint64_t* size) {
  if (length < 0) return fail(kInvalidArgument, "mapSegment: handle length is negative");
  std::vector<int32_t> words;
  std::string why;
  if (!blob::decodeWire(bytes, (size_t)length, &words, &why))
    return fail(kBadHandle, "mapSegment: " + why);
  return mapSegment(words.data(), (int)words.size(), base, size);
}

}  // namespace te4j
