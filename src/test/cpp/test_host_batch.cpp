// test_host_batch.cpp — te4j::TransferBatch on the host platform, with parts large enough that
// the worker cuts them into slices for its helper threads (knob batchthreads):
//  - random parts (requests of 1 B .. 8 MiB at random offsets, READ and WRITE mixed, poisoned
//    destinations) land byte for byte with batchthreads 1, 2 and 4;
//  - a cancel racing a large split part leaves every request either copied whole (COMPLETED) or
//    untouched (TIMEOUT);
//  - destroying a batch while a large part runs returns only after its threads left its memory
//    (the memory is unmapped right after; a late copy would fault);
//  - a request whose source and destination overlap, in a part that is split around it, ends as
//    one memmove would leave it.
// TE4J_TIMEOUT_SCALE multiplies every bound (sanitizer runs).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <thread>
#include <vector>

#include "check.h"
#include "te4j/batch_api.h"
#include "te4j/tuning.h"

namespace {

constexpr uint8_t kPoison = 0xA5;
constexpr uint64_t kMiB = 1u << 20;

int64_t boundNs(int64_t seconds) {
  const char* v = getenv("TE4J_TIMEOUT_SCALE");
  const int64_t scale = v != nullptr && atoi(v) > 0 ? atoi(v) : 1;
  return seconds * scale * 1000000000LL;
}

// Anonymous memory of its own, so that a test can unmap it and see any late access fault.
struct Mapping {
  explicit Mapping(size_t n) : bytes(n) {
    void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    base = p == MAP_FAILED ? nullptr : static_cast<uint8_t*>(p);
  }
  ~Mapping() { unmap(); }
  void unmap() {
    if (base != nullptr) munmap(base, bytes);
    base = nullptr;
  }
  uint64_t at(uint64_t offset) const { return reinterpret_cast<uint64_t>(base) + offset; }
  uint8_t* base;
  size_t bytes;
};

struct Requests {
  std::vector<int32_t> opcodes;
  std::vector<uint64_t> local, remote, lengths;
  void add(int32_t op, uint64_t l, uint64_t r, uint64_t n) {
    opcodes.push_back(op);
    local.push_back(l);
    remote.push_back(r);
    lengths.push_back(n);
  }
  int size() const { return static_cast<int>(opcodes.size()); }
};

void setThreads(const char* spec) {
  const char* why = nullptr;
  CHECK(te4j::tuning::apply(spec, &why) == 0, "%s refused: %s", spec, why);
}

// Submits the requests in `parts` parts of about equal counts and waits for all of them.
void submitAll(te4j::TransferBatch* batch, const Requests& r, int parts) {
  const int n = r.size();
  int first = 0;
  for (int p = 0; p < parts && first < n; ++p) {
    const int count = p == parts - 1 ? n - first : std::max(1, n / parts);
    const int rc = batch->submit(first, count, &r.opcodes[first], &r.local[first], &r.remote[first],
                                 &r.lengths[first]);
    CHECK(rc == te4j::kOk, "submit [%d, %d): %d %s", first, first + count, rc, batch->lastError());
    first += count;
  }
  CHECK(batch->wait(boundNs(60)) == te4j::kOk, "wait: %s", batch->lastError());
}

// The first byte where a and b differ, or -1.
int64_t firstDifference(const uint8_t* a, const uint8_t* b, uint64_t n) {
  if (memcmp(a, b, n) == 0) return -1;
  for (uint64_t i = 0; i < n; ++i) {
    if (a[i] != b[i]) return static_cast<int64_t>(i);
  }
  return -1;
}

// Lengths log-uniform over 1 B .. 8 MiB.
uint64_t randomLength(std::mt19937_64& rng) {
  const int bits = static_cast<int>(rng() % 24);  // 2^0 .. 2^23
  const uint64_t low = 1ull << bits;
  return std::min<uint64_t>(8 * kMiB, low + rng() % low);
}

// Local and remote are each a destination half [0, kHalf) and a source half [kHalf, 2 kHalf):
// WRITE copies local sources to remote destinations, READ remote sources to local ones. The
// destinations of a batch do not overlap (where they do, which bytes land is unspecified), so
// the expected memory is every copy applied in any order.
void testRandomParts() {
  constexpr uint64_t kHalf = 40 * kMiB;
  Mapping local(2 * kHalf), remote(2 * kHalf);
  CHECK(local.base != nullptr && remote.base != nullptr, "mmap");
  if (local.base == nullptr || remote.base == nullptr) return;
  std::vector<uint8_t> expect_local(kHalf), expect_remote(kHalf);
  std::mt19937_64 rng(20261202);
  for (uint64_t i = 0; i < kHalf; i += 8) {
    const uint64_t a = rng(), b = rng();
    memcpy(local.base + kHalf + i, &a, 8);
    memcpy(remote.base + kHalf + i, &b, 8);
  }
  int batches = 0;
  int64_t requests = 0;
  for (const char* spec : {"batchthreads=1", "batchthreads=2", "batchthreads=4"}) {
    setThreads(spec);
    for (int round = 0; round < 6; ++round) {
      memset(local.base, kPoison, kHalf);
      memset(remote.base, kPoison, kHalf);
      memset(expect_local.data(), kPoison, kHalf);
      memset(expect_remote.data(), kPoison, kHalf);
      // Round 0: one 8 MiB request (split by byte range); round 1: many small ones adding up
      // past the split threshold; the others: any lengths.
      Requests r;
      uint64_t next_local = rng() % 64, next_remote = rng() % 64;
      const int max_requests = round == 0 ? 1 : 200;
      while (r.size() < max_requests) {
        const bool read = rng() % 2 == 0;
        uint64_t n = round == 0 ? 8 * kMiB : round == 1 ? 1 + rng() % 20000 : randomLength(rng);
        uint64_t& next = read ? next_local : next_remote;
        if (next + n > kHalf) break;
        const uint64_t dst = next;
        const uint64_t src = kHalf + rng() % (kHalf - n + 1);
        next += n + rng() % 4096;
        if (read) {
          r.add(te4j::kBatchRead, local.at(dst), remote.at(src), n);
          memcpy(expect_local.data() + dst, remote.base + src, n);
        } else {
          r.add(te4j::kBatchWrite, local.at(src), remote.at(dst), n);
          memcpy(expect_remote.data() + dst, local.base + src, n);
        }
      }
      // Random order within the batch, so that large and small requests mix in every part.
      std::vector<int> order(r.size());
      for (int i = 0; i < r.size(); ++i) order[i] = i;
      std::shuffle(order.begin(), order.end(), rng);
      Requests shuffled;
      for (int i : order) shuffled.add(r.opcodes[i], r.local[i], r.remote[i], r.lengths[i]);
      te4j::TransferBatch* batch = te4j::TransferBatch::create(te4j::kPlatformHost, 0, r.size());
      CHECK(batch != nullptr && batch->status() == te4j::kOk, "create");
      if (batch == nullptr) return;
      submitAll(batch, shuffled, 1 + round % 3);
      std::vector<int32_t> states(shuffled.size());
      CHECK(batch->states(0, shuffled.size(), states.data()) == te4j::kOk, "states");
      for (int i = 0; i < shuffled.size(); ++i) {
        CHECK(states[i] == te4j::kRequestCompleted, "%s round %d: request %d of %llu B is %d", spec,
              round, i, (unsigned long long)shuffled.lengths[i], states[i]);
      }
      delete batch;
      const int64_t dl = firstDifference(local.base, expect_local.data(), kHalf);
      const int64_t dr = firstDifference(remote.base, expect_remote.data(), kHalf);
      CHECK(dl < 0, "%s round %d: local destination differs at byte %lld", spec, round,
            (long long)dl);
      CHECK(dr < 0, "%s round %d: remote destination differs at byte %lld", spec, round,
            (long long)dr);
      ++batches;
      requests += shuffled.size();
    }
  }
  setThreads("");
  printf("random parts: %d batches, %lld requests, byte for byte\n", batches, (long long)requests);
}

// A large part cut into slices (requests of 3 MiB and one of 24 MiB, so that cuts fall inside
// requests), cancelled after a random moment: each request is whole or untouched.
void testCancelRacingSplit() {
  setThreads("batchthreads=4");
  constexpr int kSmall = 8;
  constexpr uint64_t kSmallBytes = 3 * kMiB, kLargeBytes = 24 * kMiB;
  constexpr uint64_t kTotal = kSmall * kSmallBytes + kLargeBytes;
  Mapping src(kTotal), dst(kTotal);
  CHECK(src.base != nullptr && dst.base != nullptr, "mmap");
  if (src.base == nullptr || dst.base == nullptr) return;
  for (uint64_t i = 0; i < kTotal; ++i) src.base[i] = static_cast<uint8_t>(i * 7 + 1);
  std::mt19937_64 rng(15);
  int completed = 0, timed_out = 0;
  for (int round = 0; round < 24; ++round) {
    memset(dst.base, kPoison, kTotal);
    Requests r;
    uint64_t at = 0;
    for (int i = 0; i <= kSmall; ++i) {
      const uint64_t n = i == kSmall / 2 ? kLargeBytes : kSmallBytes;
      r.add(round % 2 ? te4j::kBatchRead : te4j::kBatchWrite, round % 2 ? dst.at(at) : src.at(at),
            round % 2 ? src.at(at) : dst.at(at), n);
      at += n;
    }
    te4j::TransferBatch* batch = te4j::TransferBatch::create(te4j::kPlatformHost, 0, r.size());
    CHECK(batch != nullptr && batch->status() == te4j::kOk, "create");
    if (batch == nullptr) return;
    CHECK(batch->submit(0, r.size(), r.opcodes.data(), r.local.data(), r.remote.data(),
                        r.lengths.data()) == te4j::kOk,
          "submit: %s", batch->lastError());
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(rng() % 3000);
    while (std::chrono::steady_clock::now() < until) {
    }
    CHECK(batch->cancel() == te4j::kOk, "cancel");
    CHECK(batch->wait(boundNs(60)) == te4j::kOk, "wait: %s", batch->lastError());
    std::vector<int32_t> states(r.size());
    CHECK(batch->states(0, r.size(), states.data()) == te4j::kOk, "states");
    delete batch;
    uint64_t off = 0;
    std::vector<uint8_t> poison(kLargeBytes, kPoison);
    for (int i = 0; i < r.size(); ++i) {
      const uint64_t n = r.lengths[i];
      if (states[i] == te4j::kRequestCompleted) {
        ++completed;
        const int64_t d = firstDifference(dst.base + off, src.base + off, n);
        CHECK(d < 0, "round %d: request %d COMPLETED but differs at byte %lld", round, i,
              (long long)d);
      } else if (states[i] == te4j::kRequestTimeout) {
        ++timed_out;
        const int64_t d = firstDifference(dst.base + off, poison.data(), n);
        CHECK(d < 0, "round %d: request %d TIMEOUT but byte %lld was written", round, i,
              (long long)d);
      } else {
        CHECK(false, "round %d: request %d ended as %d", round, i, states[i]);
      }
      off += n;
    }
  }
  setThreads("");
  printf("cancel racing a split part: %d requests completed, %d timed out, none half copied\n",
         completed, timed_out);
}

// Deleting the batch while its split part copies; the memory is unmapped as soon as the
// destructor returns (as the Java layer does with the segments), so a slice still copying would
// fault. Then a short pause for any straggler to show itself.
void testDestroyWhileRunning() {
  setThreads("batchthreads=4");
  constexpr uint64_t kBytes = 48 * kMiB;
  for (int round = 0; round < 8; ++round) {
    Mapping src(kBytes), dst(kBytes);
    CHECK(src.base != nullptr && dst.base != nullptr, "mmap");
    if (src.base == nullptr || dst.base == nullptr) return;
    memset(src.base, 1 + round, kBytes);
    memset(dst.base, kPoison, kBytes);
    Requests r;
    r.add(te4j::kBatchWrite, src.at(0), dst.at(0), kBytes / 2);  // split by byte range
    for (uint64_t at = kBytes / 2; at < kBytes; at += 2 * kMiB) {
      r.add(te4j::kBatchWrite, src.at(at), dst.at(at), 2 * kMiB);
    }
    te4j::TransferBatch* batch = te4j::TransferBatch::create(te4j::kPlatformHost, 0, r.size());
    CHECK(batch != nullptr && batch->status() == te4j::kOk, "create");
    if (batch == nullptr) return;
    CHECK(batch->submit(0, r.size(), r.opcodes.data(), r.local.data(), r.remote.data(),
                        r.lengths.data()) == te4j::kOk,
          "submit: %s", batch->lastError());
    std::this_thread::sleep_for(std::chrono::microseconds(round * 300));
    delete batch;
    src.unmap();
    dst.unmap();
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  setThreads("");
  printf("destroy while a split part runs: returned after its threads left the memory\n");
}

// A request whose source and destination overlap (the own segment: local and remote in one
// buffer, shifted both ways) between plain requests, in a part large enough to split, with cut
// targets inside the overlapping request: it must end as one memmove leaves it.
void testOverlappingRequest() {
  constexpr uint64_t kPlain = 2 * kMiB, kOverlap = 12 * kMiB, kShift = 1000;
  constexpr uint64_t kBytes = 2 * kPlain + kOverlap + kShift + 2 * kPlain;
  Mapping buf(kBytes);
  CHECK(buf.base != nullptr, "mmap");
  if (buf.base == nullptr) return;
  std::vector<uint8_t> expect(kBytes);
  for (const char* spec : {"batchthreads=2", "batchthreads=4"}) {
    setThreads(spec);
    for (int forward = 0; forward < 2; ++forward) {
      for (uint64_t i = 0; i < kBytes; ++i) buf.base[i] = static_cast<uint8_t>(i * 13 + i / 4096);
      // [src A: kPlain][dst A: kPlain][overlap window: kOverlap + kShift][src B][dst B]
      const uint64_t window = 2 * kPlain;
      const uint64_t from = forward ? window : window + kShift;
      const uint64_t to = forward ? window + kShift : window;
      const uint64_t tail = window + kOverlap + kShift;
      Requests r;
      r.add(te4j::kBatchWrite, buf.at(0), buf.at(kPlain), kPlain);
      r.add(te4j::kBatchWrite, buf.at(from), buf.at(to), kOverlap);
      r.add(te4j::kBatchRead, buf.at(tail + kPlain), buf.at(tail), kPlain);
      memcpy(expect.data(), buf.base, kBytes);
      memmove(expect.data() + kPlain, expect.data(), kPlain);
      memmove(expect.data() + to, expect.data() + from, kOverlap);
      memmove(expect.data() + tail + kPlain, expect.data() + tail, kPlain);
      te4j::TransferBatch* batch = te4j::TransferBatch::create(te4j::kPlatformHost, 0, 3);
      CHECK(batch != nullptr && batch->status() == te4j::kOk, "create");
      if (batch == nullptr) return;
      submitAll(batch, r, 1);
      int32_t states[3] = {0, 0, 0};
      CHECK(batch->states(0, 3, states) == te4j::kOk, "states");
      for (int i = 0; i < 3; ++i) {
        CHECK(states[i] == te4j::kRequestCompleted, "%s: request %d is %d", spec, i, states[i]);
      }
      delete batch;
      const int64_t d = firstDifference(buf.base, expect.data(), kBytes);
      CHECK(d < 0, "%s, %s shift: differs from memmove at byte %lld", spec,
            forward ? "forward" : "backward", (long long)d);
    }
  }
  setThreads("");
  printf("overlapping request in a split part: as one memmove\n");
}

// The knob's values are the thread counts; auto is one per CPU, at most 4.
void testKnob() {
  setThreads("batchthreads=2");
  CHECK(te4j::tuning::batchThreads() == 2, "2");
  setThreads("batchthreads=8");
  CHECK(te4j::tuning::batchThreads() == 8, "8");
  const char* why = nullptr;
  CHECK(te4j::tuning::apply("batchthreads=16", &why) != 0, "16 is not a value");
  setThreads("");
  const int automatic = te4j::tuning::batchThreads();
  CHECK(automatic >= 1 && automatic <= 4, "auto: %d", automatic);
}

}  // namespace

int main() {
  testKnob();
  testRandomParts();
  testCancelRacingSplit();
  testDestroyWhileRunning();
  testOverlappingRequest();
  if (g_failures != 0) {
    fprintf(stderr, "test_host_batch: %d check(s) failed\n", g_failures);
    return 1;
  }
  printf("test_host_batch: all checks passed\n");
  return 0;
}
