// fuzz_batch_descriptors.cpp — the descriptors of a transfer batch as the Java layer writes them
// into the batch's slots (te4j::BatchDescriptor: opcode, route, local address, remote address,
// length, keys) or hands them over as four arrays, the batch's part/state bookkeeping around them,
// and the CUDA batch's cutting of copies into kernel chunks (batch/batch_descriptors.h, host code).
//
// Input: byte 0 the platform (host, CUDA: unavailable in this host-only build, an unknown
// one), byte 1 the capacity class (1..64, 0, -1, one past the maximum), then a chunking
// section (up to 8 copy lengths, each with a class byte: small, at the per-copy chunk limit,
// 2^40, over 2^40, 0, huge; a max_chunks class), then up to 24 commands: submit (a count, an
// optional wrong `first`, and per request a choice byte; a count byte >= 128 writes the slots in
// place and adds a route byte per request), states (fuzzed range), wait (0-7 ms; a byte >= 128
// also attaches a null RdmaTransport, which must be refused, and reads completion words), cancel.
// Routes: mapped, lost (final at submit as kPeerLost, its bytes untouched), an RDMA rank (refused:
// no RdmaTransport is attached), or a value that is no route (refused).
// Addresses: a request's local address lies in page L and its remote in page R of the fixed
// arena (both behind guard pages, so a copy one byte outside faults), or is null, or sits just
// below 2^64 with a length that makes it wrap. A length "fits" (1 .. what is left of the page
// after both offsets), is 0, is just over 2^40, or is huge. The Java layer only ever passes
// fitting descriptors; everything else must be refused by the native re-check, naming the
// request, and must leave the batch usable.
// Invariants: a submit succeeds exactly when its part follows the submitted requests within
// capacity, the batch is not cancelled and every descriptor is valid; a refused submit changes
// nothing; states() accepts exactly the ranges inside the capacity and writes only `count`
// words; after the final wait every submitted request is COMPLETED or TIMEOUT (TIMEOUT only
// after a cancel, never followed by a COMPLETED: the host worker runs requests in order), and
// pages L and R hold exactly what applying the COMPLETED requests in order to a copy gives.
// A batch made with a bad platform or capacity refuses every call with its status.
#include <climits>
#include <cstring>
#include <string>
#include <vector>

#include "batch/batch_descriptors.h"
#include "fuzz_support.h"
#include "te4j/batch_api.h"

using namespace te4j;
namespace fz = te4j::fuzz;
namespace bt = te4j::batch;

namespace {

// Pages L and R: region A's page and region B's page of the arena (fuzz_support.h), both
// readable and writable, each between guard pages.
constexpr uint64_t kPageL = fz::kRegionA;
constexpr uint64_t kPageR = fz::kArenaBase + 3 * fz::kPage;
constexpr uint64_t kPageBytes = fz::kPage;

struct Submitted {
  int32_t opcode;
  uint64_t local_off;
  uint64_t remote_off;
  uint64_t length;
  bool lost;
};

struct Desc {
  int32_t opcode;
  int32_t route;
  uint64_t local;
  uint64_t remote;
  uint64_t length;
  uint32_t lkey;
  uint32_t rkey;
  bool valid;
  uint64_t local_off;
  uint64_t remote_off;
};

// A route for an in-place descriptor: mostly mapped; lost is valid whatever the rest holds (it
// is never run), a rank and a non-route are refused (no RdmaTransport is attached here).
void pickRoute(fz::Bytes& in, Desc* d) {
  const uint8_t r = in.u8();
  d->lkey = in.u8() % 2 ? 0 : 0x1234u;
  d->rkey = in.u8() % 2 ? 0 : 0x5678u;
  switch (r % 8) {
    case 5:
      d->route = kRoutePeerLost;
      d->valid = true;
      break;
    case 6:
      d->route = (int32_t)(r >> 4);
      d->valid = false;
      break;
    case 7:
      d->route = r & 16 ? INT32_MIN : -3 - (int32_t)(r >> 5);
      d->valid = false;
      break;
    default: d->route = kRouteMapped; break;
  }
}

Desc makeDescriptor(fz::Bytes& in) {
  const uint8_t c = in.u8();
  Desc d{};
  const int op_class = c & 3;  // 0 READ, 1 WRITE, 2 WRITE, 3 a raw opcode
  d.opcode = op_class == 0 ? bt::kOpRead : op_class < 3 ? bt::kOpWrite : (int32_t)in.u32();
  const bool op_ok = d.opcode == bt::kOpRead || d.opcode == bt::kOpWrite;
  const int local_class = (c >> 2) & 3;   // 0, 1 in page; 2 null; 3 wrapping
  const int remote_class = (c >> 4) & 3;  // likewise
  const int length_class = (c >> 6) & 3;  // 0 fits; 1 zero; 2 just over 2^40; 3 huge
  d.local_off = in.u32() % kPageBytes;
  d.remote_off = in.u32() % kPageBytes;
  const uint64_t raw = in.u64();
  const uint64_t room = kPageBytes - (d.local_off > d.remote_off ? d.local_off : d.remote_off);
  switch (length_class) {
    case 0: d.length = 1 + raw % room; break;
    case 1: d.length = 0; break;
    case 2: d.length = bt::kMaxRequestBytes + 1 + (raw & 0xffff); break;
    default: d.length = raw | (1ull << 63); break;
  }
  auto address = [&](int cls, uint64_t page, uint64_t off, uint64_t& below_top) {
    if (cls < 2) return page + off;
    if (cls == 2) return (uint64_t)0;
    // Just below 2^64, by at most the length - 1: address + length wraps.
    below_top = d.length > 1 ? (raw >> 8) % (d.length - 1) : 0;
    return UINT64_MAX - below_top;
  };
  uint64_t unused = 0;
  d.local = address(local_class, kPageL, d.local_off, unused);
  d.remote = address(remote_class, kPageR, d.remote_off, unused);
  if (d.length == 0) {
    // A zero length wraps nothing: keep a wrapping-class address non-null and out of pages.
    if (local_class == 3) d.local = UINT64_MAX;
    if (remote_class == 3) d.remote = UINT64_MAX;
  }
  d.valid = op_ok && local_class < 2 && remote_class < 2 && length_class == 0;
  return d;
}

void fillPages(uint8_t salt, std::vector<uint8_t>* l, std::vector<uint8_t>* r) {
  uint8_t* pl = reinterpret_cast<uint8_t*>(kPageL);
  uint8_t* pr = reinterpret_cast<uint8_t*>(kPageR);
  for (uint64_t i = 0; i < kPageBytes; ++i) {
    pl[i] = (uint8_t)(i * 31 + salt);
    pr[i] = (uint8_t)(i * 17 + salt * 3 + 1);
  }
  l->assign(pl, pl + kPageBytes);
  r->assign(pr, pr + kPageBytes);
}

uint64_t lengthOfClass(fz::Bytes& in) {
  const uint8_t c = in.u8();
  const uint64_t raw = in.u64();
  const uint64_t edge = bt::kBatchChunkBytes * bt::kMaxChunksPerCopy;
  switch (c % 6) {
    case 0: return 1 + raw % (4 * bt::kBatchChunkBytes);
    case 1: return edge - 64 + raw % 128;
    case 2: return bt::kMaxRequestBytes - (raw & 0xff);
    case 3: return bt::kMaxRequestBytes + 1 + (raw & 0xff);
    case 4: return 0;
    default: return raw;
  }
}

void fuzzChunking(fz::Bytes& in) {
  const uint32_t n = in.u8() % 9;
  std::vector<bt::BatchCopy> copies(n);
  bool lengths_ok = true;
  for (uint32_t i = 0; i < n; ++i) {
    copies[i] = bt::BatchCopy{kPageR, kPageL, lengthOfClass(in)};
    lengths_ok = lengths_ok && copies[i].length >= 1 && copies[i].length <= bt::kMaxRequestBytes;
  }
  // chunkCount's precondition is valid lengths (the submit checks them first).
  const uint64_t need = lengths_ok ? bt::chunkCount(copies.data(), n) : 0;
  if (lengths_ok) FUZZ_ASSERT(need >= n && need <= (uint64_t)n * bt::kMaxChunksPerCopy);
  const uint8_t m = in.u8();
  uint64_t max_chunks = m < 128 ? need : m < 192 ? (need > 0 ? need - 1 : 0) : m % 64;
  std::vector<bt::BatchChunk> out(max_chunks);
  std::vector<bt::BatchProgress> progress(n);
  const uint64_t got =
      bt::splitIntoChunks(copies.data(), n, out.data(), max_chunks, progress.data());
  if (!lengths_ok || (n > 0 && need > max_chunks)) {
    FUZZ_ASSERT(got == 0);
    return;
  }
  FUZZ_ASSERT(got == need);
  uint64_t k = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const uint64_t len = copies[i].length;
    const uint64_t piece = bt::chunkBytesOf(len);
    FUZZ_ASSERT(piece > 0 && (piece == bt::kBatchChunkBytes || piece % 16 == 0));
    uint64_t covered = 0;
    uint64_t pieces = 0;
    while (covered < len) {
      FUZZ_ASSERT(k < got);
      const bt::BatchChunk& c = out[k++];
      // A chunk names its copy and piece; the kernel derives its bytes as below.
      FUZZ_ASSERT(c.copy == i && c.piece == pieces);
      const uint64_t offset = (uint64_t)c.piece * piece;
      FUZZ_ASSERT(offset == covered && offset < len);
      const uint64_t bytes = len - offset < piece ? len - offset : piece;
      FUZZ_ASSERT(bytes > 0);
      covered += bytes;
      ++pieces;
    }
    FUZZ_ASSERT(covered == len && pieces <= bt::kMaxChunksPerCopy);
    FUZZ_ASSERT(progress[i].decision == 0);
  }
  FUZZ_ASSERT(k == got);
}

// A batch that must refuse everything with its status.
void checkUnavailable(TransferBatch* b, fz::Bytes& in) {
  const int st = b->status();
  FUZZ_ASSERT(st < 0 && std::strlen(b->lastError()) > 0);
  int32_t op = bt::kOpWrite;
  uint64_t l = kPageL, r = kPageR, len = 1;
  int32_t out[4];
  FUZZ_ASSERT(b->descriptors() == nullptr);
  FUZZ_ASSERT(b->submit(0, 1, &op, &l, &r, &len) == st);
  FUZZ_ASSERT(b->submit(0, 1, 1000) == st);
  FUZZ_ASSERT(b->attachRdma(nullptr) == st);
  FUZZ_ASSERT(b->states(0, (int)(in.u8() % 4), out) == st);
  FUZZ_ASSERT(b->syndromes(0, (int)(in.u8() % 4), out) == st);
  FUZZ_ASSERT(b->wait(0) == st);
  FUZZ_ASSERT(b->cancel() == st);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)fz::arena();  // maps the pages
  fz::Bytes in{data, size};
  const uint8_t platform_byte = in.u8();
  const uint8_t cap_byte = in.u8();
  const int platform = (platform_byte & 3) < 2    ? kPlatformHost
                       : (platform_byte & 3) == 2 ? kPlatformCuda
                                                  : 7;
  const int capacity = cap_byte < 252    ? 1 + cap_byte % 64
                       : cap_byte == 252 ? 0
                       : cap_byte == 253 ? -1
                       : cap_byte == 254 ? TransferBatch::kMaxBatchCapacity + 1
                                         : INT_MIN;
  fuzzChunking(in);

  std::vector<uint8_t> model_l, model_r;
  fillPages(platform_byte, &model_l, &model_r);
  TransferBatch* b = TransferBatch::create(platform, 0, capacity);
  FUZZ_ASSERT(b != nullptr);
  const bool host_ok =
      platform == kPlatformHost && capacity >= 1 && capacity <= TransferBatch::kMaxBatchCapacity;
  if (!host_ok) {
    checkUnavailable(b, in);
    destroyObject(b);
    return 0;
  }
  FUZZ_ASSERT(b->status() == kOk && b->capacity() == capacity);

  std::vector<Submitted> submitted;
  bool cancelled = false;
  for (int cmd = 0; cmd < 24 && in.n > 0; ++cmd) {
    const uint8_t c = in.u8();
    switch (c % 4) {
      case 0: {  // submit
        const uint8_t cb = in.u8();
        const bool in_place = cb >= 128;
        const int count = (int)(cb % 12) - 1;  // -1 .. 10
        const uint8_t f = in.u8();
        const int model_first = (int)submitted.size();
        const int first = f < 200 ? model_first : (int)(int8_t)in.u8();
        const int rows = count > 0 ? count : 0;
        std::vector<int32_t> ops(rows);
        std::vector<uint64_t> local(rows), remote(rows), lengths(rows);
        std::vector<Desc> descs(rows);
        int first_bad = -1;
        for (int i = 0; i < rows; ++i) {
          descs[i] = makeDescriptor(in);
          descs[i].route = kRouteMapped;
          if (in_place) pickRoute(in, &descs[i]);
          ops[i] = descs[i].opcode;
          local[i] = descs[i].local;
          remote[i] = descs[i].remote;
          lengths[i] = descs[i].length;
          if (!descs[i].valid && first_bad < 0) first_bad = i;
        }
        const bool placed = count >= 1 && first == model_first && count <= capacity - first;
        int st;
        if (in_place) {
          // The caller writes only its part's slots; a misplaced part writes none (the batch
          // must refuse it before it reads any).
          if (placed) {
            BatchDescriptor* slots = b->descriptors() + first;
            for (int i = 0; i < rows; ++i) {
              const Desc& d = descs[i];
              slots[i] =
                  BatchDescriptor{d.opcode, d.route, d.local, d.remote, d.length, d.lkey, d.rkey};
            }
          }
          st = b->submit(first, count, (int64_t)f * 1000000);
        } else {
          st = b->submit(first, count, ops.data(), local.data(), remote.data(), lengths.data());
        }
        if (placed && !cancelled && first_bad < 0) {
          FUZZ_ASSERT(st == kOk);
          for (const Desc& d : descs) {
            const bool lost = d.route == kRoutePeerLost;
            submitted.push_back(Submitted{d.opcode, d.local_off, d.remote_off, d.length, lost});
            // Final at submit: its state is there once submit returns.
            int32_t now = 0;
            FUZZ_ASSERT(!lost ||
                        (b->states((int)submitted.size() - 1, 1, &now) == kOk && now == kPeerLost));
          }
        } else {
          FUZZ_ASSERT(st < 0 && std::strlen(b->lastError()) > 0);
          if (placed && !cancelled) {
            // Only a descriptor is wrong: the message names the first bad request.
            const std::string want = "request " + std::to_string(first + first_bad) + " ";
            FUZZ_ASSERT(std::strstr(b->lastError(), want.c_str()) != nullptr);
          }
        }
        break;
      }
      case 1: {  // states
        const int first = (int)(in.u8() % 80) - 8;
        const int count = (int)(in.u8() % 80) - 8;
        const bool inside = first >= 0 && count >= 0 && count <= capacity - first;
        std::vector<int32_t> out(count > 0 ? count : 0);
        const int st = b->states(first, count, count > 0 ? out.data() : nullptr);
        if (inside && (count > 0)) {
          FUZZ_ASSERT(st == kOk);
          for (int i = 0; i < count; ++i) {
            const int idx = first + i;
            if (idx >= (int)submitted.size())
              FUZZ_ASSERT(out[i] == kRequestPending);
            else if (submitted[(size_t)idx].lost)
              FUZZ_ASSERT(out[i] == kPeerLost);
            else
              FUZZ_ASSERT(out[i] == kRequestPending || out[i] == kRequestCompleted ||
                          out[i] == kRequestTimeout);
          }
        } else if (!inside) {
          FUZZ_ASSERT(st < 0);
        }
        break;
      }
      case 2: {  // wait a little
        const uint8_t w = in.u8();
        const int st = b->wait((int64_t)(w % 8) * 1000000);
        FUZZ_ASSERT(st == kOk || st == kTimeout);
        if (w >= 128) {
          // No transport to attach: refused, and the batch goes on without an RDMA route.
          FUZZ_ASSERT(b->attachRdma(nullptr) < 0 && std::strlen(b->lastError()) > 0);
          const int n = (int)submitted.size();
          std::vector<int32_t> words(n > 0 ? n : 1, -1);
          if (n > 0) {
            FUZZ_ASSERT(b->syndromes(0, n, words.data()) == kOk);
            for (int i = 0; i < n; ++i) FUZZ_ASSERT(words[i] == 0);
          }
        }
        break;
      }
      default:
        FUZZ_ASSERT(b->cancel() == kOk);
        cancelled = true;
        break;
    }
  }

  // Everything submitted ends within a bound far above a few 4 KiB copies.
  FUZZ_ASSERT(b->wait(10'000'000'000ll) == kOk);
  const int n = (int)submitted.size();
  std::vector<int32_t> states(n > 0 ? n : 1);
  if (n > 0) FUZZ_ASSERT(b->states(0, n, states.data()) == kOk);
  bool skipped = false;
  for (int i = 0; i < n; ++i) {
    const Submitted& s = submitted[i];
    if (s.lost) {
      FUZZ_ASSERT(states[i] == kPeerLost);  // never run: its bytes stay as they were
      continue;
    }
    if (states[i] == kRequestTimeout) {
      FUZZ_ASSERT(cancelled);
      skipped = true;
      continue;
    }
    FUZZ_ASSERT(states[i] == kRequestCompleted && !skipped);
    uint8_t* lm = model_l.data() + s.local_off;
    uint8_t* rm = model_r.data() + s.remote_off;
    if (s.opcode == bt::kOpRead)
      std::memmove(lm, rm, s.length);
    else
      std::memmove(rm, lm, s.length);
  }
  FUZZ_ASSERT(std::memcmp(model_l.data(), reinterpret_cast<void*>(kPageL), kPageBytes) == 0);
  FUZZ_ASSERT(std::memcmp(model_r.data(), reinterpret_cast<void*>(kPageR), kPageBytes) == 0);
  destroyObject(b);
  return 0;
}
