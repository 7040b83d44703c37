// test_rdma_softnic.cpp — two host-platform ranks (fork) joined by the software NIC over TCP.
//
// Rank 0 posts with the device primitives (compiled for the host platform), rank 1 checks:
// puts 1 B .. 64 MiB, each followed by a signal on the same QP (the signal is never visible
// before the data), red-add totals from 8 threads over 2 channels, ring wraparound (ring of 16
// WQEBBs), error CQEs for a bad rkey, an out-of-range address and a bad lkey, flushes after an
// error, many threads posting and quieting concurrently on one QP from both ranks at once,
// recreateQueuePairs + reconnect, and the loss of rank 1 as rank 0's NIC sees it. Every wait is
// bounded and fails with a message;
// TE4J_TIMEOUT_SCALE (scripts/sanitize.sh sets it) multiplies every bound.
//
// Every put lands in bytes no earlier phase wrote or read. Rank 1 reads a destination (after
// acquiring its signal) and only then, through the barrier to rank 0 (another process) and rank
// 0's next request over TCP, does its responder thread write more data; ThreadSanitizer tracks
// synchronisation inside one process only, so rewriting bytes rank 1 had read would be reported
// as a race although that order is real. Fresh destinations leave TSan only the in-process order
// it does see: data written by the responder before the signal's fetch-and-add (a release RMW on
// the same thread), which the waiter acquires.
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "softnic_pair.h"
#include "te4j/rdma_api.h"
#include "transport/device/ibgda_device.cuh"

using namespace mooncake::device;

namespace {

constexpr int kRanks = 2;
constexpr int kQpsPerRank = 2;
constexpr size_t kMiB = 1u << 20;
const size_t kSizes[] = {1, 7, 64, 4096, 65537, kMiB, 16 * kMiB, 64 * kMiB};
constexpr int kNumSizes = sizeof(kSizes) / sizeof(kSizes[0]);
constexpr size_t kSrc = 0;                        // rank 0's source area (64 MiB)
constexpr size_t kDst = 64 * kMiB;                // rank 1's destinations of phase 1, one per size
constexpr size_t kDstWrap = 146 * kMiB;           // phase 3 (4000 B)
constexpr size_t kDstRecover = kDstWrap + 65536;  // phase 5 (4 KiB)
constexpr size_t kDstMany = kDstRecover + 65536;  // phase 3b (8 threads x 300 x 8 B)
constexpr size_t kSig = kDstMany + 65536;         // signal words
constexpr size_t kBytes = kSig + 4096;

// Destination of size i in phase 1: the sizes before it, each rounded up to 4 KiB.
size_t dstOf(int i) {
  size_t at = kDst;
  for (int k = 0; k < i; ++k) at += (kSizes[k] + 4095) & ~(size_t)4095;
  return at;
}
static_assert(kDst + 82 * kMiB <= kDstWrap, "phase-1 destinations overlap phase 3");

using namespace softnic_pair;

uint32_t* sigWord(uint8_t* base, int i) { return (uint32_t*)(base + kSig + 4 * i); }

// Exchanges metadata and connects; returns the filled context.
bool connect(te4j::RdmaTransport* t, IbgdaContext* ctx) {
  PeerTables tables;
  if (!exchangeMetadata(t, kQpsPerRank, &tables)) return false;
  CHECK(tables.header_ok, "metadata header");
  // A mask naming a rank the job does not have is refused, not skipped (found by
  // fuzz_rdma_metadata).
  CHECK(connectWith(t, tables, 3 | 1ull << kRanks) == te4j::kInvalidArgument,
        "connectPeers took a mask with a bit past num_ranks");
  CHECK(connectWith(t, tables, 1ull << 63) == te4j::kInvalidArgument,
        "connectPeers took a mask with bit 63");
  return connectBoth(t, tables, ctx);
}

void fillPattern(uint8_t* p, size_t n, uint32_t seed) {
  for (size_t i = 0; i < n; ++i) p[i] = (uint8_t)((i * 131 + seed * 7 + (i >> 12)) & 0xff);
}
bool checkPattern(const uint8_t* p, size_t n, uint32_t seed) {
  for (size_t i = 0; i < n; ++i)
    if (p[i] != (uint8_t)((i * 131 + seed * 7 + (i >> 12)) & 0xff)) {
      std::printf("  mismatch at byte %zu of %zu\n", i, n);
      return false;
    }
  return true;
}

void qpError(te4j::RdmaTransport* t, int qp, int64_t out[8]) {
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
  CHECK(t->setRingSize(16) == 0, "ring: %s", t->lastError());
  CHECK(t->setDeviceTimeoutNs(20000000000ll * timeoutScale()) == 0, "timeout");
  CHECK(t->createQueuePairs(nullptr) == 0, "create QPs: %s", t->lastError());
  IbgdaContext ctx;
  if (!connect(t, &ctx)) return 1;
  const int peer = 1;
  const int qp01 = peer * kQpsPerRank + 0;  // rank 0's QP to rank 1, channel 0

  // 1. Puts 1 B .. 64 MiB, each followed by a signal on the same channel.
  const size_t* sizes = kSizes;
  const int nsizes = kNumSizes;
  if (rank == 0) {
    for (int i = 0; i < nsizes; ++i) {
      fillPattern(base + kSrc, sizes[i], i);
      CHECK(mc_rdma_put(ctx, 0, peer, kQpsPerRank, base + kSrc, base + dstOf(i), sizes[i], 0) == 0,
            "put %zu", sizes[i]);
      CHECK(mc_rdma_atomic_add(ctx, 0, peer, kQpsPerRank, sigWord(base, 0), 1) == 0, "signal");
      // The source is reused next round: wait until the NIC has sent it.
      CHECK(mc_rdma_quiet(ctx, 0, peer, kQpsPerRank) == 0, "quiet after %zu", sizes[i]);
      barrier();  // rank 1 has checked this size before the next one overwrites it
    }
  } else {
    for (int i = 0; i < nsizes; ++i) {
      CHECK(waitValue(sigWord(base, 0), i + 1, seconds(60)), "signal %d never came", i + 1);
      // The signal is the last request of its QP: the data must already be complete.
      CHECK(checkPattern(base + dstOf(i), sizes[i], i), "data of put %zu before its signal",
            sizes[i]);
      barrier();
    }
  }
  std::printf("rank %d: puts 1 B..64 MiB with signals done\n", rank);

  // 2. Red-add totals: 8 threads x 500 adds over both channels (one lock per QP).
  if (rank == 0) {
    std::vector<std::thread> threads;
    for (int th = 0; th < 8; ++th)
      threads.emplace_back([&, th] {
        for (int k = 0; k < 500; ++k)
          if (mc_rdma_atomic_add(ctx, th + k, peer, kQpsPerRank, sigWord(base, 1), 3) != 0) {
            CHECK(false, "red add");
            return;
          }
      });
    for (auto& th : threads) th.join();
    CHECK(mc_rdma_quiet_all(ctx) == 0, "quiet_all after red adds");
  } else {
    CHECK(waitValue(sigWord(base, 1), 8 * 500 * 3, seconds(60)), "red-add total %u != 12000",
          __atomic_load_n(sigWord(base, 1), __ATOMIC_ACQUIRE));
    CHECK(__atomic_load_n(sigWord(base, 1), __ATOMIC_ACQUIRE) == 12000,
          "red-add total overshoot %u", __atomic_load_n(sigWord(base, 1), __ATOMIC_ACQUIRE));
  }
  barrier();

  // 3. Ring wraparound: 1000 small puts through a 16-WQEBB ring, then a signal.
  if (rank == 0) {
    int64_t before[8];
    qpError(t, peer * kQpsPerRank + 1, before);
    for (int k = 0; k < 1000; ++k) {
      *(uint32_t*)(base + kSrc + 4 * k) = 0xa5000000u + k;
      CHECK(mc_rdma_put(ctx, 1, peer, kQpsPerRank, base + kSrc + 4 * k, base + kDstWrap + 4 * k, 4,
                        0) == 0,
            "wrap put %d", k);
    }
    CHECK(mc_rdma_atomic_add(ctx, 1, peer, kQpsPerRank, sigWord(base, 2), 1) == 0, "wrap signal");
    CHECK(mc_rdma_quiet(ctx, 1, peer, kQpsPerRank) == 0, "wrap quiet");
    int64_t e[8];
    qpError(t, peer * kQpsPerRank + 1, e);
    CHECK(e[6] - before[6] == 1001 && e[7] == e[6], "wrap counters pi %lld ci %lld (before %lld)",
          (long long)e[6], (long long)e[7], (long long)before[6]);
  } else {
    CHECK(waitValue(sigWord(base, 2), 1, seconds(60)), "wrap signal never came");
    bool ok = true;
    for (int k = 0; k < 1000; ++k)
      ok = ok && *(uint32_t*)(base + kDstWrap + 4 * k) == 0xa5000000u + k;
    CHECK(ok, "wraparound data");
  }
  barrier();

  // 3b. Many concurrent posters AND quieters on ONE QP, both ranks at once (the GPU's
  // many-writers shape: several kernels each doing put + add + quiet on channel 0 to the peer).
  // Every thread runs mc_rdma_put_signal_quiet, the stream kernels' RDMA op, so the QP lock,
  // ring-slot waits through the 16-WQEBB ring, CQ wrap, lock-free quiets and doorbells that
  // cover other posters' WQEs are all exercised concurrently; then each rank checks the total,
  // that every posted WQEBB completed, and that the NIC saw no doorbell contract violation.
  {
    constexpr int kPosters = 8;
    const int ops = 300;
    const int target = 1 - rank;
    const int qp_to_peer = target * kQpsPerRank + 0;
    int64_t before[8];
    qpError(t, qp_to_peer, before);
    std::atomic<int> bad{0};  // threads count failures; the main thread CHECKs (g_fail is plain)
    std::vector<std::thread> threads;
    for (int th = 0; th < kPosters; ++th)
      threads.emplace_back([&, th] {
        for (int k = 0; k < ops; ++k) {
          // Odd threads put 8 bytes first (to a destination nobody reads), even ones add only.
          const uint64_t nbytes = (th & 1) ? 8 : 0;
          uint8_t* dst = base + kDstMany + ((size_t)th * ops + k) * 8;
          const int rc = mc_rdma_put_signal_quiet(ctx, target, base + kSrc, dst, nbytes,
                                                  sigWord(base, 5), 1, nullptr);
          if (rc != kMcRdmaOk) {
            std::printf("rank %d: concurrent poster %d op %d: status %d\n", rank, th, k, rc);
            bad.fetch_add(1);
            return;
          }
        }
      });
    for (auto& th : threads) th.join();
    CHECK(bad.load() == 0, "%d concurrent posters failed", bad.load());
    CHECK(mc_rdma_quiet(ctx, 0, target, kQpsPerRank) == 0, "quiet after concurrent posters");
    int64_t e[8];
    qpError(t, qp_to_peer, e);
    const int64_t expected_bbs = (int64_t)kPosters * ops + (kPosters / 2) * ops;
    CHECK(e[0] == 0 && e[6] - before[6] == expected_bbs && e[7] == e[6],
          "concurrent posters: errors %lld, posted %lld (expected %lld), completed %lld",
          (long long)e[0], (long long)(e[6] - before[6]), (long long)expected_bbs,
          (long long)(e[7] - before[6]));
    const uint32_t total = (uint32_t)(kPosters * ops);
    CHECK(waitValue(sigWord(base, 5), total, seconds(60)), "concurrent-poster total %u != %u",
          __atomic_load_n(sigWord(base, 5), __ATOMIC_ACQUIRE), total);
    int64_t st[16];
    CHECK(t->statistics(st, 16) == 16, "stats");
    CHECK(st[1] == 0 && st[2] == 0 && st[8] == 0, "doorbell contract violations / CQ overruns: %s",
          t->diagnostics());
  }
  barrier();
  std::printf("rank %d: concurrent posters and quieters on one QP done\n", rank);

  // 4. Error CQEs: bad rkey, then flushes of what follows; out-of-range; bad lkey.
  if (rank == 0) {
    uint32_t bad_keys[kRanks] = {ctx.rkeys[0], ctx.rkeys[1] ^ 0x100u};
    IbgdaContext bad = ctx;
    bad.rkeys = bad_keys;
    CHECK(mc_rdma_put(bad, 0, peer, kQpsPerRank, base + kSrc, base + kDst, 64, 0) == 0,
          "bad-key put posts");
    for (int k = 0; k < 5; ++k)
      CHECK(mc_rdma_put(ctx, 0, peer, kQpsPerRank, base + kSrc, base + kDst, 64, 0) == 0,
            "post behind the error");
    CHECK(mc_rdma_atomic_add(ctx, 0, peer, kQpsPerRank, sigWord(base, 3), 1) == 0,
          "signal behind the error");
    CHECK(mc_rdma_quiet(ctx, 0, peer, kQpsPerRank) == kMcRdmaQpError, "quiet reports the error");
    int64_t e[8];
    qpError(t, qp01, e);
    CHECK(e[1] == mlx5::kSyndromeRemoteAccessErr, "bad rkey syndrome 0x%llx", (long long)e[1]);
    CHECK(e[3] == mlx5::kCqeReqErr, "error CQE opcode %lld", (long long)e[3]);
    CHECK(e[0] == 7, "first error + 6 flushes, got %lld error CQEs", (long long)e[0]);
    CHECK(mc_rdma_put(ctx, 0, peer, kQpsPerRank, base + kSrc, base + kDst, 64, 0) == kMcRdmaQpError,
          "a QP in error refuses new posts");

    // Out of range on channel 1: raddr past the end of rank 1's region.
    CHECK(mc_rdma_put(ctx, 1, peer, kQpsPerRank, base + kSrc, base + kBytes - 8, 64, 0) == 0,
          "oob put posts");
    CHECK(mc_rdma_quiet(ctx, 1, peer, kQpsPerRank) == kMcRdmaQpError, "oob quiet");
    qpError(t, peer * kQpsPerRank + 1, e);
    CHECK(e[1] == mlx5::kSyndromeRemoteAccessErr, "oob syndrome 0x%llx", (long long)e[1]);

    // Bad lkey on the loopback QP to rank 0 itself: a local protection error.
    IbgdaContext badl = ctx;
    badl.lkey ^= 0x100u;
    CHECK(mc_rdma_put(badl, 0, 0, kQpsPerRank, base + kSrc, base + kDst, 64, 0) == 0,
          "bad-lkey put posts");
    CHECK(mc_rdma_quiet(ctx, 0, 0, kQpsPerRank) == kMcRdmaQpError, "bad lkey quiet");
    qpError(t, 0, e);
    CHECK(e[1] == mlx5::kSyndromeLocalProtErr, "bad lkey syndrome 0x%llx", (long long)e[1]);
    int64_t st[16];
    CHECK(t->statistics(st, 16) == 16, "stats");
    CHECK(st[1] == 0 && st[2] == 0, "doorbell contract violations: %s", t->diagnostics());
  } else {
    // Nothing behind the bad request may have executed (the signal stays 0).
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    CHECK(__atomic_load_n(sigWord(base, 3), __ATOMIC_ACQUIRE) == 0,
          "a request behind a failed one executed");
  }
  barrier();
  std::printf("rank %d: error CQEs and flushes done\n", rank);

  // 5. Recovery: recreate at both ends, reconnect, and a put + signal works again.
  CHECK(t->recreateQueuePairs(nullptr) == 0, "recreate: %s", t->lastError());
  if (!connect(t, &ctx)) return 1;
  if (rank == 0) {
    fillPattern(base + kSrc, 4096, 99);
    CHECK(mc_rdma_put(ctx, 0, peer, kQpsPerRank, base + kSrc, base + kDstRecover, 4096, 0) == 0,
          "put after recreate");
    CHECK(mc_rdma_atomic_add(ctx, 0, peer, kQpsPerRank, sigWord(base, 4), 1) == 0,
          "signal after recreate");
    CHECK(mc_rdma_quiet(ctx, 0, peer, kQpsPerRank) == 0, "quiet after recreate");
  } else {
    CHECK(waitValue(sigWord(base, 4), 1, seconds(30)), "signal after recreate never came");
    CHECK(checkPattern(base + kDstRecover, 4096, 99), "data after recreate");
  }
  barrier();

  // 6. Peer loss: rank 1 closes its transport (its sockets close, as a killed process's would).
  // Rank 0's NIC records the loss, and a post to rank 1 fails at once with "transport retry
  // exceeded" instead of waiting out the quiet's device timeout.
  if (rank == 1) {
    delete t;
    t = nullptr;
  }
  barrier();
  if (rank == 0) {
    int32_t lost[kRanks] = {0, 0};
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds(10));
    while (t->lostPeers(lost, kRanks) == kRanks && lost[1] == 0 &&
           std::chrono::steady_clock::now() < end)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    CHECK(lost[1] == te4j::RdmaTransport::kPeerClosedConnection, "rank 1's loss not recorded: %d",
          lost[1]);
    CHECK(lost[0] == 0, "the own rank counted as lost: %d", lost[0]);
    CHECK(mc_rdma_put(ctx, 0, peer, kQpsPerRank, base + kSrc, base + kDstRecover, 64, 0) == 0,
          "put to a lost peer");
    CHECK(mc_rdma_quiet(ctx, 0, peer, kQpsPerRank) == kMcRdmaQpError,
          "quiet to a lost peer: an error CQE, not a timeout");
    int64_t e[8];
    qpError(t, peer * kQpsPerRank, e);
    CHECK(e[1] == mlx5::kSyndromeTransportRetryExcErr, "lost peer syndrome 0x%llx",
          (long long)e[1]);
  }
  barrier();
  std::printf("rank %d: peer loss done\n", rank);
  delete t;
  std::free(base);
  std::printf("rank %d: %s\n", rank, g_fail ? "FAILED" : "ok");
  return g_fail ? 1 : 0;
}

}  // namespace

int main() { return softnic_pair::runPair("test_rdma_softnic", runRank); }
