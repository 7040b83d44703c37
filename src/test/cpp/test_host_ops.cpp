// test_host_ops.cpp — native tests of the host platform: device primitives compiled by g++ and
// the host OpStream. Exit status 0 = all passed; every check prints what failed and where.
// Every wait in here has a deadline, so a bug fails the test instead of hanging it.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "check.h"
#include "te4j/api.h"
#include "transport/device/comm_device.cuh"
#include "transport/device/detail/copy.cuh"
#include "transport/device/device_transport.h"

using namespace mooncake::device;

namespace {

constexpr int64_t kMs = 1000000;

// Four "ranks" in one process: rank 0 is us; ranks 1 and 3 are P2P-mapped; rank 2 is not.
struct World {
  static constexpr int kRanks = 4;
  static constexpr size_t kBytes = 1 << 16;
  std::vector<std::vector<uint8_t>> buffers;
  int available[kRanks] = {1, 1, 0, 1};
  void* peer_ptrs[kRanks];
  CommCtx ctx;

  World() : buffers(kRanks, std::vector<uint8_t>(kBytes + 64, 0)) {
    for (int r = 0; r < kRanks; ++r) peer_ptrs[r] = align64(buffers[r].data());
    memset(&ctx, 0, sizeof(ctx));
    ctx.p2p.available = available;
    ctx.p2p.peer_ptrs = peer_ptrs;
    ctx.p2p.local_base = peer_ptrs[0];
    ctx.rank = 0;
  }
  static void* align64(uint8_t* p) { return (void*)(((uintptr_t)p + 63) & ~(uintptr_t)63); }
  uint8_t* base(int r) { return (uint8_t*)peer_ptrs[r]; }
  uint32_t* word(int r, size_t offset) { return (uint32_t*)(base(r) + offset); }
};

void testOps() {
  uint32_t w32 = 7;
  uint64_t w64 = 0;
  CHECK(mc_ld_acquire_u32(&w32) == 7, "acquire load");
  mc_st_release_u32(&w32, 9);
  CHECK(w32 == 9, "release store wrote %u", w32);
  mc_st_release_u64(&w64, 0x1122334455667788ull);
  CHECK(mc_ld_acquire_u64(&w64) == 0x1122334455667788ull, "u64 round trip");
  CHECK(mc_atomic_add_release_u32(&w32, 3) == 9, "atomic add returns the old value");
  CHECK(w32 == 12, "atomic add result %u", w32);
  w32 = 0xFFFFFFFEu;
  mc_atomic_add_release_u32(&w32, 3);
  CHECK(w32 == 1u, "atomic add wraps modulo 2^32: %u", w32);
  CHECK(mc_bswap16(0x1234) == 0x3412, "bswap16");
  CHECK(mc_bswap32(0x11223344u) == 0x44332211u, "bswap32");
  CHECK(mc_bswap64(0x0102030405060708ull) == 0x0807060504030201ull, "bswap64");
  alignas(16) int32_t src[4] = {1, 2, 3, 4};
  alignas(16) int32_t dst[4] = {0, 0, 0, 0};
  mc_st_na((mc_int4*)dst, mc_ld_nc((const mc_int4*)src));
  CHECK(memcmp(src, dst, sizeof(src)) == 0, "int4 load/store");
  mc_fence();
  mc_bar_sync();
  mc_pause();
  const uint64_t t0 = mc_globaltimer_ns();
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  const uint64_t t1 = mc_globaltimer_ns();
  CHECK(t1 >= t0 + 1000000, "timer advanced %llu ns over a 2 ms sleep",
        (unsigned long long)(t1 - t0));
}

void testSignalReached() {
  CHECK(mc_signal_reached(5, 5), "equal");
  CHECK(mc_signal_reached(6, 5), "greater");
  CHECK(!mc_signal_reached(4, 5), "smaller");
  CHECK(mc_signal_reached(3, 0xFFFFFFF0u), "wrapped counter is ahead");
  CHECK(!mc_signal_reached(0xFFFFFFF0u, 3), "pre-wrap counter is behind");
  CHECK(mc_signal_reached(0x7FFFFFFFu, 0), "2^31-1 ahead counts as reached");
  CHECK(!mc_signal_reached(0x80000000u, 0), "2^31 ahead is read as behind");
}

void testRouting() {
  World w;
  void* local = w.base(0) + 128;
  CHECK(mc_route_put(w.ctx, 0, local) == local, "own rank routes to the local address");
  CHECK(mc_route_put(w.ctx, 1, local) == w.base(1) + 128, "P2P rank routes to the peer copy");
  CHECK(mc_route_put(w.ctx, 3, local) == w.base(3) + 128, "P2P rank 3");
  CHECK(mc_route_put(w.ctx, 2, local) == nullptr, "non-P2P rank routes to RDMA (nullptr)");

  uint32_t* sig = w.word(0, 256);
  CHECK(mc_signal(w.ctx, 1, 0, 1, sig, 5) == kMcRouteOk, "signal to P2P rank");
  CHECK(*w.word(1, 256) == 5 && *sig == 0, "signal landed on rank 1 only");
  CHECK(mc_red_add(w.ctx, 0, 0, 1, sig, 2) == kMcRouteOk, "red_add on own rank");
  CHECK(*sig == 2, "own word %u", *sig);
  CHECK(mc_signal(w.ctx, 2, 0, 1, sig, 1) == kMcNoRoute, "no RDMA context: no route");
  // An RDMA context without QPs for rank 2: the RDMA branch is taken and refuses cleanly.
#if defined(MC_HAVE_RDMA_ATOMIC_ADD)
  static IbgdaQp no_qps[1];  // a real object: nothing is posted, num_ranks = 0 refuses first
#else
  static int no_qps[1];
#endif
  w.ctx.ibgda.qps = no_qps;
  w.ctx.ibgda.num_ranks = 0;
#if defined(MC_HAVE_RDMA_ATOMIC_ADD)
  CHECK(mc_signal(w.ctx, 2, 0, 1, sig, 1) == kMcRdmaInvalid, "RDMA branch without a QP");
#else
  CHECK(mc_signal(w.ctx, 2, 0, 1, sig, 1) == kMcRdmaUnsupported, "RDMA hook not built yet");
#endif
  CHECK(strcmp(mc_route_status_text(kMcNoRoute), "ok") != 0, "status text");
  CHECK(*w.word(2, 256) == 0, "nothing written to the unreachable rank");

  uint32_t seen = 99;
  *sig = 10;
  CHECK(mc_wait_signal(sig, 10, mc_globaltimer_ns() + kMs, &seen) && seen == 10, "wait reached");
  const uint64_t t0 = mc_globaltimer_ns();
  CHECK(!mc_wait_signal(sig, 11, t0 + 5 * kMs, &seen) && seen == 10, "wait times out");
  const uint64_t waited = mc_globaltimer_ns() - t0;
  CHECK(waited >= 5 * kMs && waited < 1000 * kMs, "bounded wait took %llu ns",
        (unsigned long long)waited);
}

// Several writer threads add through mc_signal to one word; no increment may be lost.
void testManyWriters() {
  World w;
  constexpr int kThreads = 8;
  constexpr int kAdds = 200000;
  uint32_t* sig = w.word(0, 512);
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&w, sig, t] {
      CommCtx ctx = w.ctx;
      ctx.rank = 3;  // writers act as another rank: they reach rank 1 through P2P
      for (int i = 0; i < kAdds; ++i) mc_signal(ctx, 1, 0, 1, sig, (uint32_t)(t + 1));
    });
  }
  for (auto& th : writers) th.join();
  const uint32_t expected = kAdds * (kThreads * (kThreads + 1) / 2);
  CHECK(*w.word(1, 512) == expected, "concurrent total %u, expected %u", *w.word(1, 512), expected);
}

// mc_signal_set: routes like mc_signal (own, P2P, none / RDMA refused), stores the value (no
// add), and orders the writer's data before it: a reader that sees round r reads round r's data.
void testSignalSet() {
  World w;
  uint32_t* sig = w.word(0, 768);
  CHECK(mc_signal_set(w.ctx, 1, sig, 41) == kMcRouteOk, "set to P2P rank");
  CHECK(mc_signal_set(w.ctx, 1, sig, 7) == kMcRouteOk && *w.word(1, 768) == 7,
        "set stores the value (no add): %u", *w.word(1, 768));
  CHECK(*sig == 0, "own word untouched by a set to rank 1");
  CHECK(mc_signal_set(w.ctx, 0, sig, 3) == kMcRouteOk && *sig == 3, "set on own rank");
  CHECK(mc_signal_set(w.ctx, 2, sig, 1) == kMcNoRoute, "no RDMA context: no route");
  static int no_qps[1];
  CommCtx rdma = w.ctx;
  rdma.ibgda.qps = (decltype(rdma.ibgda.qps))no_qps;
  rdma.ibgda.num_ranks = 0;
  CHECK(mc_signal_set(rdma, 2, sig, 1) == kMcRdmaUnsupported, "RDMA-only rank: unsupported");
  CHECK(*w.word(2, 768) == 0, "nothing written to the unreachable rank");

  // Message passing: a writer "rank 3" puts round r into rank 1's data word, then sets rank 1's
  // signal to r; the reader waits for each r and must never see older data.
  uint32_t* data = w.word(0, 1024);
  uint32_t* sig1 = w.word(1, 768);
  uint32_t* data1 = w.word(1, 1024);
  *sig1 = 0;
  constexpr uint32_t kRounds = 200000;
  std::thread writer([&w, sig, data] {
    CommCtx ctx = w.ctx;
    ctx.rank = 3;
    for (uint32_t r = 1; r <= kRounds; ++r) {
      // Relaxed atomics for the data word: the reader reads it while the next round's write
      // may be under way (a value >= its round is right; only older data would be wrong).
      __atomic_store_n((uint32_t*)mc_route_put(ctx, 1, data), r, __ATOMIC_RELAXED);
      mc_signal_set(ctx, 1, sig, r);
    }
  });
  uint32_t stale = 0, last = 0;
  const uint64_t deadline = mc_globaltimer_ns() + 30000 * kMs;
  while (last < kRounds && mc_globaltimer_ns() < deadline) {
    const uint32_t r = mc_ld_acquire_u32(sig1);
    if (r == last) continue;
    if (__atomic_load_n(data1, __ATOMIC_RELAXED) < r) ++stale;
    last = r;
  }
  writer.join();
  CHECK(last == kRounds, "reader saw the last round (%u of %u)", last, kRounds);
  CHECK(stale == 0, "%u rounds showed older data than their signal", stale);
}

// The LL put: word layout, every size and alignment through 1 / 3 / 32 participants, poisoned
// destinations untouched past the message, routes, and a flag that does not match times out
// without delivering.
void testLlPut() {
  World w;
  CHECK(mc_ll_words(0) == 0 && mc_ll_words(1) == 1 && mc_ll_words(4) == 1 && mc_ll_words(5) == 2,
        "words per payload");
  CHECK(mc_ll_slot_bytes(8) == 16 && mc_ll_slot_bytes(9) == 24, "slot bytes");
  CHECK(mc_ll_word(0xA1B2C3D4u, 7) == 0x00000007A1B2C3D4ull, "payload low, flag high");

  std::vector<uint8_t> src(300);
  uint64_t seed = 0x9E3779B97F4A7C15ull;
  for (auto& b : src)
    b = (uint8_t)((seed = seed * 6364136223846793005ull + 1442695040888963407ull) >> 56);
  uint64_t* slot = (uint64_t*)(w.base(0) + 4096);
  uint64_t* peer_slot = (uint64_t*)(w.base(1) + 4096);
  std::vector<uint8_t> dst(400);
  const size_t sizes[] = {1, 3, 4, 5, 8, 13, 64, 127, 256};
  uint32_t flag = 0;
  int cases = 0;
  for (size_t n : sizes) {
    for (size_t soff = 0; soff < 4; ++soff) {
      for (size_t doff = 0; doff < 4; ++doff) {
        for (size_t nt : {(size_t)1, (size_t)3, (size_t)32}) {
          ++flag;
          for (size_t tid = 0; tid < nt; ++tid) {
            CHECK(mc_ll_put(w.ctx, 1, slot, src.data() + soff, n, flag, tid, nt) == kMcRouteOk,
                  "put");
          }
          bool flags_ok = true;
          for (size_t i = 0; i < mc_ll_words(n); ++i)
            flags_ok = flags_ok && (uint32_t)(peer_slot[i] >> 32) == flag;
          CHECK(flags_ok, "every word of n=%zu carries flag %u", n, flag);
          memset(dst.data(), 0xEE, dst.size());
          bool arrived = true;
          for (size_t tid = 0; tid < nt; ++tid) {
            arrived = mc_ll_wait(peer_slot, dst.data() + doff, n, flag,
                                 mc_globaltimer_ns() + 1000 * kMs, tid, nt) &&
                      arrived;
          }
          bool good = arrived && memcmp(dst.data() + doff, src.data() + soff, n) == 0;
          for (size_t i = 0; i < doff; ++i) good = good && dst[i] == 0xEE;
          for (size_t i = doff + n; i < dst.size(); ++i) good = good && dst[i] == 0xEE;
          CHECK(good, "LL n=%zu src+%zu dst+%zu participants=%zu", n, soff, doff, nt);
          if (!good) return;
          ++cases;
        }
      }
    }
  }
  CHECK(cases == 9 * 4 * 4 * 3, "ran %d cases", cases);

  // A stale slot (last flag) does not satisfy the next flag: bounded wait, nothing delivered.
  memset(dst.data(), 0xEE, dst.size());
  uint32_t seen = 0;
  const uint64_t t0 = mc_globaltimer_ns();
  CHECK(!mc_ll_wait(peer_slot, dst.data(), 8, flag + 1, t0 + 20 * kMs, 0, 1, &seen),
        "stale flag must not match");
  CHECK(mc_globaltimer_ns() - t0 >= 20 * kMs, "waited until the deadline");
  CHECK(seen == flag, "seen reports the slot's flag %u (got %u)", flag, seen);
  CHECK(dst[0] == 0xEE && dst[3] == 0xEE, "nothing delivered on timeout");

  CHECK(mc_ll_put(w.ctx, 0, slot, src.data(), 8, 5, 0, 1) == kMcRouteOk &&
            (uint32_t)(slot[1] >> 32) == 5,
        "own rank: the local slot");
  CHECK(mc_ll_put(w.ctx, 2, slot, src.data(), 8, 5, 0, 1) == kMcNoRoute,
        "no RDMA context: no route");
  static int no_qps[1];
  CommCtx rdma = w.ctx;
  rdma.ibgda.qps = (decltype(rdma.ibgda.qps))no_qps;
  CHECK(mc_ll_put(rdma, 2, slot, src.data(), 8, 5, 0, 1) == kMcRdmaUnsupported,
        "RDMA-only rank: unsupported");
  CHECK(*(uint64_t*)(w.base(2) + 4096) == 0, "nothing written to the unreachable rank");
}

// The LL put between two threads: a ping-pong of 12-byte messages whose payload changes every
// round; each side checks every message it receives (no torn, stale or early payload).
void testLlPingPong() {
  World w;
  constexpr uint32_t kRounds = 100000;
  constexpr size_t kBytes = 12;
  auto side = [&w](int me, int peer, bool initiator, uint32_t* bad, uint32_t* done) {
    CommCtx ctx = w.ctx;
    ctx.rank = me;
    ctx.p2p.local_base = w.peer_ptrs[me];
    uint64_t* own = (uint64_t*)(w.base(me) + 8192);
    const uint64_t deadline = mc_globaltimer_ns() + 30000 * kMs;
    for (uint32_t r = 1; r <= kRounds; ++r) {
      uint32_t got[3];
      uint32_t msg[3] = {r, r * 2654435761u + (uint32_t)me, ~r};
      if (!initiator) {
        if (!mc_ll_wait(own, got, kBytes, r, deadline, 0, 1)) return;
        if (got[0] != r || got[1] != r * 2654435761u + (uint32_t)peer || got[2] != ~r) ++*bad;
      }
      // The slot's address is symmetric: route our own slot's offset to the peer.
      mc_ll_put(ctx, peer, (uint64_t*)((uint8_t*)ctx.p2p.local_base + 8192), msg, kBytes, r, 0, 1);
      if (initiator) {
        if (!mc_ll_wait(own, got, kBytes, r, deadline, 0, 1)) return;
        if (got[0] != r || got[1] != r * 2654435761u + (uint32_t)peer || got[2] != ~r) ++*bad;
      }
      *done = r;
    }
  };
  uint32_t bad0 = 0, bad1 = 0, done0 = 0, done1 = 0;
  std::thread b(side, 1, 0, false, &bad1, &done1);
  side(0, 1, true, &bad0, &done0);
  b.join();
  CHECK(done0 == kRounds && done1 == kRounds, "rounds done %u / %u of %u", done0, done1, kRounds);
  CHECK(bad0 == 0 && bad1 == 0, "%u / %u messages with wrong payload", bad0, bad1);
}

// The cooperative copy, as many "threads" would run it, for every size/alignment pair.
void testCooperativeCopy() {
  std::vector<uint8_t> src(512), dst(512);
  for (size_t i = 0; i < src.size(); ++i) src[i] = (uint8_t)(i * 7 + 3);
  const size_t sizes[] = {0, 1, 2, 3, 7, 15, 16, 17, 31, 33, 63, 64, 65, 100, 255, 256, 257};
  const size_t participants[] = {1, 3, 32};
  int cases = 0;
  for (size_t n : sizes) {
    for (size_t soff = 0; soff < 20; ++soff) {
      for (size_t doff = 0; doff < 20; ++doff) {
        for (size_t nt : participants) {
          memset(dst.data(), 0xEE, dst.size());
          uint8_t* d = (uint8_t*)(((uintptr_t)dst.data() + 63) & ~(uintptr_t)63) + doff;
          const uint8_t* s = (const uint8_t*)(((uintptr_t)src.data() + 63) & ~(uintptr_t)63) + soff;
          for (size_t tid = 0; tid < nt; ++tid) mc_copy_cooperative(d, s, n, tid, nt);
          bool good = memcmp(d, s, n) == 0;
          for (uint8_t* p = dst.data(); p < d; ++p) good = good && *p == 0xEE;
          for (uint8_t* p = d + n; p < dst.data() + dst.size(); ++p) good = good && *p == 0xEE;
          CHECK(good, "copy n=%zu src+%zu dst+%zu threads=%zu", n, soff, doff, nt);
          if (!good) return;
          ++cases;
        }
      }
    }
  }
  CHECK(cases > 1000, "ran %d cases", cases);
}

te4j::OpStream* newHostStream() {
  te4j::OpStream* s = te4j::OpStream::create(te4j::kPlatformHost, 0);
  CHECK(s != nullptr && s->status() == te4j::kOk, "host stream: %s", s ? s->lastError() : "null");
  return s;
}

void testStreamOps() {
  World w;
  te4j::OpStream* s = newHostStream();
  if (s == nullptr) return;
  CHECK(s->platform() == te4j::kPlatformHost && s->nativeHandle() == nullptr, "identity");

  // Odd sizes and alignments, to the P2P rank, from a local source.
  std::vector<uint8_t> src(5000);
  for (size_t i = 0; i < src.size(); ++i) src[i] = (uint8_t)(i * 13 + 1);
  const size_t offsets[] = {0, 1, 3, 8, 13};
  const size_t sizes[] = {1, 3, 17, 1000, 4097};
  size_t at = 0;
  for (size_t off : offsets) {
    for (size_t n : sizes) {
      CHECK(s->put(&w.ctx, 1, w.base(0) + at + off, src.data() + off, n, 0, 0) == te4j::kOk,
            "put: %s", s->lastError());
      CHECK(s->synchronize(5000 * kMs) == te4j::kOk, "sync: %s", s->lastError());
      CHECK(memcmp(w.base(1) + at + off, src.data() + off, n) == 0, "put n=%zu off=%zu", n, off);
      CHECK(w.base(0)[at + off] == 0, "put did not write locally");
      at = (at + off + n + 64) % (World::kBytes - 8192);
    }
  }

  // putWithSignal: data then one signal; signal; redAdd.
  uint32_t* sig = w.word(0, World::kBytes - 64);
  CHECK(s->putWithSignal(&w.ctx, 3, w.base(0), src.data(), 777, sig, 4, 0, 0) == te4j::kOk,
        "putWithSignal: %s", s->lastError());
  CHECK(s->signal(&w.ctx, 3, sig, 1) == te4j::kOk, "signal: %s", s->lastError());
  CHECK(s->redAdd(&w.ctx, 0, sig, 10) == te4j::kOk, "redAdd: %s", s->lastError());
  CHECK(s->synchronize(5000 * kMs) == te4j::kOk, "sync: %s", s->lastError());
  CHECK(memcmp(w.base(3), src.data(), 777) == 0, "putWithSignal data");
  CHECK(*w.word(3, World::kBytes - 64) == 5, "rank 3 signal %u", *w.word(3, World::kBytes - 64));
  CHECK(*sig == 10, "own redAdd %u", *sig);

  // Argument checks are immediate, not deferred.
  CHECK(s->put(nullptr, 1, w.base(0), src.data(), 4, 0, 0) == te4j::kInvalidArgument, "null ctx");
  CHECK(s->signal(&w.ctx, 1, (uint32_t*)(w.base(0) + 2), 1) == te4j::kInvalidArgument,
        "misaligned signal word");
  CHECK(s->waitSignal(sig, 1, -1) == te4j::kInvalidArgument, "negative timeout");

  void* graph = (void*)1;
  CHECK(s->beginCapture() == te4j::kUnavailable, "capture is CUDA only");
  CHECK(strstr(s->lastError(), "CUDA only") != nullptr, "message: %s", s->lastError());
  CHECK(s->endCapture(&graph) == te4j::kUnavailable && graph == nullptr, "endCapture");
  delete s;
}

// A waitSignal holds back the put behind it: operations run in submission order.
void testInOrder() {
  World w;
  te4j::OpStream* s = newHostStream();
  if (s == nullptr) return;
  uint32_t* gate = w.word(0, 1024);
  const uint32_t payload = 0xC0FFEE;
  CHECK(s->waitSignal(gate, 1, 5000 * kMs) == te4j::kOk, "%s", s->lastError());
  CHECK(s->put(&w.ctx, 1, w.base(0), &payload, 4, 0, 0) == te4j::kOk, "%s", s->lastError());
  for (uint32_t i = 1; i <= 100; ++i) {
    CHECK(s->signal(&w.ctx, 1, w.word(0, 2048), 1) == te4j::kOk, "%s", s->lastError());
  }
  // synchronize is bounded even while the stream is stuck behind the wait.
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(s->synchronize(20 * kMs) == te4j::kTimeout, "sync should time out: %s", s->lastError());
  const auto took = std::chrono::steady_clock::now() - t0;
  CHECK(took < std::chrono::seconds(2), "synchronize(20 ms) took too long");
  CHECK(*w.word(1, 0) == 0, "put ran before the wait was satisfied");
  mc_st_release_u32(gate, 1);
  CHECK(s->synchronize(5000 * kMs) == te4j::kOk, "%s", s->lastError());
  CHECK(*w.word(1, 0) == payload, "put after the wait: %x", *w.word(1, 0));
  CHECK(*w.word(1, 2048) == 100, "signals in order: %u", *w.word(1, 2048));
  delete s;
}

// A timed-out wait is reported by synchronize, with its message; later ops are skipped until
// then, and the stream works again afterwards.
void testWaitTimeout() {
  World w;
  te4j::OpStream* s = newHostStream();
  if (s == nullptr) return;
  uint32_t* sig = w.word(0, 4096);
  *sig = 3;
  const uint32_t payload = 0x5A5A5A5A;
  CHECK(s->waitSignal(sig, 5, 30 * kMs) == te4j::kOk, "%s", s->lastError());
  CHECK(s->put(&w.ctx, 1, w.base(0), &payload, 4, 0, 0) == te4j::kOk, "%s", s->lastError());
  const int rc = s->synchronize(5000 * kMs);
  CHECK(rc == te4j::kTimeout, "rc %d: %s", rc, s->lastError());
  const std::string msg = s->lastError();
  char addr[32];
  snprintf(addr, sizeof(addr), "%p", (void*)sig);
  CHECK(msg.find("waitSignal timed out") != std::string::npos, "message: %s", msg.c_str());
  CHECK(msg.find("expected>=5 seen 3") != std::string::npos, "message: %s", msg.c_str());
  CHECK(msg.find(addr) != std::string::npos, "message lacks %s: %s", addr, msg.c_str());
  CHECK(msg.find("1 later operation(s) skipped") != std::string::npos, "message: %s", msg.c_str());
  CHECK(*w.word(1, 0) == 0, "the put after the failed wait was skipped");

  CHECK(s->synchronize(5000 * kMs) == te4j::kOk, "error reported once: %s", s->lastError());
  CHECK(s->put(&w.ctx, 1, w.base(0), &payload, 4, 0, 0) == te4j::kOk, "%s", s->lastError());
  CHECK(s->synchronize(5000 * kMs) == te4j::kOk, "usable again: %s", s->lastError());
  CHECK(*w.word(1, 0) == payload, "put after recovery");

  // Wrap-around wait: a counter just past 2^32 satisfies an expectation just below it.
  *sig = 2;
  CHECK(s->waitSignal(sig, 0xFFFFFFFEu, 1000 * kMs) == te4j::kOk, "%s", s->lastError());
  CHECK(s->synchronize(5000 * kMs) == te4j::kOk, "wrapped wait: %s", s->lastError());

  // No route: reported as a device fault naming the rank.
  CHECK(s->signal(&w.ctx, 2, sig, 1) == te4j::kOk, "%s", s->lastError());
  CHECK(s->synchronize(5000 * kMs) == te4j::kDeviceFault, "no route: %s", s->lastError());
  CHECK(strstr(s->lastError(), "rank 2") != nullptr, "message: %s", s->lastError());
  delete s;
}

// A stream closed while waiting returns promptly (the wait polls the stop flag).
void testCloseWhileWaiting() {
  World w;
  te4j::OpStream* s = newHostStream();
  if (s == nullptr) return;
  CHECK(s->waitSignal(w.word(0, 0), 1, 60000 * kMs) == te4j::kOk, "%s", s->lastError());
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const auto t0 = std::chrono::steady_clock::now();
  delete s;
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2), "close took too long");
}

void testFactory() {
  te4j::OpStream* bad = te4j::OpStream::create(7, 0);
  CHECK(bad != nullptr && bad->status() == te4j::kInvalidArgument, "unknown platform");
  delete bad;
  // nullptr is never a stream te4j wraps, with or without CUDA in the build.
  te4j::OpStream* wrapped = te4j::OpStream::wrapCuda(0, nullptr);
  CHECK(wrapped != nullptr && wrapped->status() != te4j::kOk, "wrapCuda(nullptr) refused");
  if (wrapped != nullptr) {
    CHECK(strlen(wrapped->lastError()) > 0, "refusal has a reason");
    CHECK(wrapped->synchronize(0) == wrapped->status(), "refused stream refuses ops");
  }
  delete wrapped;
#if !defined(TE4J_WITH_CUDA)
  te4j::OpStream* cuda = te4j::OpStream::create(te4j::kPlatformCuda, 0);
  CHECK(cuda != nullptr && cuda->status() == te4j::kUnavailable, "no CUDA build");
  CHECK(cuda != nullptr && strstr(cuda->lastError(), "without CUDA") != nullptr, "%s",
        cuda ? cuda->lastError() : "");
  delete cuda;
#endif
}

}  // namespace

int main() {
  testOps();
  testSignalReached();
  testRouting();
  testManyWriters();
  testSignalSet();
  testLlPut();
  testLlPingPong();
  testCooperativeCopy();
  testStreamOps();
  testInOrder();
  testWaitTimeout();
  testCloseWhileWaiting();
  testFactory();
  if (g_failures != 0) {
    fprintf(stderr, "test_host_ops: %d check(s) failed\n", g_failures);
    return 1;
  }
  printf("test_host_ops: all checks passed\n");
  return 0;
}
