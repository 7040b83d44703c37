// test_rdma_softnic_read.cpp — RDMA READ through the software NIC: two host-platform ranks (fork)
// over TCP. Rank 0 reads rank 1's memory with mc_rdma_get (READ WQEs, opcode 0x10, built by the
// device code compiled for the host): sizes 1 B .. 16 MiB into poisoned destinations checked
// byte for byte with the poison around them, 512 small READs in flight on one QP before one
// quiet, and the error CQEs of a bad rkey, a remote range past the region and a bad lkey,
// after which the destinations still hold the poison. Every wait is bounded.
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "softnic_pair.h"
#include "te4j/rdma_api.h"
#include "transport/device/ibgda_device.cuh"

using namespace mooncake::device;

namespace {

constexpr int kRanks = 2;
constexpr int kQpsPerRank = 2;
constexpr size_t kMiB = 1u << 20;
constexpr size_t kSrc = 0;          // rank 1's source area
constexpr size_t kDst = 32 * kMiB;  // rank 0's destinations
constexpr size_t kBytes = 64 * kMiB;
constexpr uint8_t kPoison = 0xa5;

using namespace softnic_pair;

uint8_t patternAt(size_t i) { return (uint8_t)((i * 2654435761u) >> 13); }

bool connect(te4j::RdmaTransport* t, IbgdaContext* ctx) { return connectPair(t, kQpsPerRank, ctx); }

// Checks [at, at + n) holds the source pattern from src and the 64 bytes after it the poison.
bool checkRead(const uint8_t* base, size_t at, size_t src, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (base[at + i] != patternAt(src + i)) {
      std::printf("  byte %zu of a %zu B READ: %u, want %u\n", i, n, base[at + i],
                  patternAt(src + i));
      return false;
    }
  for (size_t i = 0; i < 64 && at + n + i < kBytes; ++i)
    if (base[at + n + i] != kPoison) {
      std::printf("  byte %zu past a %zu B READ was written\n", i, n);
      return false;
    }
  return true;
}

bool allPoison(const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (p[i] != kPoison) return false;
  return true;
}

int runRank(int rank) {
  g_rank = rank;
  uint8_t* base = (uint8_t*)aligned_alloc(4096, kBytes);
  for (size_t i = 0; i < kDst; ++i) base[i] = patternAt(i);
  std::memset(base + kDst, kPoison, kBytes - kDst);
  te4j::RdmaTransport* t =
      te4j::RdmaTransport::create(te4j::kPlatformHost, 0, te4j::kRdmaBackendSoft);
  CHECK(t->status() == 0, "create: %s", t->lastError());
  CHECK(t->initialize("soft@127.0.0.1", kRanks, kRanks * kQpsPerRank) == 0, "initialize: %s",
        t->lastError());
  CHECK(t->registerMemory(base, kBytes) == 0, "register: %s", t->lastError());
  CHECK(t->setRingSize(64) == 0, "ring: %s", t->lastError());
  CHECK(t->setDeviceTimeoutNs(20000000000ll) == 0, "timeout");
  CHECK(t->createQueuePairs(nullptr) == 0, "create QPs: %s", t->lastError());
  IbgdaContext ctx;
  if (!connect(t, &ctx)) return 1;
  const int peer = 1;
  if (rank == 0) {
    // 1. One READ per size, each into fresh poisoned bytes.
    const size_t sizes[] = {1, 7, 64, 4096, 65537, kMiB, 16 * kMiB};
    size_t at = kDst, src = 3;
    for (size_t n : sizes) {
      CHECK(mc_rdma_get(ctx, 0, peer, kQpsPerRank, base + at, base + kSrc + src, n, 0) == 0,
            "get %zu", n);
      CHECK(mc_rdma_quiet(ctx, 0, peer, kQpsPerRank) == 0, "quiet after get %zu", n);
      CHECK(checkRead(base, at, src, n), "READ of %zu B", n);
      at += (n + 4095 + 64) & ~(size_t)4095;
      src += 977;
    }
    std::printf("rank 0: READs 1 B..16 MiB verified\n");
    // 2. Many small READs in flight on one QP (more than the ring: the poster waits for slots).
    const size_t many = at;
    for (int k = 0; k < 512; ++k)
      CHECK(mc_rdma_get(ctx, 1, peer, kQpsPerRank, base + many + 256 * k, base + kSrc + 1000 * k,
                        100, 0) == 0,
            "get %d", k);
    CHECK(mc_rdma_quiet(ctx, 1, peer, kQpsPerRank) == 0, "quiet after 512 gets");
    for (int k = 0; k < 512; ++k)
      CHECK(checkRead(base, many + 256 * k, 1000 * k, 100), "small READ %d", k);
    std::printf("rank 0: 512 pipelined READs verified\n");
    at = many + 256 * 512 + 4096;
    // 3. Error CQEs; nothing lands.
    uint32_t bad_keys[kRanks] = {ctx.rkeys[0], ctx.rkeys[1] ^ 0x100u};
    IbgdaContext bad = ctx;
    bad.rkeys = bad_keys;
    CHECK(mc_rdma_get(bad, 0, peer, kQpsPerRank, base + at, base + kSrc, 64, 0) == 0,
          "bad-rkey get posts");
    CHECK(mc_rdma_quiet(ctx, 0, peer, kQpsPerRank) == kMcRdmaQpError, "bad rkey quiet");
    int64_t e[8];
    CHECK(t->queryQpError(peer * kQpsPerRank, e, 8) == 8, "queryQpError");
    CHECK(e[1] == mlx5::kSyndromeRemoteAccessErr, "bad rkey syndrome 0x%llx", (long long)e[1]);
    CHECK(mc_rdma_get(ctx, 1, peer, kQpsPerRank, base + at + 4096, base + kBytes - 8, 64, 0) == 0,
          "oob get posts");
    CHECK(mc_rdma_quiet(ctx, 1, peer, kQpsPerRank) == kMcRdmaQpError, "oob quiet");
    CHECK(t->queryQpError(peer * kQpsPerRank + 1, e, 8) == 8, "queryQpError");
    CHECK(e[1] == mlx5::kSyndromeRemoteAccessErr, "oob syndrome 0x%llx", (long long)e[1]);
    IbgdaContext badl = ctx;
    badl.lkey ^= 0x100u;
    CHECK(mc_rdma_get(badl, 0, 0, kQpsPerRank, base + at + 8192, base + kSrc, 64, 0) == 0,
          "bad-lkey get posts");
    CHECK(mc_rdma_quiet(ctx, 0, 0, kQpsPerRank) == kMcRdmaQpError, "bad lkey quiet");
    CHECK(t->queryQpError(0, e, 8) == 8, "queryQpError");
    CHECK(e[1] == mlx5::kSyndromeLocalProtErr, "bad lkey syndrome 0x%llx", (long long)e[1]);
    CHECK(allPoison(base + at, 3 * 4096), "a failed READ wrote its destination");
    int64_t st[16];
    CHECK(t->statistics(st, 16) == 16, "stats");
    CHECK(st[1] == 0 && st[2] == 0, "doorbell contract violations: %s", t->diagnostics());
    std::printf("rank 0: READ error CQEs verified\n");
  }
  barrier();
  if (rank == 1) {
    int64_t st[16];
    CHECK(t->statistics(st, 16) == 16, "stats");
    const size_t want = 1 + 7 + 64 + 4096 + 65537 + kMiB + 16 * kMiB + 512 * 100;
    CHECK(st[15] == (int64_t)want, "bytes_read %lld, want %zu", (long long)st[15], want);
  }
  barrier();
  te4j::destroyObject(t);
  free(base);
  return g_fail == 0 ? 0 : 1;
}

}  // namespace

int main() { return softnic_pair::runPair("test_rdma_softnic_read", runRank); }
