// test_upstream_api.cpp — upstream Mooncake's Device API names, compiled by g++ for the host
// platform and run there (no GPU): the same headers a CUDA kernel includes.
//
// Checks, each against values computed here from random data:
//   1. the int-word ops (acquire load, release STORE, release add with negative values, the
//      non-coherent scalar loads, 16-byte copies, named/grid barriers as host no-ops);
//   2. contexts built the upstream way (field by field and with the 11-argument make_comm_ctx):
//      routes, peer pointers, mc_p2p_available's nullptr rule;
//   3. both signal families side by side on self and P2P: upstream's int* mc_signal /
//      mc_red_add store, te4j's uint32_t* mc_signal / mc_red_add add;
//   4. the RDMA route with upstream-built contexts over fake QP tables: the QP index
//      dst * qps_per_rank + channel % qps_per_rank from the caller's qps_per_rank, and every
//      failed post landing in an error record (the context's, the QP's, the host fallback);
//   5. upstream's host classes over te4j's host-platform transports (wrapP2pTransport,
//      wrapRdmaTransport on the software NIC): two ranks on threads connect with upstream's
//      per-QP vectors, then mc_rdma_put + the int* mc_signal (an add over RDMA) deliver random
//      data into poisoned destinations;
//   6. the factories: a transport, or nullptr with the reason in lastThreadError().
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <chrono>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "check.h"
#include "rdma/device_error_records.h"
#include "te4j/api.h"
#include "te4j/rdma_api.h"
#include "transport/device/comm_device.cuh"
#include "transport/device/device_transport.h"

namespace md = mooncake::device;

namespace {

std::mt19937 g_rng(20240521u);

void testIntOps() {
  int word = 0;
  md::mc_st_release(&word, 41);
  CHECK(md::mc_ld_acquire(&word) == 41, "store then acquire load: %d", word);
  md::mc_st_release(&word, 3);  // a store replaces, it does not add
  CHECK(word == 3, "second release store: %d", word);
  const int v = (int)(g_rng() % 1000) + 10;
  CHECK(md::mc_atomic_add_release(&word, v) == 3, "old value of the add");
  CHECK(md::mc_atomic_add_release(&word, -(v + 5)) == 3 + v, "old value before the negative add");
  CHECK(word == -2, "3 + v - (v + 5) = -2, got %d", word);

  std::vector<int> ints(64);
  std::vector<float> floats(64);
  std::vector<int64_t> longs(64);
  for (int i = 0; i < 64; ++i) {
    ints[i] = (int)g_rng();
    floats[i] = (float)(g_rng() % 100000) / 7.0f;
    longs[i] = ((int64_t)g_rng() << 32) | g_rng();
  }
  bool same = true;
  for (int i = 0; i < 64; ++i) {
    same = same && md::mc_ld_nc_s32(&ints[i]) == ints[i] &&
           md::mc_ld_nc_f32(&floats[i]) == floats[i] && md::mc_ld_nc_s64(&longs[i]) == longs[i];
  }
  CHECK(same, "non-coherent scalar loads return the stored values");

  alignas(16) int32_t src[16];
  alignas(16) int32_t dst[16];
  for (int i = 0; i < 16; ++i) {
    src[i] = (int32_t)g_rng();
    dst[i] = (int32_t)0xa5a5a5a5;
  }
  for (int i = 0; i < 16; i += 4) {
    const md::mc_int4 x = md::mc_ld_nc((const md::mc_int4*)(src + i));
    md::mc_st_na((const md::mc_int4*)(dst + i), x);
  }
  CHECK(memcmp(src, dst, sizeof(src)) == 0, "16-byte nc load / na store copy");

  uint32_t u32 = 0;
  uint64_t u64 = 0;
  const uint32_t* cu32 = &u32;
  const uint64_t* cu64 = &u64;
  md::mc_st_release_u32(cu32, 0xdeadbeefu);
  md::mc_st_release_u64(cu64, 0x0123456789abcdefull);
  CHECK(u32 == 0xdeadbeefu && md::mc_ld_acquire_u64(&u64) == 0x0123456789abcdefull,
        "release stores through const pointers");
  CHECK(md::mc_bswap32(0x11223344u) == 0x44332211u && md::mc_bswap16(0x1122) == 0x2211 &&
            md::mc_bswap64(0x1122334455667788ull) == 0x8877665544332211ull,
        "byte swaps");
  // One thread is the block and the grid on the host platform: these return at once.
  md::mc_bar_init();
  md::mc_bar_sync(1, 64);
  md::mc_bar_sync();
  md::mc_grid_sync();
  md::mc_fence_barrier_fence();
  md::mc_fence();
}

/// Three ranks' symmetric buffers in one process, reachable from rank 0 by P2P (except
/// `unmapped`) through tables built the way upstream's example builds them.
struct P2pWorld {
  static constexpr int kRanks = 3;
  static constexpr size_t kBytes = 8192;
  std::vector<std::vector<uint8_t>> buffers;
  int32_t available[kRanks];
  void* peer_ptrs[kRanks];

  explicit P2pWorld(int unmapped) : buffers(kRanks, std::vector<uint8_t>(kBytes + 64, 0)) {
    for (int r = 0; r < kRanks; ++r) {
      peer_ptrs[r] = (void*)(((uintptr_t)buffers[r].data() + 63) & ~(uintptr_t)63);
      available[r] = 1;
    }
    if (unmapped >= 0) peer_ptrs[unmapped] = nullptr;  // marked available but not mapped
  }
  uint8_t* base(int r) { return (uint8_t*)(((uintptr_t)buffers[r].data() + 63) & ~(uintptr_t)63); }
};

void testUpstreamContexts() {
  P2pWorld w(2);
  md::CommCtx ctx{};  // upstream's example: value-initialised, then the P2P fields
  ctx.rank = 0;
  ctx.p2p.available = w.available;
  ctx.p2p.peer_ptrs = w.peer_ptrs;
  ctx.p2p.local_base = w.base(0);
  CHECK(ctx.ibgda.qp_devctxs == nullptr && ctx.ibgda.error_record == nullptr &&
            ctx.ibgda.qps_per_rank == 0 && ctx.ibgda.timeout_ns == 0,
        "te4j's fields stay zero in a value-initialised context");

  md::CommCtx made = md::make_comm_ctx(w.base(0), w.available, w.peer_ptrs, nullptr, nullptr,
                                       nullptr, nullptr, nullptr, 0, P2pWorld::kRanks, 256);
  CHECK(made.p2p.available == ctx.p2p.available && made.p2p.peer_ptrs == ctx.p2p.peer_ptrs &&
            made.p2p.local_base == ctx.p2p.local_base && made.rank == 0 &&
            made.ibgda.num_ranks == P2pWorld::kRanks && made.ibgda.qps == nullptr,
        "make_comm_ctx fills upstream's fields and the rank bound");

  uint8_t* slot = w.base(0) + 1000;
  CHECK(md::mc_route_put(ctx, 0, slot) == slot, "own rank: the local address");
  CHECK(md::mc_comm_p2p_available(ctx, 1) && md::mc_route_put(ctx, 1, slot) == w.base(1) + 1000,
        "P2P rank: the peer-mapped address");
  CHECK(md::mc_comm_peer_ptr(ctx, 1, slot) == w.base(1) + 1000, "mc_comm_peer_ptr");
  CHECK(!md::mc_comm_p2p_available(ctx, 2) && md::mc_route_put(ctx, 2, slot) == nullptr,
        "available but unmapped (nullptr peer pointer) is not P2P");
  md::CommCtx empty{};
  CHECK(!md::mc_p2p_available(empty.p2p, 0), "a context without tables reaches nobody by P2P");
}

void testSignalFamilies() {
  P2pWorld w(-1);
  md::CommCtx ctx = md::make_comm_ctx(w.base(0), w.available, w.peer_ptrs, nullptr, nullptr,
                                      nullptr, nullptr, nullptr, 0, P2pWorld::kRanks, 256);
  for (int dst = 0; dst < 2; ++dst) {
    int* up = (int*)(w.base(0) + 64);
    uint32_t* te = (uint32_t*)(w.base(0) + 128);
    const int a = (int)(g_rng() % 5000) + 1;
    const int b = (int)(g_rng() % 5000) + 1;
    md::mc_signal(ctx, dst, 0, 1, up, a);
    md::mc_signal(ctx, dst, 0, 1, up, b);
    int* up_dst = (int*)(w.base(dst) + 64);
    CHECK(*up_dst == b, "dst %d: upstream mc_signal stores (expected %d, got %d)", dst, b, *up_dst);
    md::mc_red_add(ctx, dst, 0, 1, up, a);
    CHECK(*up_dst == a, "dst %d: upstream mc_red_add stores too on P2P/self (got %d)", dst,
          *up_dst);
    const int sa = md::mc_signal(ctx, dst, 0, 1, te, (uint32_t)a);
    const int sb = md::mc_red_add(ctx, dst, 0, 1, te, (uint32_t)b);
    uint32_t* te_dst = (uint32_t*)(w.base(dst) + 128);
    CHECK(sa == md::kMcRouteOk && sb == md::kMcRouteOk && *te_dst == (uint32_t)(a + b),
          "dst %d: te4j's uint32_t family adds (expected %d, got %u)", dst, a + b, *te_dst);
    md::mc_p2p_signal(ctx.p2p, dst, up, -7);
    CHECK(*up_dst == -7, "mc_p2p_signal stores");
    *up_dst = 0;
    *te_dst = 0;
  }
}

/// A fake QP table in host memory: every QP in the error state (posts fail at once with
/// kMcRdmaQpError) except `open`, whose lock is held (posts time out: kMcRdmaTimeout). The
/// status that lands in the record tells which QP a post chose.
struct FakeQps {
  std::vector<md::IbgdaQp> qps;
  FakeQps(int n, int open, md::McErrorRecord* qp_record) : qps((size_t)n) {
    for (int i = 0; i < n; ++i) {
      memset(&qps[(size_t)i], 0, sizeof(md::IbgdaQp));
      qps[(size_t)i].err_count = i == open ? 0 : 1;
      qps[(size_t)i].lock = i == open ? 1 : 0;
      qps[(size_t)i].error_record = qp_record;
    }
  }
};

void testRdmaRouteDerivations() {
  constexpr int kRanks = 3;
  constexpr int kQpr = 2;
  P2pWorld w(-1);
  int32_t none[kRanks] = {1, 0, 0};  // only the own rank by P2P: ranks 1, 2 go over RDMA
  uint64_t raddrs[kRanks] = {0x1000, 0x2000, 0x3000};
  uint32_t rkeys[kRanks] = {11, 22, 33};
  for (int dst = 1; dst < kRanks; ++dst) {
    for (int ch = 0; ch < 5; ++ch) {
      md::McErrorRecord ctx_record{};
      md::McErrorRecord qp_record{};
      const int expected = dst * kQpr + ch % kQpr;
      FakeQps fake(kRanks * kQpr, expected, &qp_record);
      md::CommCtx ctx = md::make_comm_ctx(w.base(0), none, w.peer_ptrs, raddrs, rkeys,
                                          fake.qps.data(), nullptr, nullptr, 0, kRanks, 256);
      ctx.ibgda.timeout_ns = 2000000;  // 2 ms: the held lock of the chosen QP times out fast
      ctx.ibgda.error_record = &ctx_record;
      CHECK(md::mc_route_put(ctx, dst, w.base(0)) == nullptr, "RDMA-only rank");
      md::mc_rdma_put(ctx, ch, dst, kQpr, w.base(0), w.base(0) + 256, 64, 0);
      CHECK(ctx_record.count == 1 && ctx_record.first_status == md::kMcRdmaTimeout &&
                ctx_record.first_dst_rank == dst && ctx_record.first_op == md::kMcOpRdmaWrite,
            "dst %d ch %d: mc_rdma_put used QP %d (record: count %u status %d)", dst, ch, expected,
            ctx_record.count, ctx_record.first_status);
      md::mc_rdma_put(ctx, ch, dst, kQpr, w.base(0), w.base(0) + 256, 64, 5);
      CHECK(ctx_record.count == 1, "lanes other than 0 post nothing");
      int* sig = (int*)(w.base(0) + 512);
      md::mc_signal(ctx, dst, ch, kQpr, sig, 1);
      CHECK(ctx_record.count == 2, "dst %d ch %d: the RDMA signal failed on the same QP", dst, ch);
      // Without a record in the context, the QP's record receives it.
      ctx.ibgda.error_record = nullptr;
      md::mc_red_add(ctx, dst, ch, kQpr, sig, 1);
      CHECK(qp_record.count == 1 && qp_record.first_status == md::kMcRdmaTimeout &&
                qp_record.first_op == md::kMcOpRdmaAtomicAdd,
            "dst %d ch %d: QP record (count %u status %d)", dst, ch, qp_record.count,
            qp_record.first_status);
      // Upstream's IBGDA level: the same QP choice.
      md::mc_ibgda_put(ctx.ibgda, ch, dst, 0, kQpr, w.base(0), raddrs[dst], 64);
      CHECK(qp_record.count == 2 && qp_record.first_status == md::kMcRdmaTimeout,
            "mc_ibgda_put chose QP %d", expected);
      CHECK(md::mc_ibgda_channel(ctx.ibgda, ch, dst, kQpr) == &fake.qps[(size_t)expected],
            "mc_ibgda_channel");
      // Out of range (rank bound from make_comm_ctx): the table's record, status invalid.
      md::mc_rdma_put(ctx, ch, kRanks, kQpr, w.base(0), w.base(0), 64, 0);
      CHECK(qp_record.count == 3, "an out-of-range rank is recorded, not dropped");
    }
  }
  // No route at all and no record anywhere: the host platform's fallback record.
  md::CommCtx p2p_only{};
  p2p_only.p2p.available = none;
  p2p_only.p2p.peer_ptrs = w.peer_ptrs;
  p2p_only.p2p.local_base = w.base(0);
  md::McErrorRecord* fallback = md::mc_host_fallback_error_record();
  const uint32_t before = fallback->count;
  md::mc_signal(p2p_only, 1, 0, 1, (int*)w.base(0), 1);
  md::mc_rdma_put(p2p_only, 0, 2, 1, w.base(0), w.base(0), 16, 0);
  CHECK(fallback->count == before + 2 && fallback->first_status == md::kMcNoRoute,
        "no route, no record: the fallback record (count %u -> %u)", before, fallback->count);
  // te4j's own family reports the same through its status instead.
  CHECK(md::mc_signal(p2p_only, 1, 0, 1, (uint32_t*)w.base(0), 1u) == md::kMcNoRoute,
        "te4j's mc_signal returns kMcNoRoute");
}

// ---- 5. upstream's host classes over te4j's software NIC, two ranks on threads ----

constexpr int kRdmaRanks = 2;
constexpr int kRdmaQpr = 2;
constexpr size_t kRdmaBytes = 1 << 16;
constexpr size_t kDataOffset = 4096;
constexpr size_t kSigOffset = 64;

struct RdmaRank {
  std::unique_ptr<md::RdmaTransport> t;
  uint8_t* buffer = nullptr;
  md::RdmaLocalMetadata meta;
};

void testUpstreamHostClassesOverSoftNic() {
  RdmaRank ranks[kRdmaRanks];
  for (int r = 0; r < kRdmaRanks; ++r) {
    te4j::RdmaTransport* raw =
        te4j::RdmaTransport::create(te4j::kPlatformHost, 0, te4j::kRdmaBackendSoft);
    ranks[r].t = md::wrapRdmaTransport(raw, {"soft@127.0.0.1"});
    CHECK(ranks[r].t != nullptr, "wrapRdmaTransport: %s", te4j::lastThreadError());
    if (ranks[r].t == nullptr) return;
    ranks[r].buffer = (uint8_t*)aligned_alloc(4096, kRdmaBytes);
    memset(ranks[r].buffer, 0xa5, kRdmaBytes);  // poison
    memset(ranks[r].buffer, 0, 4096);           // signal words start at 0
    md::RdmaTransport& t = *ranks[r].t;
    CHECK(t.initialize("", kRdmaRanks, kRdmaRanks * kRdmaQpr) == 0, "initialize: %s",
          md::te4jRdma(&t)->lastError());
    CHECK(t.registerMemory(ranks[r].buffer, kRdmaBytes) == 0, "registerMemory: %s",
          md::te4jRdma(&t)->lastError());
    CHECK(t.allocateControlBuffer() == 0, "allocateControlBuffer: %s",
          md::te4jRdma(&t)->lastError());
    CHECK(t.createQueuePairs(nullptr) == 0, "createQueuePairs: %s", md::te4jRdma(&t)->lastError());
    ranks[r].meta = t.localMetadata();
    CHECK(ranks[r].meta.qpns.size() == (size_t)(kRdmaRanks * kRdmaQpr) &&
              ranks[r].meta.lids.size() == ranks[r].meta.qpns.size() &&
              ranks[r].meta.raddr == (int64_t)(uintptr_t)ranks[r].buffer,
          "localMetadata: one qpn/lid per QP and the buffer's address");
    CHECK(t.isRoce(), "the software NIC reports RoCE");
  }
  if (g_failures != 0) return;
  // The software NIC authenticates connections with a per-NIC key that upstream's metadata has
  // no field for: te4j-aware code hands the peers' keys over through te4jRdma() (an mlx5 NIC
  // needs none; README's compatibility table says so).
  std::vector<uint8_t> all_keys;
  for (int r = 0; r < kRdmaRanks; ++r) {
    uint8_t key[64];
    const int n = md::te4jRdma(ranks[r].t.get())->authKey(key, (int)sizeof(key));
    CHECK(n > 0, "rank %d: the software NIC has a connection key", r);
    all_keys.insert(all_keys.end(), key, key + (n > 0 ? n : 0));
  }
  for (int r = 0; r < kRdmaRanks; ++r) {
    CHECK(md::te4jRdma(ranks[r].t.get())->setPeerKeys(all_keys.data(), (int)all_keys.size()) == 0,
          "rank %d setPeerKeys: %s", r, md::te4jRdma(ranks[r].t.get())->lastError());
  }
  if (g_failures != 0) return;
  // Upstream's connection vectors: per rank (addrs, keys, GIDs) and per local QP i (remote QPN
  // of the peer's QP serving (me, channel i % qpr), and its lid).
  int connect_status[kRdmaRanks] = {-1, -1};
  std::vector<std::thread> threads;
  for (int me = 0; me < kRdmaRanks; ++me) {
    threads.emplace_back([&, me] {
      std::vector<int64_t> addrs, prefixes, ids;
      std::vector<int32_t> keys, qpns, lids;
      for (int r = 0; r < kRdmaRanks; ++r) {
        addrs.push_back(ranks[r].meta.raddr);
        keys.push_back(ranks[r].meta.rkey);
        prefixes.push_back(ranks[r].meta.subnet_prefix);
        ids.push_back(ranks[r].meta.interface_id);
        for (int c = 0; c < kRdmaQpr; ++c) {
          qpns.push_back(ranks[r].meta.qpns[(size_t)(me * kRdmaQpr + c)]);
          lids.push_back(ranks[r].meta.lids[(size_t)(me * kRdmaQpr + c)]);
        }
      }
      connect_status[me] = ranks[me].t->connectPeers(me, true, addrs, keys, qpns, lids, prefixes,
                                                     ids, std::vector<int>(kRdmaRanks, 1));
    });
  }
  for (std::thread& th : threads) th.join();
  for (int r = 0; r < kRdmaRanks; ++r) {
    CHECK(connect_status[r] == 0, "rank %d connectPeers: %s", r,
          md::te4jRdma(ranks[r].t.get())->lastError());
  }
  if (g_failures != 0) return;

  // Rank 0 sends to rank 1 the upstream way: a context from raw table pointers, no P2P.
  int32_t p2p_self_only[kRdmaRanks] = {1, 0};
  void* peers[kRdmaRanks] = {ranks[0].buffer, nullptr};
  md::RdmaTransport& t0 = *ranks[0].t;
  md::CommCtx ctx =
      md::make_comm_ctx(ranks[0].buffer, p2p_self_only, peers, t0.raddrsPtr(), t0.rkeysPtr(),
                        t0.qpDevCtxsPtr(), nullptr, nullptr, 0, kRdmaRanks, 256);
  const size_t n = 1000 * 16;
  for (size_t i = 0; i < n; ++i) ranks[0].buffer[kDataOffset + i] = (uint8_t)g_rng();
  int* sig = (int*)(ranks[0].buffer + kSigOffset);
  const int a = (int)(g_rng() % 1000) + 1;
  const int b = (int)(g_rng() % 1000) + 1;
  for (int ch = 0; ch < 3; ++ch) {  // channel 2 shares QP 0 with channel 0 (2 % qpr)
    const size_t part = n / 3 + (ch == 2 ? n % 3 : 0);
    const size_t off = kDataOffset + (size_t)ch * (n / 3);
    md::mc_rdma_put(ctx, ch, 1, kRdmaQpr, ranks[0].buffer + off, ranks[0].buffer + off,
                    (uint32_t)part, 0);
    md::mc_signal(ctx, 1, ch, kRdmaQpr, sig, ch == 0 ? a : b);  // over RDMA: adds
  }
  const int expected = a + 2 * b;
  volatile int* arrived = (volatile int*)(ranks[1].buffer + kSigOffset);
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (__atomic_load_n((int*)arrived, __ATOMIC_ACQUIRE) != expected &&
         std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  CHECK(*arrived == expected, "RDMA signals add: expected %d, got %d", expected, *arrived);
  CHECK(memcmp(ranks[0].buffer + kDataOffset, ranks[1].buffer + kDataOffset, n) == 0,
        "rank 1 received the random data");
  CHECK(ranks[1].buffer[kDataOffset + n] == 0xa5, "nothing past the data was written");
  md::McErrorRecord* fallback = md::mc_host_fallback_error_record();
  const uint32_t before = fallback->count;
  // A failed post with this context lands in the transport's own record (through its QPs).
  md::mc_rdma_put(ctx, 0, kRdmaRanks, kRdmaQpr, ranks[0].buffer, ranks[0].buffer, 16, 0);
  CHECK(fallback->count == before, "the QP table's record took the failure, not the fallback");
  // ... which the op streams of the platform report (CUDA: OpStream::synchronize) once.
  const std::string posts = te4j::takeDeviceErrors(te4j::kPlatformHost, 0);
  CHECK(posts.find("RDMA write") != std::string::npos &&
            posts.find("to rank 2") != std::string::npos &&
            posts.find("no QP") != std::string::npos &&
            posts.find("1 failed post") != std::string::npos,
        "the recorded failure, described: %s", posts.c_str());
  CHECK(te4j::takeDeviceErrors(te4j::kPlatformHost, 0).empty(), "taken once, then cleared");
  for (int r = 0; r < kRdmaRanks; ++r) {
    ranks[r].t.reset();
    free(ranks[r].buffer);
  }
}

void testP2pClassOnHost() {
  te4j::P2pTransport* raw = te4j::P2pTransport::create(te4j::kPlatformHost, 0, 1);
  std::unique_ptr<md::P2pTransport> p2p = md::wrapP2pTransport(raw);
  CHECK(p2p != nullptr, "wrapP2pTransport: %s", te4j::lastThreadError());
  if (p2p == nullptr) return;
  CHECK(p2p->availableTablePtr() == nullptr && !p2p->allPeersAccessible(),
        "no tables before import");
  void* buffer = p2p->allocateBuffer(4096);
  CHECK(buffer != nullptr, "allocateBuffer: %s", md::te4jP2p(p2p.get())->lastError());
  if (buffer == nullptr) return;
  std::vector<int32_t> handle = p2p->exportIpcHandle(buffer);
  CHECK(!handle.empty(), "exportIpcHandle: %s", md::te4jP2p(p2p.get())->lastError());
  p2p->importPeerHandles(buffer, 0, 1, {handle}, {1});
  CHECK(p2p->allPeersAccessible() && p2p->verifyPeerAccess(), "one rank: itself: %s",
        md::te4jP2p(p2p.get())->lastError());
  const int32_t* available = p2p->availableTablePtr();
  void** peers = p2p->peerPtrsTablePtr();
  CHECK(available != nullptr && available[0] == 1 && peers != nullptr && peers[0] == buffer,
        "tables (host platform: readable here)");
  p2p->importPeerHandles(buffer, 0, 1, {handle}, {1});  // replaces the first mapping
  CHECK(p2p->availableTablePtr() != nullptr, "a second import keeps tables");
  p2p->freeBuffer(buffer);
}

void testFactories() {
  std::unique_ptr<md::P2pTransport> p2p = md::createP2pDeviceTransport(2);
  if (p2p == nullptr) {
    CHECK(te4j::lastThreadError()[0] != '\0', "a nullptr transport comes with a reason");
    printf("createP2pDeviceTransport: unavailable here: %s\n", te4j::lastThreadError());
  }
  std::unique_ptr<md::RdmaTransport> rdma = md::createIbgdaDeviceTransport({"soft"});
  if (rdma == nullptr) {
    CHECK(te4j::lastThreadError()[0] != '\0', "a nullptr transport comes with a reason");
    printf("createIbgdaDeviceTransport: unavailable here: %s\n", te4j::lastThreadError());
  }
  CHECK(md::te4jP2p(nullptr) == nullptr && md::te4jRdma(nullptr) == nullptr,
        "te4j accessors of nullptr");
}

}  // namespace

int main() {
  testIntOps();
  testUpstreamContexts();
  testSignalFamilies();
  testRdmaRouteDerivations();
  testP2pClassOnHost();
  testUpstreamHostClassesOverSoftNic();
  testFactories();
  if (g_failures != 0) {
    fprintf(stderr, "test_upstream_api: %d failure(s)\n", g_failures);
    return 1;
  }
  printf("test_upstream_api: all checks passed\n");
  return 0;
}
