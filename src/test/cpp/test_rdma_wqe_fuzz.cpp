// test_rdma_wqe_fuzz.cpp — random and mutated WQEs must all be handled safely.
//
// Part 1 drives the WQE parser with random rings and bit-flipped valid WQEs and checks its
// invariants. Part 2 posts mutated WQEs to a real software-NIC QP (one rank, loopback over
// TCP): each must complete (success or an error CQE) within a bound, and the guard areas around
// the registered region must stay untouched. Meant to run under ASan/UBSan as well.
// Usage: test_rdma_wqe_fuzz [parser_iterations] [nic_iterations] [seed]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "rdma/soft/wqe_parser.h"
#include "te4j/rdma_api.h"
#include "transport/device/ibgda_device.cuh"

using namespace mooncake::device;
using te4j::rdma::ParsedWqe;

namespace {

int g_fail = 0;
#define CHECK(cond, ...)                       \
  do {                                         \
    if (!(cond)) {                             \
      std::printf("FAIL line %d: ", __LINE__); \
      std::printf(__VA_ARGS__);                \
      std::printf("\n");                       \
      if (++g_fail > 20) std::exit(1);         \
    }                                          \
  } while (0)

void mutate(std::mt19937_64& rng, uint8_t* wqe) {
  switch (rng() % 4) {
    case 0: {  // a few bit flips
      const int n = 1 + (int)(rng() % 4);
      for (int i = 0; i < n; ++i) wqe[rng() % 64] ^= (uint8_t)(1u << (rng() % 8));
      break;
    }
    case 1:  // one random byte
      wqe[rng() % 64] = (uint8_t)rng();
      break;
    case 2: {  // one random 32-bit word
      const uint32_t v = (uint32_t)rng();
      std::memcpy(wqe + 4 * (rng() % 16), &v, 4);
      break;
    }
    default:  // fully random except the ctrl's first word (keeps index/opcode plausible)
      for (int i = 4; i < 64; ++i) wqe[i] = (uint8_t)rng();
      break;
  }
}

void fuzzParser(std::mt19937_64& rng, long iterations) {
  std::vector<uint8_t> ring;
  for (long it = 0; it < iterations; ++it) {
    const uint32_t bbs = 1u << (rng() % 7);  // 1 .. 64 WQEBBs
    ring.assign(bbs * 64, 0);
    const uint32_t index = (uint32_t)rng();
    const uint32_t qpn = 1 + (uint32_t)(rng() % 0xffffff);
    if (rng() % 3 == 0) {
      for (auto& b : ring) b = (uint8_t)rng();
    } else {
      uint8_t* wqe = ring.data() + (index & (bbs - 1)) * 64;
      const uint64_t kind = rng() % 4;
      if (kind == 0)
        ibgda_build_rdma_write(wqe, (uint16_t)index, qpn, rng(), (uint32_t)rng(), rng(),
                               (uint32_t)rng(), (uint32_t)rng());
      else if (kind == 1)
        ibgda_build_rdma_read(wqe, (uint16_t)index, qpn, rng(), (uint32_t)rng(), rng(),
                              (uint32_t)rng(), (uint32_t)rng());
      else if (kind == 2)
        ibgda_build_masked_fa32(wqe, (uint16_t)index, qpn, rng(), (uint32_t)rng(), rng(),
                                (uint32_t)rng(), (uint32_t)rng(), (uint32_t)rng());
      else  // a notification's sequence word (mlx5 only): the software NIC must refuse it
        ibgda_build_atomic_cs64(wqe, (uint16_t)index, qpn, rng(), (uint32_t)rng(), rng(),
                                (uint32_t)rng(), rng(), rng(), mlx5::kCtrlFence);
      mutate(rng, wqe);
    }
    ParsedWqe w;
    te4j::rdma::parseWqe(ring.data(), bbs - 1, index, qpn, &w);
    CHECK(w.num_bbs >= 1 && w.num_bbs <= bbs, "num_bbs %u with ring %u", w.num_bbs, bbs);
    if (w.syndrome == 0) {
      CHECK(w.opcode == mlx5::kOpcodeNop || w.opcode == mlx5::kOpcodeRdmaWrite ||
                w.opcode == mlx5::kOpcodeRdmaRead || w.opcode == mlx5::kOpcodeAtomicMaskedFa,
            "accepted opcode 0x%x", w.opcode);
      CHECK(w.qpn == qpn && w.wqe_index == (uint16_t)index, "accepted a foreign qpn/index");
      CHECK(w.num_sge >= 0 && w.num_sge <= te4j::rdma::kMaxSge, "num_sge %d", w.num_sge);
      CHECK(w.total_length <= mlx5::kMaxMessageBytes, "length %llu",
            (unsigned long long)w.total_length);
      if (w.opcode == mlx5::kOpcodeAtomicMaskedFa)
        CHECK(w.opmod == mlx5::kOpmodExtAtomic32 && w.sge[0].length == 4, "accepted a bad atomic");
    }
  }
}

bool connectSelf(te4j::RdmaTransport* t, IbgdaContext* ctx) {
  int64_t md[64];
  const int n = t->localMetadata(md, 64);
  if (n <= 0) return false;
  uint64_t addr = md[5], prefix = md[7], ifid = md[8];
  uint32_t key = (uint32_t)md[6], lid = (uint32_t)md[9],
           qpn = (uint32_t)md[te4j::kRdmaMetadataHeader];
  uint8_t auth[32];
  if (t->authKey(auth, 32) != 32 || t->setPeerKeys(auth, 32) != 0) {
    std::printf("keys: %s\n", t->lastError());
    return false;
  }
  if (t->connectPeers(0, true, &addr, &key, &qpn, &lid, &prefix, &ifid, 1) != 0) {
    std::printf("connect: %s\n", t->lastError());
    return false;
  }
  return t->fillIbgdaContext(ctx) == 0;
}

void fuzzNic(std::mt19937_64& rng, long iterations) {
  constexpr size_t kGuard = 64 * 1024, kRegion = 64 * 1024;
  std::vector<uint8_t> mem(kGuard * 2 + kRegion, 0xcc);
  uint8_t* region = mem.data() + kGuard;  // destinations (the window: rkey and lkey)
  std::memset(region, 0, kRegion);
  // WRITE sources live in a registration of their own. Over loopback, a WRITE whose source
  // overlaps its own destination is a real race (the responder writes bytes sendmsg may still
  // be reading; hardware leaves it undefined too) that ThreadSanitizer reports; with two
  // regions and two keys, a source and a destination can only overlap if a mutation turns one
  // key into the other (several specific bits).
  std::vector<uint8_t> sources(kRegion, 0x5a);
  te4j::RdmaTransport* t =
      te4j::RdmaTransport::create(te4j::kPlatformHost, 0, te4j::kRdmaBackendSoft);
  CHECK(t->initialize("soft", 1, 1) == 0, "init: %s", t->lastError());
  CHECK(t->registerMemory(sources.data(), kRegion) == 0, "register sources");
  CHECK(t->setRingSize(8) == 0, "ring");
  CHECK(t->createQueuePairs(nullptr) == 0, "qps: %s", t->lastError());
  int64_t md[64];
  CHECK(t->localMetadata(md, 64) > 6, "metadata: %s", t->lastError());
  const uint32_t source_key = (uint32_t)md[6];  // the latest registration's key: the sources'
  CHECK(t->registerMemory(region, kRegion) == 0, "register");
  IbgdaContext ctx;
  if (!connectSelf(t, &ctx)) {
    CHECK(false, "connect");
    return;
  }
  long errors = 0;
  for (long it = 0; it < iterations; ++it) {
    IbgdaQp* qp = (IbgdaQp*)ctx.qps;
    const uint64_t deadline = mc_globaltimer_ns() + 2000000000ull;
    CHECK(ibgda_lock(&qp->lock, deadline), "lock");
    uint8_t* wqe = qp->sq_buf + (qp->sq_pi & qp->sq_mask) * 64;
    const uint64_t raddr = (uint64_t)(uintptr_t)region + rng() % kRegion;
    const uint64_t laddr = (uint64_t)(uintptr_t)sources.data() + rng() % kRegion;
    if (rng() & 1)
      ibgda_build_rdma_write(wqe, (uint16_t)qp->sq_pi, qp->qpn, raddr, ctx.rkeys[0], laddr,
                             source_key, 1 + rng() % 4096);
    else
      ibgda_build_masked_fa32(wqe, (uint16_t)qp->sq_pi, qp->qpn, raddr & ~3ull, ctx.rkeys[0],
                              qp->scratch_addr, qp->scratch_lkey, (uint32_t)rng(), (uint32_t)rng());
    mutate(rng, wqe);
    ++qp->sq_pi;
    uint64_t mutated;  // the doorbell carries the (possibly mutated) first 8 bytes
    std::memcpy(&mutated, wqe, 8);
    ibgda_ring_doorbell(qp, mutated);
    // A mutation may legally produce no CQE (CQ_UPDATE cleared on a success) or a doorbell the
    // NIC ignores (qpn changed in the ctrl's first 8 bytes): a valid signaled NOP behind it
    // always retires everything up to itself.
    if (qp->sq_pi - qp->sq_ci > qp->sq_mask) {
      CHECK(ibgda_wait_ring_slot(qp, deadline) >= kMcRdmaQpError, "ring slot");
    }
    uint8_t* nop = qp->sq_buf + (qp->sq_pi & qp->sq_mask) * 64;
    mlx5::set_ctrl_seg((mlx5::CtrlSeg*)nop, (uint16_t)qp->sq_pi, mlx5::kOpcodeNop, 0, qp->qpn,
                       mlx5::kCtrlCqUpdate, 1, 0, 0);
    const uint64_t nop_word =
        mlx5::ctrl_doorbell_word((uint16_t)qp->sq_pi, mlx5::kOpcodeNop, 0, qp->qpn, 1);
    ++qp->sq_pi;
    ibgda_ring_doorbell(qp, nop_word);
    const uint32_t target = qp->sq_pi;
    ibgda_unlock(&qp->lock);  // ibgda_wait_completed takes the lock per poll (completion.cuh, I4)
    int s = ibgda_wait_completed(qp, target, deadline);
    // A mutated ds can make the WQE swallow the NOP's block (as on hardware); its error CQE
    // is then the last one. Anything else that does not complete is a NIC bug.
    if (s == kMcRdmaTimeout && mc_ld_acquire_u32(&qp->err_count) > 0) s = kMcRdmaQpError;
    CHECK(s == kMcRdmaOk || s == kMcRdmaQpError,
          "iteration %ld: status %d (a WQE that never completed)", it, s);
    if (s != kMcRdmaOk) {
      ++errors;
      // Recovery, as an application would do it.
      CHECK(t->recreateQueuePairs(nullptr) == 0, "recreate: %s", t->lastError());
      if (!connectSelf(t, &ctx)) {
        CHECK(false, "reconnect");
        return;
      }
    }
  }
  for (size_t i = 0; i < kGuard; ++i) {
    if (mem[i] != 0xcc || mem[kGuard + kRegion + i] != 0xcc) {
      CHECK(false, "guard byte %zu overwritten", i);
      break;
    }
  }
  int64_t st[16];
  t->statistics(st, 16);
  std::printf(
      "nic fuzz: %ld WQEs, %ld error completions, %lld local errors, %lld rejected remotely\n",
      iterations, errors, (long long)st[4], (long long)st[11]);
  delete t;
}

}  // namespace

int main(int argc, char** argv) {
  const long parser_iterations = argc > 1 ? std::atol(argv[1]) : 200000;
  const long nic_iterations = argc > 2 ? std::atol(argv[2]) : 300;
  const uint64_t seed = argc > 3 ? std::strtoull(argv[3], nullptr, 0) : 12345;
  std::mt19937_64 rng(seed);
  fuzzParser(rng, parser_iterations);
  fuzzNic(rng, nic_iterations);
  std::printf("%s test_rdma_wqe_fuzz (seed %llu)\n", g_fail ? "FAIL" : "PASS",
              (unsigned long long)seed);
  return g_fail ? 1 : 0;
}
