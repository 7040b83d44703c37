// test_copy_helpers.cpp — parallelCopy (copy_helpers.h): every thread count and odd sizes copy
// exactly their bytes (random data, poisoned guards on both sides), concurrent callers do not
// mix their chunks, and a host-platform OpStream putWithSignal of a split size delivers all its
// bytes before its signal. Exit 0 = all passed.
#include <stdio.h>
#include <string.h>

#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "check.h"
#include "stream/copy_helpers.h"
#include "te4j/api.h"
#include "te4j/tuning.h"
#include "transport/device/comm_device.cuh"

namespace {

constexpr uint8_t kPoison = 0xC3;
constexpr std::size_t kGuard = 4096;

void memcpyBody(void* d, const void* s, std::size_t n) { memcpy(d, s, n); }

std::vector<uint8_t> randomBytes(std::size_t n, uint64_t seed) {
  std::vector<uint8_t> v(n);
  std::mt19937_64 rng(seed);
  for (std::size_t i = 0; i + 8 <= n; i += 8) {
    const uint64_t r = rng();
    memcpy(&v[i], &r, 8);
  }
  for (std::size_t i = n / 8 * 8; i < n; ++i) v[i] = (uint8_t)rng();
  return v;
}

// Copies n random bytes at a misaligned offset; checks the bytes and both guards.
bool copyOnce(std::size_t n, int threads, std::size_t offset, uint64_t seed) {
  const std::vector<uint8_t> src = randomBytes(n + offset, seed);
  std::vector<uint8_t> dst(n + offset + 2 * kGuard, kPoison);
  uint8_t* d = dst.data() + kGuard + offset;
  te4j::parallelCopy(d, src.data() + offset, n, threads, memcpyBody);
  bool ok = n == 0 || memcmp(d, src.data() + offset, n) == 0;  // n == 0: src.data() may be null
  for (std::size_t i = 0; i < kGuard + offset; ++i) ok = ok && dst[i] == kPoison;
  for (std::size_t i = kGuard + offset + n; i < dst.size(); ++i) ok = ok && dst[i] == kPoison;
  CHECK(ok, "n=%zu threads=%d offset=%zu: bytes or guards wrong", n, threads, offset);
  return ok;
}

void testSizesAndThreads() {
  const std::size_t sizes[] = {0,
                               1,
                               4095,
                               te4j::kMinCopyChunk - 1,
                               2 * te4j::kMinCopyChunk,
                               2 * te4j::kMinCopyChunk + 1,
                               5 * te4j::kMinCopyChunk + 12345,
                               9 * te4j::kMinCopyChunk + 7};
  int cases = 0;
  for (std::size_t n : sizes) {
    for (int threads : {1, 2, 3, 4, 8, 64}) {
      for (std::size_t offset : {(std::size_t)0, (std::size_t)13}) {
        if (!copyOnce(n, threads, offset, n * 31 + threads * 7 + offset)) return;
        ++cases;
      }
    }
  }
  printf("  sizes x threads x offsets: %d copies\n", cases);
}

// Several callers at once (the executors of several streams): each copy stays its own.
void testConcurrentCallers() {
  constexpr int kCallers = 6;
  std::vector<std::thread> callers;
  std::vector<int> bad(kCallers, 0);
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([c, &bad] {
      for (int round = 0; round < 5; ++round) {
        const std::size_t n = (3 + c) * te4j::kMinCopyChunk + 1000 * round + 7;
        const std::vector<uint8_t> src = randomBytes(n, 1000 * c + round);
        std::vector<uint8_t> dst(n, kPoison);
        te4j::parallelCopy(dst.data(), src.data(), n, 4, memcpyBody);
        if (dst != src) ++bad[c];
      }
    });
  }
  for (auto& t : callers) t.join();
  for (int c = 0; c < kCallers; ++c) CHECK(bad[c] == 0, "caller %d: %d copies differ", c, bad[c]);
}

// The knob: hostthreads names are the thread counts; default 4.
void testKnob() {
  CHECK(te4j::tuning::apply("", nullptr) == 0 && te4j::tuning::hostThreads() == 4, "default 4");
  CHECK(te4j::tuning::apply("hostthreads=1", nullptr) == 0 && te4j::tuning::hostThreads() == 1,
        "1");
  CHECK(te4j::tuning::apply("hostthreads=8", nullptr) == 0 && te4j::tuning::hostThreads() == 8,
        "8");
  const char* why = nullptr;
  CHECK(te4j::tuning::apply("hostthreads=16", &why) != 0, "16 is not a value");
  CHECK(te4j::tuning::apply("", nullptr) == 0 && te4j::tuning::hostThreads() == 4, "reset");
}

// Through a host OpStream: rounds of a 9 MiB putWithSignal (split over 4 threads) whose bytes
// all carry the round number; a reader that acquires signal value r must find no byte of an
// older round anywhere in the destination.
void testPutWithSignalOrder() {
  constexpr std::size_t kBytes = 9 * te4j::kMinCopyChunk + 100;
  constexpr int kRounds = 12;
  std::vector<uint8_t> window0(kBytes + 64), window1(kBytes + 64);
  std::vector<uint8_t> src(kBytes);
  int available[2] = {1, 1};
  void* peers[2] = {window0.data(), window1.data()};
  mooncake::device::CommCtx ctx;
  memset(&ctx, 0, sizeof(ctx));
  ctx.p2p.available = available;
  ctx.p2p.peer_ptrs = peers;
  ctx.p2p.local_base = window0.data();
  ctx.rank = 0;
  uint32_t* sig0 = (uint32_t*)(window0.data() + kBytes);  // symmetric offset kBytes
  uint32_t* sig1 = (uint32_t*)(window1.data() + kBytes);
  te4j::OpStream* s = te4j::OpStream::create(te4j::kPlatformHost, 0);
  CHECK(s != nullptr && s->status() == te4j::kOk, "host stream: %s", s ? s->lastError() : "null");
  if (s == nullptr) return;
  int stale = 0;
  for (int r = 1; r <= kRounds; ++r) {
    memset(src.data(), r, kBytes);  // the stream is idle here (synchronized below)
    CHECK(s->putWithSignal(&ctx, 1, window0.data(), src.data(), kBytes, sig0, 1, 0, 0) == te4j::kOk,
          "putWithSignal: %s", s->lastError());
    // Reader: wait (bounded) for this round's signal, then check every byte.
    const uint64_t deadline = mooncake::device::mc_globaltimer_ns() + 10000000000ull;
    uint32_t seen = 0;
    CHECK(mooncake::device::mc_wait_signal(sig1, (uint32_t)r, deadline, &seen),
          "round %d signal (%u)", r, seen);
    for (std::size_t i = 0; i < kBytes; ++i) {
      if (window1[i] != (uint8_t)r) {
        ++stale;
        break;
      }
    }
    CHECK(s->synchronize(10000000000LL) == te4j::kOk, "sync: %s", s->lastError());
  }
  CHECK(stale == 0, "%d rounds showed older bytes after their signal", stale);
  delete s;
}

}  // namespace

int main() {
  testSizesAndThreads();
  testConcurrentCallers();
  testKnob();
  testPutWithSignalOrder();
  if (g_failures != 0) {
    fprintf(stderr, "test_copy_helpers: %d check(s) failed\n", g_failures);
    return 1;
  }
  printf("test_copy_helpers: all checks passed\n");
  return 0;
}
