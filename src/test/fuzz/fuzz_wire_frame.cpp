// fuzz_wire_frame.cpp — the software NIC's TCP frames as a responder reads them.
//
// Input: the bytes a connection delivers, in order. The first 80 are the HELLO the acceptor
// reads (header + MAC), checked as the acceptor does (decodeFrame, type, HMAC with the fixed
// key and nonce of fuzz_support.h); the rest are request frames, taken as the responder loop
// takes them: decodeFrame on each 48-byte header, then for a WRITE its payload placed through
// the host memory port after the region table's check, for a masked fetch-and-add the
// alignment and region checks and the atomic. A connection that sends a bad frame, or ends
// inside one, is closed: the loop stops there. Every request's RESPONSE is encoded and decoded
// again. Invariants: decodeFrame accepts only what encodeFrame can write back byte for byte
// (the reserved word aside), never a length its type does not allow; nothing outside a
// registered region is touched (guard pages fault).
#include <cstring>
#include <memory>
#include <shared_mutex>

#include "fuzz_support.h"
#include "rdma/memory_port.h"
#include "rdma/soft/hmac_sha256.h"
#include "rdma/soft/wire_format.h"

using namespace te4j::rdma;
namespace fz = te4j::fuzz;

namespace {

MemoryPort& port() {
  static MemoryPort* p = makeHostMemoryPort().release();
  return *p;
}

void checkRoundTrip(const uint8_t* header, const Frame& f) {
  uint8_t again[kFrameHeaderBytes];
  encodeFrame(f, again);
  FUZZ_ASSERT(std::memcmp(again, header, 44) == 0);
  FUZZ_ASSERT(f.type >= kFrameHello && f.type <= kFrameRead);
  // A RESPONSE may carry a READ's bytes; the requester checks the count against its READ.
  if (f.type == kFrameWrite || f.type == kFrameResponse) FUZZ_ASSERT(f.length <= kMaxFramePayload);
  if (f.type == kFrameMaskedFa32 || f.type == kFrameRead) FUZZ_ASSERT(f.length == 0);
  if (f.type == kFrameHello || f.type == kFrameHelloAck) FUZZ_ASSERT(f.length == kMacBytes);
  if (f.type == kFrameChallenge) FUZZ_ASSERT(f.length == kNonceBytes);
}

// The acceptor's check of a HELLO: well formed, of type HELLO, and proving the key.
bool helloAccepted(const uint8_t* hello) {
  Frame f;
  const char* why = "";
  if (!decodeFrame(hello, &f, &why)) {
    FUZZ_ASSERT(why != nullptr && *why != 0);
    return false;
  }
  checkRoundTrip(hello, f);
  if (f.type != kFrameHello) return false;
  static const char kLabel[] = "te4j-nic-hello";
  const void* parts[] = {kLabel, fz::kNonce, hello};
  const size_t lengths[] = {sizeof(kLabel) - 1, kNonceBytes, kFrameHeaderBytes};
  uint8_t mac[kMacBytes];
  hmacSha256(fz::kKey, sizeof(fz::kKey), parts, lengths, 3, mac);
  return equalConstantTime(mac, hello + kFrameHeaderBytes, kMacBytes);
}

// One request: returns the bytes it consumed, 0 when the responder would close the connection.
size_t serveOne(const uint8_t* p, size_t n, uint32_t* requests) {
  if (n < kFrameHeaderBytes) return 0;
  Frame f;
  const char* why = "";
  if (!decodeFrame(p, &f, &why)) return 0;
  checkRoundTrip(p, f);
  if (f.type != kFrameWrite && f.type != kFrameMaskedFa32) return 0;
  size_t used = kFrameHeaderBytes;
  fz::Arena& a = fz::arena();
  uint8_t syndrome = 0;
  uint32_t old_value = 0;
  std::string err;
  std::shared_lock<std::shared_mutex> hold;
  if (f.type == kFrameWrite) {
    if (n - used < f.length) return 0;  // the connection ends inside the payload
    if (a.regions.checkAndHold(f.rkey, f.raddr, f.length, kAccessRemoteWrite, &hold)) {
      FUZZ_ASSERT(port().write(f.raddr, p + used, f.length, &err) == 0);
    } else {
      syndrome = 0x13;
    }
    used += f.length;
  } else {
    if ((f.raddr & 3u) != 0) syndrome = 0x12;
    if (syndrome == 0 && !a.regions.checkAndHold(f.rkey, f.raddr, 4, kAccessRemoteAtomic, &hold))
      syndrome = 0x13;
    if (syndrome == 0) {
      FUZZ_ASSERT(port().fetchAddMasked32(f.raddr, f.arg0, f.arg1, &old_value, &err) == 0);
    }
  }
  if (hold.owns_lock()) hold.unlock();
  Frame resp;
  resp.type = kFrameResponse;
  resp.src_qpn = f.src_qpn;
  resp.dst_qpn = f.dst_qpn;
  resp.seq = f.seq;
  resp.arg0 = syndrome;
  resp.arg1 = old_value;
  uint8_t wire[kFrameHeaderBytes];
  encodeFrame(resp, wire);
  Frame back;
  FUZZ_ASSERT(decodeFrame(wire, &back, &why));
  FUZZ_ASSERT(back.type == kFrameResponse && back.seq == f.seq && back.arg0 == syndrome &&
              back.arg1 == old_value && back.length == 0);
  ++*requests;
  return used;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr size_t kHello = kFrameHeaderBytes + kMacBytes;
  const bool accepted = size >= kHello && helloAccepted(data);
  // The requests are fuzzed whatever the HELLO: a rank of the job (which knows the key) may send
  // anything afterwards.
  size_t at = size >= kHello ? kHello : 0;
  uint32_t requests = 0;
  while (at < size) {
    const size_t used = serveOne(data + at, size - at, &requests);
    if (used == 0) break;
    at += used;
  }
  // Replaying one input with TE4J_FUZZ_VERBOSE=1 says what became of it.
  static const bool verbose = std::getenv("TE4J_FUZZ_VERBOSE") != nullptr;
  if (verbose)
    std::fprintf(stderr, "hello %s, %u requests served\n", accepted ? "accepted" : "refused",
                 requests);
  return 0;
}
