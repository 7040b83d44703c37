// test_rdma_softnic_stream.cpp — the host OpStream over the software NIC: two host-platform
// ranks (fork) joined over TCP play a put+signal ping-pong through their OpStreams, as the Java
// API and te4j-bench do, with sizes inside the responder's receive buffer (8 B .. 16 KiB)
// alternating with payloads larger than it (96 KiB, 1 MiB). Every round lands in fresh bytes
// (softnic_pair.h) and is checked byte for byte with the signal count; at the end no error
// CQE, no contract violation. The contexts' routes follow the RDMA tables (own rank mapped, the
// peer over RDMA once filled, unreachable once cleared).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "softnic_pair.h"
#include "te4j/api.h"
#include "te4j/rdma_api.h"
#include "transport/device/comm_device.cuh"
#include "transport/device/ibgda_device.cuh"

using namespace mooncake::device;

namespace {

using namespace softnic_pair;

constexpr int kRanks = 2;
constexpr int kQpsPerRank = 1;
constexpr size_t kKiB = 1024;
constexpr int kRounds = 120;
constexpr size_t kSizes[] = {8, 4 * kKiB, 96 * kKiB, 1, 16 * kKiB, 1024 * kKiB};
constexpr int kNumSizes = sizeof(kSizes) / sizeof(kSizes[0]);
constexpr size_t kSrc = 0;                   // the own source, rewritten every round
constexpr size_t kDst = 1024 * kKiB + 4096;  // the rounds' destinations, one after another
constexpr size_t kSig = kDst + 32 * 1024 * kKiB;
constexpr size_t kWindow = kSig + 4096;

uint8_t patternAt(size_t i, int round, int rank) {
  return (uint8_t)((i * 2654435761u + round * 131 + rank * 7) >> 5);
}

constexpr size_t sizeOf(int round) { return kSizes[round % kNumSizes]; }

// Where round lands: after the earlier rounds, each with at least 64 untouched bytes behind it.
constexpr size_t dstOf(int round) {
  size_t at = kDst;
  for (int k = 0; k < round; ++k) at += (sizeOf(k) + 64 + 4095) & ~(size_t)4095;
  return at;
}

// The peer's put of `round` reached this rank: its bytes, and nothing past them.
bool checkRound(const uint8_t* win, int round, int from) {
  const size_t n = sizeOf(round);
  const uint8_t* at = win + dstOf(round);
  for (size_t i = 0; i < n; ++i)
    if (at[i] != patternAt(i, round, from)) {
      std::printf("  round %d: byte %zu of %zu is %u, want %u\n", round, i, n, at[i],
                  patternAt(i, round, from));
      return false;
    }
  return at[n] == 0;
}
static_assert(dstOf(kRounds) <= kSig, "the rounds fit before the signal word");

int runRank(int rank) {
  g_rank = rank;
  const int peer = 1 - rank;
  te4j::P2pTransport* p2p = te4j::P2pTransport::create(te4j::kPlatformHost, 0, kRanks);
  CHECK(p2p != nullptr && p2p->status() == 0, "P2pTransport::create: %s",
        p2p ? p2p->lastError() : "null");
  void* mem = nullptr;
  CHECK(p2p->allocateBuffer(kWindow, &mem) == 0, "allocateBuffer: %s", p2p->lastError());
  uint8_t* win = (uint8_t*)mem;
  if (win == nullptr) return 1;
  std::memset(win, 0, kWindow);
  // Only the own rank is mapped (the peer is reached over RDMA alone): no handles exchanged.
  std::vector<int32_t> handles((size_t)kRanks * p2p->handleInts(), 0);
  const int window = p2p->importPeerHandles(win, rank, kRanks, handles.data(), 1ull << rank);
  CHECK(window >= 0, "importPeerHandles: %s", p2p->lastError());
  CommCtx* ctx = te4j::newCommCtx();
  CHECK(p2p->makeCommCtx(window, ctx) == 0, "makeCommCtx: %s", p2p->lastError());
  CHECK(
      mooncake::device::mc_decided_route(*ctx, rank) == mooncake::device::kMcRankRouteSameDevice &&
          mooncake::device::mc_decided_route(*ctx, peer) == mooncake::device::kMcRankRouteNone,
      "routes before RDMA: own %d, peer %d", mooncake::device::mc_decided_route(*ctx, rank),
      mooncake::device::mc_decided_route(*ctx, peer));
  te4j::OpStream* stream = te4j::OpStream::create(te4j::kPlatformHost, 0);
  CHECK(stream != nullptr && stream->status() == 0, "OpStream::create: %s",
        stream ? stream->lastError() : "null");
  te4j::RdmaTransport* t =
      te4j::RdmaTransport::create(te4j::kPlatformHost, 0, te4j::kRdmaBackendSoft);
  CHECK(t->status() == 0, "create: %s", t->lastError());
  CHECK(t->initialize("soft@127.0.0.1", kRanks, kRanks * kQpsPerRank) == 0, "initialize: %s",
        t->lastError());
  CHECK(t->registerMemory(win, kWindow) == 0, "register: %s", t->lastError());
  CHECK(t->setRingSize(64) == 0, "ring: %s", t->lastError());
  CHECK(t->setDeviceTimeoutNs(20000000000ll * timeoutScale()) == 0, "timeout");
  CHECK(t->createQueuePairs(stream->nativeHandle()) == 0, "create QPs: %s", t->lastError());
  PeerTables tables;
  bool ok = g_fail == 0 && exchangeMetadata(t, kQpsPerRank, &tables);
  if (ok) {
    const int s = connectWith(t, tables, 3);
    CHECK(s == 0, "connectPeers: %s", t->lastError());
    barrier();  // both ends connected before anyone posts
    CHECK(t->fillCommCtx(ctx) == 0, "fillCommCtx: %s", t->lastError());
    CHECK(mooncake::device::mc_decided_route(*ctx, rank) ==
                  mooncake::device::kMcRankRouteSameDevice &&
              mooncake::device::mc_decided_route(*ctx, peer) == mooncake::device::kMcRankRouteRdma,
          "routes with RDMA: own %d, peer %d", mooncake::device::mc_decided_route(*ctx, rank),
          mooncake::device::mc_decided_route(*ctx, peer));
    ok = g_fail == 0;
  }
  const int64_t timeout = 20000000000ll * timeoutScale();
  uint32_t* sig = (uint32_t*)(win + kSig);
  for (int round = 0; ok && round < kRounds; ++round) {
    const size_t n = sizeOf(round);
    // Rank 0 serves first; rank 1 answers each round with a put of the same size.
    if (rank == 1) {
      CHECK(stream->waitSignal(sig, (uint32_t)round + 1, timeout) == 0, "waitSignal %d: %s", round,
            stream->lastError());
      CHECK(stream->synchronize(timeout) == 0, "synchronize: %s", stream->lastError());
      CHECK(checkRound(win, round, peer), "round %d: data of rank %d's %zu B put", round, peer, n);
      // Before the answer: once it is out, rank 0's next round may raise the word again.
      CHECK(__atomic_load_n(sig, __ATOMIC_ACQUIRE) == (uint32_t)round + 1,
            "signal count %u in round %d", __atomic_load_n(sig, __ATOMIC_ACQUIRE), round);
    }
    for (size_t i = 0; i < n; ++i) win[kSrc + i] = patternAt(i, round, rank);
    uint8_t* dst = win + dstOf(round);  // the same offset in the peer's window
    CHECK(stream->putWithSignal(ctx, peer, dst, win + kSrc, n, sig, 1, 0, 0) == 0,
          "putWithSignal: %s", stream->lastError());
    if (rank == 0)
      CHECK(stream->waitSignal(sig, (uint32_t)round + 1, timeout) == 0, "waitSignal %d: %s", round,
            stream->lastError());
    CHECK(stream->synchronize(timeout) == 0, "synchronize after round %d: %s", round,
          stream->lastError());
    if (rank == 0) {
      CHECK(checkRound(win, round, peer), "round %d: data of rank %d's %zu B put", round, peer, n);
      CHECK(__atomic_load_n(sig, __ATOMIC_ACQUIRE) == (uint32_t)round + 1,
            "signal count %u after round %d", __atomic_load_n(sig, __ATOMIC_ACQUIRE), round);
    }
    ok = g_fail == 0;
  }
  if (ok) {
    int64_t e[8];
    CHECK(t->queryQpError(peer * kQpsPerRank, e, 8) == 8, "queryQpError: %s", t->lastError());
    CHECK(e[0] == 0 && e[7] == e[6], "errors %lld, pi %lld, ci %lld", (long long)e[0],
          (long long)e[6], (long long)e[7]);
    int64_t st[17];
    CHECK(t->statistics(st, 17) == 16, "stats");
    CHECK(st[1] == 0 && st[2] == 0 && st[4] == 0 && st[8] == 0,
          "contract violations or local errors: %s", t->diagnostics());
    std::printf("rank %d: %d ping-pong rounds through the OpStreams, data verified\n", rank,
                kRounds);
  }
  // Nobody frees its window while the peer may still write into it.
  barrier();
  te4j::RdmaTransport::clearCommCtx(ctx);
  CHECK(mooncake::device::mc_decided_route(*ctx, peer) == mooncake::device::kMcRankRouteNone,
        "cleared: the peer reaches nothing");
  te4j::destroyObject(stream);
  te4j::destroyObject(t);
  p2p->freeBuffer(win);
  te4j::destroyObject(p2p);
  te4j::deleteCommCtx(ctx);
  std::printf("rank %d: %s\n", rank, g_fail ? "FAILED" : "ok");
  return g_fail ? 1 : 0;
}

}  // namespace

int main() { return softnic_pair::runPair("test_rdma_softnic_stream", runRank); }
