// fuzz_list_descriptors.cpp — a reusable transfer list (te4j/list_api.h) as TransferAgent's
// prepareList hands it to native code: descriptor arrays (opcode, local and remote address,
// length per request) checked once at create, then posts of fuzzed index ranges, waits, cancels,
// and the outcome queries (poll, skipped, states).
//
// Input: byte 0 the platform (host; CUDA, unavailable in this host-only build; an unknown one),
// byte 1 the count class (1..32, 0, -1, one past the maximum), a choice byte per request (as
// fuzz_batch_descriptors: READ/WRITE or a raw opcode; a local address in page L, null or
// wrapping; a remote address in page R, null or wrapping; a length that fits, 0, just over
// 2^40, or huge), then up to 24 commands: post (a fuzzed range), wait, cancel, skipped, states
// (a fuzzed range), refill the pages.
// Invariants: create succeeds exactly when the platform is the host's, the count is in range and
// every descriptor is valid, and a refused list refuses every call with its status. A post
// succeeds exactly when its range is non-empty and inside the list (an earlier post is awaited
// first); a refused post changes nothing. After a wait, every request of the post's range is
// COMPLETED or TIMEOUT (TIMEOUT only after a cancel of that post, never followed by a COMPLETED:
// the worker runs a post's requests in order), skipped() counts the TIMEOUT ones, and pages L
// and R hold exactly what applying the COMPLETED requests in order to a copy gives.
#include <climits>
#include <cstring>
#include <memory>
#include <vector>

#include "batch/batch_descriptors.h"
#include "fuzz_support.h"
#include "te4j/list_api.h"

using namespace te4j;
namespace fz = te4j::fuzz;
namespace bt = te4j::batch;

namespace {

constexpr uint64_t kPageL = fz::kRegionA;
constexpr uint64_t kPageR = fz::kArenaBase + 3 * fz::kPage;
constexpr uint64_t kPageBytes = fz::kPage;
constexpr int64_t kWaitNanos = 10'000'000'000LL;

struct Desc {
  int32_t opcode;
  uint64_t local;
  uint64_t remote;
  uint64_t length;
  bool valid;
  uint64_t local_off;
  uint64_t remote_off;
};

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
  auto address = [&](int cls, uint64_t page, uint64_t off) {
    if (cls < 2) return page + off;
    if (cls == 2) return (uint64_t)0;
    const uint64_t below_top = d.length > 1 ? (raw >> 8) % (d.length - 1) : 0;
    return d.length == 0 ? UINT64_MAX : UINT64_MAX - below_top;
  };
  d.local = address(local_class, kPageL, d.local_off);
  d.remote = address(remote_class, kPageR, d.remote_off);
  d.valid = op_ok && local_class < 2 && remote_class < 2 && length_class == 0;
  return d;
}

void fillPages(uint8_t salt, std::vector<uint8_t>* l, std::vector<uint8_t>* r) {
  uint8_t* pl = reinterpret_cast<uint8_t*>(kPageL);
  uint8_t* pr = reinterpret_cast<uint8_t*>(kPageR);
  for (uint64_t i = 0; i < kPageBytes; ++i) {
    pl[i] = (uint8_t)(i * 29 + salt);
    pr[i] = (uint8_t)(i * 13 + salt * 5 + 3);
  }
  l->assign(pl, pl + kPageBytes);
  r->assign(pr, pr + kPageBytes);
}

void checkRefused(TransferList* list, fz::Bytes& in) {
  const int st = list->status();
  FUZZ_ASSERT(st < 0 && std::strlen(list->lastError()) > 0);
  int32_t out[4];
  FUZZ_ASSERT(list->post(0, 1) == st);
  FUZZ_ASSERT(list->poll() == st);
  FUZZ_ASSERT(list->wait(0) == st);
  FUZZ_ASSERT(list->cancel() == st);
  FUZZ_ASSERT(list->skipped() == st);
  FUZZ_ASSERT(list->states(0, (int)(in.u8() % 4), out) == st);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)fz::arena();  // maps the pages
  fz::Bytes in{data, size};
  const uint8_t platform_byte = in.u8();
  const uint8_t count_byte = in.u8();
  const int platform = (platform_byte & 3) < 2    ? kPlatformHost
                       : (platform_byte & 3) == 2 ? kPlatformCuda
                                                  : 7;
  const int count = count_byte < 252    ? 1 + count_byte % 32
                    : count_byte == 252 ? 0
                    : count_byte == 253 ? -1
                    : count_byte == 254 ? TransferBatch::kMaxBatchCapacity + 1
                                        : INT_MIN;
  const int n = count >= 1 && count <= 32 ? count : 1;
  std::vector<Desc> descs;
  std::vector<int32_t> op;
  std::vector<uint64_t> lo, re, len;
  bool all_valid = true;
  for (int i = 0; i < n; ++i) {
    descs.push_back(makeDescriptor(in));
    all_valid = all_valid && descs.back().valid;
    op.push_back(descs.back().opcode);
    lo.push_back(descs.back().local);
    re.push_back(descs.back().remote);
    len.push_back(descs.back().length);
  }
  std::vector<uint8_t> l, r;
  fillPages(in.u8(), &l, &r);
  std::unique_ptr<TransferList> list(
      TransferList::create(platform, 0, count, op.data(), lo.data(), re.data(), len.data()));
  FUZZ_ASSERT(list != nullptr);
  const bool must_work = platform == kPlatformHost && count >= 1 && count <= 32 && all_valid;
  if (!must_work) {
    FUZZ_ASSERT(list->status() != kOk);
    checkRefused(list.get(), in);
    return 0;
  }
  FUZZ_ASSERT(list->status() == kOk && list->size() == n);
  bool running = false;  // a post made and not yet waited for
  bool cancelled = false;
  int from = 0, to = 0;
  auto settle = [&]() {
    FUZZ_ASSERT(list->wait(kWaitNanos) == kOk);
    FUZZ_ASSERT(list->poll() == 1);
    std::vector<int32_t> st((size_t)n, -1);
    FUZZ_ASSERT(list->states(0, n, st.data()) == kOk);
    int skipped = 0;
    bool seen_timeout = false;
    uint8_t* pl = reinterpret_cast<uint8_t*>(kPageL);
    uint8_t* pr = reinterpret_cast<uint8_t*>(kPageR);
    for (int i = from; i < to; ++i) {
      const Desc& d = descs[(size_t)i];
      if (st[(size_t)i] == kRequestTimeout) {
        FUZZ_ASSERT(cancelled);
        seen_timeout = true;
        ++skipped;
        continue;
      }
      FUZZ_ASSERT(st[(size_t)i] == kRequestCompleted && !seen_timeout);
      if (d.opcode == bt::kOpRead) {
        std::memmove(&l[d.local_off], &r[d.remote_off], d.length);
      } else {
        std::memmove(&r[d.remote_off], &l[d.local_off], d.length);
      }
    }
    FUZZ_ASSERT(list->skipped() == skipped);
    FUZZ_ASSERT(std::memcmp(pl, l.data(), kPageBytes) == 0);
    FUZZ_ASSERT(std::memcmp(pr, r.data(), kPageBytes) == 0);
    running = false;
  };
  const int commands = in.u8() % 25;
  for (int k = 0; k < commands; ++k) {
    const uint8_t c = in.u8();
    switch (c % 6) {
      case 0: {
        const int f = (int)(in.u8() % (n + 2)) - 1;
        const int t = (int)(in.u8() % (n + 2));
        const bool ok_range = f >= 0 && f < t && t <= n;
        // The earlier post is settled first: whether it ended before this post's check is a
        // race the model cannot see (the refusal of a post while one runs is the drivers' test).
        if (ok_range && running) settle();
        const int st = list->post(f, t);
        if (!ok_range) {
          FUZZ_ASSERT(st == kInvalidArgument);
        } else {
          FUZZ_ASSERT(st == kOk);
          running = true;
          cancelled = false;
          from = f;
          to = t;
        }
        break;
      }
      case 1:
        if (running) settle();
        break;
      case 2:
        FUZZ_ASSERT(list->cancel() == kOk);
        if (running) cancelled = true;
        break;
      case 3: {
        const int sk = list->skipped();
        FUZZ_ASSERT(sk >= 0 || (running && sk == kIllegalState));
        break;
      }
      case 4: {
        const int f = (int)(in.u8() % (n + 2)) - 1;
        const int c2 = (int)(in.u8() % (n + 2));
        int32_t out[34];
        const int st = list->states(f, c2, out);
        FUZZ_ASSERT(st == kOk || st == kInvalidArgument || (running && st == kIllegalState));
        if (f < 0 || c2 > n - f) FUZZ_ASSERT(st == kInvalidArgument);
        break;
      }
      default:
        if (!running) fillPages(in.u8(), &l, &r);
        break;
    }
  }
  if (running) settle();
  return 0;
}
