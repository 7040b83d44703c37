// test_rdma_softnic_pipeline.cpp — the software NIC with many requests in flight: two
// host-platform ranks (fork) joined over TCP, rank 0 posting with the device primitives.
//
//   1. 4000 puts of random sizes (1 B .. 16 KiB) back to back on one QP through a 64-WQEBB
//      ring, with a signal every 250 puts and no quiet in between: the ring fills again and
//      again (posts wait for slots: back-pressure), and rank 1 checks every byte and every
//      signal count, rank 0 that every posted WQEBB completed and no CQ was overrun.
//   2. A peer that stops reading (rank 1 stopped with SIGSTOP) while 64 MiB are posted to it:
//      rank 0's quiet with a 1 s bound returns kMcRdmaTimeout within a few seconds instead of
//      hanging; once rank 1 runs again every request completes and the data is whole.
// TE4J_TIMEOUT_SCALE multiplies every bound (sanitizer runs).
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "softnic_pair.h"
#include "te4j/rdma_api.h"
#include "transport/device/ibgda_device.cuh"

using namespace mooncake::device;

namespace {

constexpr int kRanks = 2;
constexpr int kQpsPerRank = 1;
constexpr size_t kMiB = 1u << 20;
constexpr int kPuts = 4000;
constexpr int kSignalEvery = 250;
constexpr size_t kMaxPut = 16384;
constexpr size_t kSrc = 0;              // rank 0's source: the same offsets as the destination
constexpr size_t kArea = 64 * kMiB;     // phase 1 uses the first kPuts * kMaxPut bytes at most
constexpr size_t kDst = kArea;          // rank 1's destination of phase 1
constexpr size_t kStalled = 32 * kMiB;  // phase 2: two puts of this size
// Phase 2 writes fresh bytes, none that phase 1 checked (softnic_pair.h: the order through the
// other process is real but invisible to ThreadSanitizer).
constexpr size_t kDstStalled = kDst + kArea;
constexpr size_t kSig = kDstStalled + kStalled;  // signal words
constexpr size_t kBytes = kSig + 4096;
static_assert((size_t)kPuts * kMaxPut <= kArea, "phase 1 fits its area");

using namespace softnic_pair;

uint32_t* sigWord(uint8_t* base, int i) { return (uint32_t*)(base + kSig) + i; }

uint8_t patternAt(size_t i) { return (uint8_t)((i * 2654435761u) >> 13); }

bool connect(te4j::RdmaTransport* t, IbgdaContext* ctx) { return connectPair(t, kQpsPerRank, ctx); }

void qpState(te4j::RdmaTransport* t, int qp, int64_t out[8]) {
  CHECK(t->queryQpError(qp, out, 8) == 8, "queryQpError: %s", t->lastError());
}

int runRank(int rank) {
  g_rank = rank;
  uint8_t* base = (uint8_t*)aligned_alloc(4096, kBytes);
  std::memset(base, 0, kBytes);
  te4j::RdmaTransport* t =
      te4j::RdmaTransport::create(te4j::kPlatformHost, 0, te4j::kRdmaBackendSoft);
  CHECK(t->status() == 0, "create: %s", t->lastError());
  CHECK(t->initialize("soft@127.0.0.1", kRanks, kRanks * kQpsPerRank) == 0, "initialize: %s",
        t->lastError());
  CHECK(t->registerMemory(base, kBytes) == 0, "register: %s", t->lastError());
  CHECK(t->setRingSize(64) == 0, "ring: %s", t->lastError());
  CHECK(t->setDeviceTimeoutNs(20000000000ll * timeoutScale()) == 0, "timeout");
  CHECK(t->createQueuePairs(nullptr) == 0, "create QPs: %s", t->lastError());
  IbgdaContext ctx;
  if (!connect(t, &ctx)) return 1;
  const int peer = 1;
  const int qp01 = peer * kQpsPerRank;

  // Both ranks draw the same sizes.
  std::mt19937 rng(20261201u);
  std::vector<size_t> at(kPuts), len(kPuts);
  size_t end = 0;
  for (int i = 0; i < kPuts; ++i) {
    len[i] = 1 + rng() % kMaxPut;
    at[i] = end;
    end += len[i];
  }

  // 1. Thousands in flight, random sizes, ring full over and over.
  if (rank == 0) {
    for (size_t i = 0; i < end; ++i) base[kSrc + i] = patternAt(i);
    int64_t before[8];
    qpState(t, qp01, before);
    const auto t0 = std::chrono::steady_clock::now();
    int posted_bbs = 0;
    for (int i = 0; i < kPuts; ++i) {
      const int rc = mc_rdma_put(ctx, 0, peer, kQpsPerRank, base + kSrc + at[i],
                                 base + kDst + at[i], len[i], 0);
      CHECK(rc == kMcRdmaOk, "put %d of %zu B: status %d", i, len[i], rc);
      ++posted_bbs;
      if ((i + 1) % kSignalEvery == 0) {
        CHECK(mc_rdma_atomic_add(ctx, 0, peer, kQpsPerRank, sigWord(base, 0), 1) == kMcRdmaOk,
              "signal after %d", i);
        ++posted_bbs;
      }
      if (g_fail) break;
    }
    CHECK(mc_rdma_quiet(ctx, 0, peer, kQpsPerRank) == kMcRdmaOk, "quiet after %d puts", kPuts);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    int64_t e[8];
    qpState(t, qp01, e);
    CHECK(e[0] == 0, "error CQEs: %lld", (long long)e[0]);
    CHECK(e[6] - before[6] == posted_bbs && e[7] == e[6],
          "posted %lld WQEBBs (expected %d), completed %lld", (long long)(e[6] - before[6]),
          posted_bbs, (long long)(e[7] - before[6]));
    int64_t st[17];
    CHECK(t->statistics(st, 17) == 16, "stats");
    CHECK(st[1] == 0 && st[2] == 0 && st[8] == 0 && st[4] == 0,
          "contract violations, CQ overruns or local errors: %s", t->diagnostics());
    std::printf("rank 0: %d puts (%.1f MiB, random sizes) through a 64-WQEBB ring in %.1f ms\n",
                kPuts, (double)end / kMiB, ms);
  } else {
    const uint32_t signals = kPuts / kSignalEvery;
    CHECK(waitValue(sigWord(base, 0), signals, 60 * timeoutScale()), "signals: %u of %u",
          __atomic_load_n(sigWord(base, 0), __ATOMIC_ACQUIRE), signals);
    CHECK(__atomic_load_n(sigWord(base, 0), __ATOMIC_ACQUIRE) == signals, "signal overshoot");
    size_t bad = 0;
    size_t first_bad = 0;
    for (size_t i = 0; i < end; ++i) {
      if (base[kDst + i] != patternAt(i) && bad++ == 0) first_bad = i;
    }
    CHECK(bad == 0, "%zu of %zu bytes differ, the first at %zu", bad, end, first_bad);
    CHECK(base[kDst + end] == 0, "a byte past the last put was written");
  }
  barrier();
  std::printf("rank %d: thousands in flight with random sizes done\n", rank);

  // 2. A peer that stops reading: rank 1 stops itself; rank 0 posts more than the sockets
  // buffer and quiets with a short bound.
  if (rank == 1) {
    barrier();
    raise(SIGSTOP);  // rank 0 continues it
    barrier();
    CHECK(waitValue(sigWord(base, 1), 1, 60 * timeoutScale()), "signal after the stall never came");
    bool ok = true;
    for (size_t i = 0; i < kStalled && ok; ++i) ok = base[kDstStalled + i] == patternAt(i);
    CHECK(ok, "data after the stall");
  } else {
    for (size_t i = 0; i < kStalled; ++i) base[kSrc + i] = patternAt(i);
    barrier();
    int status = 0;
    CHECK(waitpid(g_child, &status, WUNTRACED) == g_child && WIFSTOPPED(status),
          "rank 1 did not stop");
    for (int k = 0; k < 2; ++k)
      CHECK(mc_rdma_put(ctx, 0, peer, kQpsPerRank, base + kSrc, base + kDstStalled, kStalled, 0) ==
                kMcRdmaOk,
            "stalled put");
    CHECK(mc_rdma_atomic_add(ctx, 0, peer, kQpsPerRank, sigWord(base, 1), 1) == kMcRdmaOk,
          "stalled signal");
    IbgdaContext quick = ctx;
    quick.timeout_ns = 1000000000ull * timeoutScale();
    const auto t0 = std::chrono::steady_clock::now();
    const int rc = mc_rdma_quiet(quick, 0, peer, kQpsPerRank);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CHECK(rc == kMcRdmaTimeout,
          "quiet against a peer that does not read: status %d (expected a timeout)", rc);
    CHECK(s < 5.0 * timeoutScale(), "the bounded quiet took %.1f s", s);
    std::printf("rank 0: quiet against a stopped peer timed out after %.2f s\n", s);
    kill(g_child, SIGCONT);
    barrier();
    CHECK(mc_rdma_quiet(ctx, 0, peer, kQpsPerRank) == kMcRdmaOk, "quiet once the peer reads again");
    int64_t e[8];
    qpState(t, qp01, e);
    CHECK(e[0] == 0 && e[7] == e[6], "after the stall: errors %lld, pi %lld, ci %lld",
          (long long)e[0], (long long)e[6], (long long)e[7]);
  }
  barrier();
  std::printf("rank %d: peer that stops reading done\n", rank);
  delete t;
  std::free(base);
  std::printf("rank %d: %s\n", rank, g_fail ? "FAILED" : "ok");
  return g_fail ? 1 : 0;
}

}  // namespace

int main() { return softnic_pair::runPair("test_rdma_softnic_pipeline", runRank); }
