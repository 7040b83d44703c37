// test_mlx5_backend.cpp — the mlx5 (DevX) RdmaTransport against a fake NIC (fake_mlx5_nic.h),
// and the real rdma-core loader on this machine.
//
//   two ranks in one process, InfiniBand (LID) and RoCE (GID, MAC, BlueFlame UAR): initialize,
//   register, create QPs, exchange metadata, connect; every QP in RTS and each INIT2RTR mailbox
//   carrying the peer's QP number and LID / GID + GID index + MAC;
//   device code (host platform) posts: the proxy thread rings the fake UAR with exactly the
//   WQE's first 8 bytes; the test then plays the NIC from what the mailboxes told it (ring,
//   records, CQ) and the device code's quiet consumes its CQE;
//   recreateQueuePairs gives new QP numbers; error paths name their cause and leave nothing
//   allocated; the real loadVerbsApi reports "no mlx5 device" here.
// TE4J_TIMEOUT_SCALE multiplies the bounded waits (scripts/sanitize.sh sets it).
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "te4j/rdma_api.h"
#include "transport/device/comm_device.cuh"
#include "transport/device/ibgda_device.cuh"

#if !defined(TE4J_HAVE_RDMA_CORE_HEADERS)
#include "rdma/mlx5_probe.h"

int main() {
  te4j::RdmaTransport* t =
      te4j::RdmaTransport::create(te4j::kPlatformHost, 0, te4j::kRdmaBackendMlx5);
  const bool ok = t != nullptr && t->status() == te4j::kUnavailable &&
                  std::strstr(t->lastError(), te4j::rdma::kBuiltWithoutRdmaCore) != nullptr;
  std::printf("%s built without rdma-core headers: backend mlx5 says: %s\n", ok ? "OK" : "FAIL",
              t != nullptr ? t->lastError() : "(null)");
  delete t;
  std::printf(ok ? "mlx5 backend (no rdma-core headers): 1 check passed\n" : "FAILED\n");
  return ok ? 0 : 1;
}
#else

#include "fake_mlx5_nic.h"
#include "rdma/mlx5/device_select.h"
#include "rdma/mlx5/devx_commands.h"
#include "rdma/mlx5/doorbell_path.h"
#include "rdma/mlx5/doorbell_proxy.h"
#include "rdma/mlx5/memory_registration.h"
#include "rdma/mlx5/mlx5_device.h"
#include "rdma/mlx5/verbs_api.h"
#include "te4j/api.h"
#include "te4j/batch_api.h"

using namespace mooncake::device;
namespace devx = te4j::rdma::devx;

namespace {

int g_checks = 0;
int g_fail = 0;
const te4j::rdma::VerbsApi* g_api = nullptr;  // the fake table main() injects

#define CHECK(cond, ...)                       \
  do {                                         \
    ++g_checks;                                \
    if (!(cond)) {                             \
      std::printf("FAIL line %d: ", __LINE__); \
      std::printf(__VA_ARGS__);                \
      std::printf("\n");                       \
      std::fflush(stdout);                     \
      ++g_fail;                                \
    }                                          \
  } while (0)

constexpr int kRanks = 2;
constexpr int kQpsPerRank = 2;
constexpr int kQps = kRanks * kQpsPerRank;
constexpr size_t kWindow = 1 << 20;

int timeoutScale() {
  const char* v = std::getenv("TE4J_TIMEOUT_SCALE");
  const int s = v != nullptr ? std::atoi(v) : 1;
  return s >= 1 ? s : 1;
}

bool contains(const char* text, const char* part) { return std::strstr(text, part) != nullptr; }

// What checkConnections expects the INIT2RTR / RTR2RTS mailboxes to carry (the defaults unless
// a test sets TE4J_RDMA_*).
unsigned g_want_sl = 0, g_want_tclass = 0, g_want_ack_timeout = 20, g_want_retry = 7,
         g_want_rnr_retry = 7;

struct Rank {
  te4j::RdmaTransport* t = nullptr;
  uint8_t* buf = nullptr;
  std::vector<int64_t> meta;
  IbgdaContext ctx{};
};

void makeRank(Rank* r) {
  r->buf = (uint8_t*)std::aligned_alloc(4096, kWindow);
  std::memset(r->buf, 0, kWindow);
  r->t = te4j::RdmaTransport::create(te4j::kPlatformHost, 0, te4j::kRdmaBackendMlx5);
  CHECK(r->t->status() == 0, "create: %s", r->t->lastError());
  CHECK(r->t->backend() == te4j::kRdmaBackendMlx5, "backend %d", r->t->backend());
  CHECK(r->t->initialize("mlx5", kRanks, kQps) == 0, "initialize: %s", r->t->lastError());
  CHECK(r->t->registerMemory(r->buf, kWindow) == 0, "register: %s", r->t->lastError());
  CHECK(r->t->setRingSize(16) == 0, "ring: %s", r->t->lastError());
  CHECK(r->t->setDeviceTimeoutNs(2000000000ll * timeoutScale()) == 0, "timeout");
  CHECK(r->t->createQueuePairs(nullptr) == 0, "create QPs: %s", r->t->lastError());
}

void readMetadata(Rank* r) {
  const int n = r->t->localMetadataLength();
  r->meta.assign(n, 0);
  CHECK(r->t->localMetadata(r->meta.data(), n) == n, "metadata: %s", r->t->lastError());
}

// Every rank connects to every rank (itself included) from the others' metadata.
void connectAll(Rank* ranks) {
  uint64_t addrs[kRanks], prefixes[kRanks], ifids[kRanks];
  uint32_t keys[kRanks], lids[kRanks];
  std::vector<uint32_t> qpns(kRanks * kQps);
  for (int r = 0; r < kRanks; ++r) {
    const std::vector<int64_t>& m = ranks[r].meta;
    addrs[r] = (uint64_t)m[5];
    keys[r] = (uint32_t)m[6];
    prefixes[r] = (uint64_t)m[7];
    ifids[r] = (uint64_t)m[8];
    lids[r] = (uint32_t)m[9];
    for (int q = 0; q < kQps; ++q) qpns[r * kQps + q] = (uint32_t)m[te4j::kRdmaMetadataHeader + q];
  }
  for (int r = 0; r < kRanks; ++r) {
    const bool roce = ranks[r].meta[10] != 0;
    // A mask naming a rank the job does not have is refused before any QP changes state.
    CHECK(ranks[r].t->connectPeers(r, roce, addrs, keys, qpns.data(), lids, prefixes, ifids,
                                   3 | 1ull << kRanks) == te4j::kInvalidArgument,
          "connectPeers rank %d took a mask with a bit past num_ranks", r);
    CHECK(
        ranks[r].t->connectPeers(r, roce, addrs, keys, qpns.data(), lids, prefixes, ifids, 3) == 0,
        "connectPeers rank %d: %s", r, ranks[r].t->lastError());
    CHECK(ranks[r].t->fillIbgdaContext(&ranks[r].ctx) == 0, "fill: %s", ranks[r].t->lastError());
  }
}

uint32_t qpnOf(const Rank& r, int qp) { return (uint32_t)r.meta[te4j::kRdmaMetadataHeader + qp]; }

// Each QP is in RTS and its INIT2RTR carried what the peer's metadata says.
void checkConnections(const Rank* ranks, bool roce) {
  const devx::Field qpc = devx::kModifyQpInQpc;
  const devx::Field path = devx::at(qpc, devx::kQpcPrimaryAddressPath);
  for (int a = 0; a < kRanks; ++a) {
    for (int i = 0; i < kQps; ++i) {
      const int r = i / kQpsPerRank, c = i % kQpsPerRank;
      fake::Obj* o = fake::qpByNumber(qpnOf(ranks[a], i));
      CHECK(o != nullptr && o->state == fake::State::kRts, "rank %d QP %d not in RTS", a, i);
      if (o == nullptr) continue;
      const devx::Mailbox& m = o->init2rtr;
      const uint32_t want_qpn = qpnOf(ranks[r], a * kQpsPerRank + c);
      CHECK(devx::getField(m, devx::at(qpc, devx::kQpcRemoteQpn)) == want_qpn,
            "rank %d QP %d: INIT2RTR remote qpn 0x%llx, want 0x%x", a, i,
            (unsigned long long)devx::getField(m, devx::at(qpc, devx::kQpcRemoteQpn)), want_qpn);
      CHECK(devx::getField(m, devx::at(qpc, devx::kQpcMtu)) == IBV_MTU_4096, "MTU");
      const devx::Mailbox& rts = o->rtr2rts;
      CHECK(devx::getField(rts, devx::at(path, devx::kAdsAckTimeout)) == g_want_ack_timeout &&
                devx::getField(rts, devx::at(qpc, devx::kQpcRetryCount)) == g_want_retry &&
                devx::getField(rts, devx::at(qpc, devx::kQpcRnrRetry)) == g_want_rnr_retry,
            "rank %d QP %d: RTR2RTS ack timeout %llu retry %llu rnr %llu, want %u %u %u", a, i,
            (unsigned long long)devx::getField(rts, devx::at(path, devx::kAdsAckTimeout)),
            (unsigned long long)devx::getField(rts, devx::at(qpc, devx::kQpcRetryCount)),
            (unsigned long long)devx::getField(rts, devx::at(qpc, devx::kQpcRnrRetry)),
            g_want_ack_timeout, g_want_retry, g_want_rnr_retry);
      if (roce) {
        CHECK(devx::getField(m, devx::at(path, devx::kAdsEthPrio)) == g_want_sl &&
                  devx::getField(m, devx::at(path, devx::kAdsDscp)) == (g_want_tclass >> 2u) &&
                  devx::getField(m, devx::at(path, devx::kAdsTclass)) == g_want_tclass,
              "rank %d QP %d: INIT2RTR priority %llu dscp %llu tclass %llu, want %u %u %u", a, i,
              (unsigned long long)devx::getField(m, devx::at(path, devx::kAdsEthPrio)),
              (unsigned long long)devx::getField(m, devx::at(path, devx::kAdsDscp)),
              (unsigned long long)devx::getField(m, devx::at(path, devx::kAdsTclass)), g_want_sl,
              g_want_tclass >> 2u, g_want_tclass);
      } else {
        CHECK(devx::getField(m, devx::at(path, devx::kAdsSl)) == g_want_sl,
              "rank %d QP %d: SL %llu, want %u", a, i,
              (unsigned long long)devx::getField(m, devx::at(path, devx::kAdsSl)), g_want_sl);
      }
      if (!roce) {
        CHECK(devx::getField(m, devx::at(path, devx::kAdsRlid)) == (uint64_t)ranks[r].meta[9],
              "rank %d QP %d: rlid 0x%llx, want rank %d's LID 0x%llx", a, i,
              (unsigned long long)devx::getField(m, devx::at(path, devx::kAdsRlid)), r,
              (unsigned long long)ranks[r].meta[9]);
        continue;
      }
      const devx::Field rgid = devx::at(path, devx::kAdsRgidRip);
      const uint64_t hi = devx::getField(m, devx::Field{rgid.offset, 64});
      const uint64_t lo = devx::getField(m, devx::Field{rgid.offset + 64, 64});
      CHECK(hi == (uint64_t)ranks[r].meta[7] && lo == (uint64_t)ranks[r].meta[8],
            "rank %d QP %d: rgid %016llx%016llx, want rank %d's GID", a, i, (unsigned long long)hi,
            (unsigned long long)lo, r);
      CHECK(
          devx::getField(m, devx::at(path, devx::kAdsSrcAddrIndex)) == 3 && ranks[a].meta[11] == 3,
          "rank %d: GID index %llu (metadata %lld), want 3 (the IPv4 RoCE v2 entry)", a,
          (unsigned long long)devx::getField(m, devx::at(path, devx::kAdsSrcAddrIndex)),
          (long long)ranks[a].meta[11]);
      uint8_t gid[16], mac[6];
      for (int b = 0; b < 8; ++b) {
        gid[b] = (uint8_t)((uint64_t)ranks[r].meta[7] >> (56 - 8 * b));
        gid[8 + b] = (uint8_t)((uint64_t)ranks[r].meta[8] >> (56 - 8 * b));
      }
      fake::macOf(gid, mac);
      const uint64_t rmac = devx::getField(m, devx::at(path, devx::kAdsRmac47_32)) << 32 |
                            devx::getField(m, devx::at(path, devx::kAdsRmac31_0));
      uint64_t want_mac = 0;
      for (int b = 0; b < 6; ++b) want_mac = want_mac << 8 | mac[b];
      CHECK(rmac == want_mac, "rank %d QP %d: rmac %012llx, want %012llx", a, i,
            (unsigned long long)rmac, (unsigned long long)want_mac);
      CHECK(devx::getField(m, devx::at(path, devx::kAdsUdpSport)) >= 0xc000, "udp sport");
    }
  }
}

uint8_t* umemAt(uint32_t umem_id, uint64_t offset) {
  fake::Umem* u = fake::umemById(umem_id);
  return u != nullptr && offset < u->size ? u->addr + offset : nullptr;
}

// Waits until the UAR word at `offset` holds a doorbell for WQE `index`; returns it (0: none).
uint64_t awaitDoorbell(const fake::Uar* uar, uint32_t offset, uint16_t index) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10 * timeoutScale());
  const uint64_t* word = (const uint64_t*)((const uint8_t*)uar->pub.reg_addr + offset);
  for (;;) {
    const uint64_t v = __atomic_load_n(word, __ATOMIC_ACQUIRE);
    if (v != 0 && (uint16_t)(__builtin_bswap32((uint32_t)v) >> 8) == index) return v;
    if (std::chrono::steady_clock::now() > end) return v;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

// Rank 0 posts to rank 1 (channel 0) from its device code; the proxy rings; the test plays the
// NIC with what CREATE_QP / CREATE_CQ said and completes the first WQE.
void postAndRing(Rank* ranks, bool blueflame, uint32_t bf_half) {
  Rank& r0 = ranks[0];
  const uint32_t qpn = qpnOf(r0, 1 * kQpsPerRank + 0);
  fake::Obj* qp = fake::qpByNumber(qpn);
  CHECK(qp != nullptr, "rank 0's QP to rank 1");
  if (qp == nullptr) return;
  fake::Obj* cq = fake::cqByNumber(qp->cqn);
  const fake::Uar* uar = fake::uarOf(qp->ctx);
  CHECK(cq != nullptr && uar != nullptr && uar->blueflame == blueflame, "CQ / UAR of the QP");
  if (cq == nullptr || uar == nullptr) return;
  uint8_t* ring = umemAt(qp->umem_id, qp->umem_offset);
  uint32_t* dbr = (uint32_t*)umemAt(qp->dbr_umem_id, qp->dbr_offset);
  uint8_t* cqes = umemAt(cq->umem_id, cq->umem_offset);
  uint32_t* cq_dbr = (uint32_t*)umemAt(cq->dbr_umem_id, cq->dbr_offset);
  CHECK(ring && dbr && cqes && cq_dbr, "the mailboxes' umem offsets lie inside the umem");
  CHECK(qp->log_size == 4 && cq->log_size == 4, "log sizes %u %u (ring of 16)", qp->log_size,
        cq->log_size);
  if (!ring || !dbr || !cqes || !cq_dbr) return;

  // 1. A WRITE: WQE 0, rung on BlueFlame half 0.
  CHECK(mc_rdma_put(r0.ctx, 0, 1, kQpsPerRank, r0.buf, r0.buf + 8192, 64, 0) == kMcRdmaOk, "put");
  uint64_t v = awaitDoorbell(uar, 0, 0);
  uint64_t first8;
  std::memcpy(&first8, ring, 8);
  CHECK(v != 0 && v == first8, "UAR holds 0x%016llx, WQE 0 starts 0x%016llx", (unsigned long long)v,
        (unsigned long long)first8);
  const uint32_t w0 = __builtin_bswap32((uint32_t)v), w1 = __builtin_bswap32((uint32_t)(v >> 32));
  CHECK((w0 & 0xff) == mlx5::kOpcodeRdmaWrite && ((w0 >> 8) & 0xffff) == 0, "opcode/index 0x%08x",
        w0);
  CHECK((w1 >> 8) == qpn && (w1 & 0xff) == 3, "qpn/ds 0x%08x, want qpn 0x%x ds 3", w1, qpn);
  CHECK(__builtin_bswap32(__atomic_load_n(&dbr[mlx5::kSndDbr], __ATOMIC_ACQUIRE)) == 1,
        "doorbell record");

  // 2. The NIC's completion of WQE 0; the device code's quiet consumes it.
  __atomic_store_n(&((mlx5::Cqe64*)cqes)[0].dw[mlx5::kCqeDwOwner],
                   mlx5::cqe_make_dw15(0, mlx5::kCqeReq, 0), __ATOMIC_RELEASE);
  CHECK(mc_rdma_quiet(r0.ctx, 0, 1, kQpsPerRank) == kMcRdmaOk, "quiet after the CQE");
  CHECK(__builtin_bswap32(cq_dbr[0]) == 1, "CQ doorbell record %u", __builtin_bswap32(cq_dbr[0]));

  // 3. A signal (masked FA, ds 4): WQE 1, on the other BlueFlame half when there is one.
  CHECK(mc_rdma_atomic_add(r0.ctx, 0, 1, kQpsPerRank, (uint32_t*)(r0.buf + 64), 1) == kMcRdmaOk,
        "signal");
  v = awaitDoorbell(uar, blueflame ? bf_half : 0, 1);
  std::memcpy(&first8, ring + 64, 8);
  CHECK(v == first8, "UAR holds 0x%016llx, WQE 1 starts 0x%016llx", (unsigned long long)v,
        (unsigned long long)first8);
  CHECK((__builtin_bswap32((uint32_t)v) & 0xff) == mlx5::kOpcodeAtomicMaskedFa &&
            (__builtin_bswap32((uint32_t)(v >> 32)) & 0xff) == 4,
        "masked FA doorbell 0x%016llx", (unsigned long long)v);

  int64_t stats[6];
  CHECK(r0.t->statistics(stats, 6) == 6, "statistics: %s", r0.t->lastError());
  CHECK(stats[0] == 2 && stats[1] == 1 && stats[2] == 0 && stats[3] == kQps && stats[4] == 2,
        "statistics %lld %lld %lld %lld %lld (%s)", (long long)stats[0], (long long)stats[1],
        (long long)stats[2], (long long)stats[3], (long long)stats[4], r0.t->statisticsNames());
  int64_t err[8];
  CHECK(
      r0.t->queryQpError(1 * kQpsPerRank, err, 8) == 8 && err[0] == 0 && err[6] == 2 && err[7] == 1,
      "queryQpError");
}

void twoRanks(bool roce) {
  fake::Nic& f = fake::nic();
  f.roce = roce;
  f.fail_uar_nc = roce;  // the RoCE run uses a BlueFlame UAR: doorbells alternate halves
  f.log_bf_reg_size = roce ? 10 : 9;  // 1 KiB BlueFlame registers: halves 512 bytes apart
  Rank ranks[kRanks];
  for (Rank& r : ranks) makeRank(&r);
  for (Rank& r : ranks) readMetadata(&r);
  if (g_fail != 0) return;
  CHECK(ranks[0].meta[2] == te4j::kRdmaBackendMlx5 && ranks[0].meta[10] == (roce ? 1 : 0),
        "metadata backend / is_roce");
  if (!roce) CHECK(ranks[0].meta[9] != ranks[1].meta[9] && ranks[0].meta[9] != 0, "distinct LIDs");
  if (roce)
    CHECK((uint64_t)ranks[1].meta[8] == 0x0000ffff0a000000ull + ((uint64_t)ranks[1].meta[8] & 0xff),
          "RoCE interface id 0x%llx is ::ffff:10.0.0.x", (unsigned long long)ranks[1].meta[8]);
  connectAll(ranks);
  checkConnections(ranks, roce);
  // CREATE_QP's ts_format: the general caps say free-running only, the RoCE caps both clocks.
  const fake::Obj* any_qp = fake::qpByNumber(qpnOf(ranks[0], 0));
  CHECK(any_qp != nullptr && any_qp->ts_format == (roce ? 1u : 0u), "ts_format %u on %s",
        any_qp != nullptr ? any_qp->ts_format : 99u,
        roce ? "RoCE (from the RoCE caps)" : "InfiniBand");
  postAndRing(ranks, roce, 512);
  CHECK(std::strlen(ranks[0].t->diagnostics()) == 0, "diagnostics: %s", ranks[0].t->diagnostics());

  // After an error CQE: new QPs, new numbers, connected again at both ends.
  const uint32_t old = qpnOf(ranks[0], 0);
  const size_t live = f.live();
  for (Rank& r : ranks)
    CHECK(r.t->recreateQueuePairs(nullptr) == 0, "recreate: %s", r.t->lastError());
  CHECK(f.live() == live && fake::qpByNumber(old) == nullptr, "recreate replaced the objects");
  for (Rank& r : ranks) readMetadata(&r);
  CHECK(qpnOf(ranks[0], 0) != old, "new QP numbers");
  connectAll(ranks);
  checkConnections(ranks, roce);
  // Connecting QPs that are already in RTS goes through RESET again.
  connectAll(ranks);
  checkConnections(ranks, roce);

  for (Rank& r : ranks) {
    delete r.t;
    std::free(r.buf);
  }
  CHECK(f.live() == 0, "%zu fake objects left after close", f.live());
  f.fail_uar_nc = false;
  f.log_bf_reg_size = 9;
  std::printf("%s: two ranks connected, doorbells rung by the proxy, recreate + reconnect\n",
              roce ? "RoCE (BlueFlame UAR)" : "InfiniBand (non-cached UAR)");
}

void gidOverride() {
  fake::nic().roce = true;
  setenv("TE4J_RDMA_GID_INDEX", "1", 1);
  Rank r;
  makeRank(&r);
  readMetadata(&r);
  CHECK(r.meta.size() > 11 && r.meta[11] == 1, "TE4J_RDMA_GID_INDEX=1 chose %lld",
        (long long)r.meta[11]);
  delete r.t;
  setenv("TE4J_RDMA_GID_INDEX", "9", 1);
  te4j::RdmaTransport* t =
      te4j::RdmaTransport::create(te4j::kPlatformHost, 0, te4j::kRdmaBackendMlx5);
  CHECK(t->initialize("mlx5_0", 1, 1) == te4j::kUnavailable &&
            contains(t->lastError(), "TE4J_RDMA_GID_INDEX"),
        "bad GID index: %s", t->lastError());
  delete t;
  unsetenv("TE4J_RDMA_GID_INDEX");
  std::free(r.buf);
  fake::nic().roce = false;
  CHECK(fake::nic().live() == 0, "GID override left objects");
}

// Each knob makes one step fail: the call names it and nothing stays allocated.
void initializeFailures() {
  fake::Nic& f = fake::nic();
  struct Step {
    bool* knob;
    bool* knob2;
    const char* text;
  } steps[] = {
      {&f.fail_general_cmd, nullptr, "QUERY_HCA_CAP"},
      {&f.fail_alloc_pd, nullptr, "ibv_alloc_pd"},
      {&f.fail_uar_nc, &f.fail_uar_bf, "mlx5dv_devx_alloc_uar"},
      {&f.fail_eqn, nullptr, "query_eqn"},
  };
  for (const Step& s : steps) {
    *s.knob = true;
    if (s.knob2) *s.knob2 = true;
    te4j::RdmaTransport* t =
        te4j::RdmaTransport::create(te4j::kPlatformHost, 0, te4j::kRdmaBackendMlx5);
    CHECK(t->initialize("", 1, 1) != 0 && contains(t->lastError(), s.text), "%s: %s", s.text,
          t->lastError());
    CHECK(f.live() == 0, "%s failure left %zu objects", s.text, f.live());
    *s.knob = false;
    if (s.knob2) *s.knob2 = false;
    CHECK(t->initialize("", 1, 1) == 0, "retry after %s: %s", s.text, t->lastError());
    delete t;
    CHECK(f.live() == 0, "close after %s left %zu objects", s.text, f.live());
  }

  f.dv_open_errno = EPERM;
  te4j::RdmaTransport* t =
      te4j::RdmaTransport::create(te4j::kPlatformHost, 0, te4j::kRdmaBackendMlx5);
  CHECK(t->initialize("mlx5_0", 1, 1) == te4j::kUnavailable &&
            contains(t->lastError(), "DevX not permitted") && contains(t->lastError(), "fix"),
        "DevX EPERM: %s", t->lastError());
  CHECK(f.live() == 0, "DevX failure left %zu objects", f.live());
  f.dv_open_errno = 0;
  CHECK(t->initialize("mlx5_7", 1, 1) == te4j::kUnavailable &&
            contains(t->lastError(), "matches 'mlx5_7'") && contains(t->lastError(), "mlx5_0"),
        "filter: %s", t->lastError());
  delete t;
  std::printf("initialize failures: each names its step, nothing left allocated\n");
}

void queueFailures() {
  fake::Nic& f = fake::nic();
  uint8_t* buf = (uint8_t*)std::aligned_alloc(4096, kWindow);
  te4j::RdmaTransport* t =
      te4j::RdmaTransport::create(te4j::kPlatformHost, 0, te4j::kRdmaBackendMlx5);
  CHECK(t->initialize("", 1, 2) == 0, "initialize: %s", t->lastError());
  CHECK(t->registerMemory(buf, kWindow) == 0, "register: %s", t->lastError());
  const size_t base = f.live();  // context, PD, UAR, window MR
  f.fail_umem = true;
  CHECK(t->createQueuePairs(nullptr) != 0 && contains(t->lastError(), "mlx5dv_devx_umem_reg") &&
            contains(t->lastError(), "ulimit -l"),
        "umem: %s", t->lastError());
  CHECK(f.live() == base, "umem failure: %zu objects, want %zu", f.live(), base);
  f.fail_umem = false;
  f.fail_ctrl_mr = true;
  CHECK(t->createQueuePairs(nullptr) != 0 &&
            contains(t->lastError(), "ibv_reg_mr of the control buffer"),
        "control MR: %s", t->lastError());
  CHECK(f.live() == base, "control MR failure: %zu objects, want %zu", f.live(), base);
  f.fail_ctrl_mr = false;

  f.fail_create_qp_after = 1;  // the second QP's CREATE_QP fails in the firmware
  f.create_qps = 0;
  CHECK(t->createQueuePairs(nullptr) == te4j::kSystemError, "CREATE_QP status");
  devx::Mailbox out(devx::createQpOutBytes(), 0);
  fake::reply(out.data(), out.size(), devx::kStatusBadParam, 0x5a5a);
  const std::string want = devx::describeFailure("CREATE_QP", out);
  CHECK(contains(t->lastError(), want.c_str()) && contains(t->lastError(), "QP 1"),
        "CREATE_QP failure: '%s', want it to contain '%s'", t->lastError(), want.c_str());
  CHECK(f.objs.empty(), "%zu DevX objects left after the failed CREATE_QP", f.objs.size());
  f.fail_create_qp_after = -1;
  CHECK(t->createQueuePairs(nullptr) == 0 && f.objs.size() == 4, "create after the failure: %s",
        t->lastError());
  delete t;
  std::free(buf);
  CHECK(f.live() == 0, "close left %zu objects", f.live());
  std::printf("queue failures: umem, control MR, CREATE_QP status described, nothing leaked\n");
}

// A ring slot rewritten by a later WQE (the NIC completed the one the record announced) is not
// rung with the newer bytes: the proxy waits for the record that announces them.
void proxyRereads() {
  alignas(64) static uint8_t ring[16 * 64];
  alignas(8) static uint32_t dbrec[2];
  alignas(8) static uint64_t uar[64];
  std::memset(ring, 0, sizeof(ring));
  te4j::rdma::DoorbellProxy proxy(uar);
  te4j::rdma::ProxyQp qp;
  qp.dbrec = dbrec;
  qp.ring = ring;
  qp.sq_mask = 15;
  qp.qpn = 0x321;
  qp.bf_size = 256;
  proxy.setQps({qp});
  proxy.start();
  // Slot 0 holds WQE 16 (the ring wrapped) while the record still says 1 WQE posted.
  ibgda_build_rdma_write(ring, 16, 0x321, 0x1000, 1, 0x2000, 2, 8);
  __atomic_store_n(&dbrec[mlx5::kSndDbr], __builtin_bswap32(1u), __ATOMIC_RELEASE);
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5 * timeoutScale());
  while (proxy.rereads() < 3 && std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  CHECK(proxy.rereads() >= 3 && __atomic_load_n(&uar[0], __ATOMIC_ACQUIRE) == 0,
        "stale slot: %llu rereads, UAR 0x%llx", (unsigned long long)proxy.rereads(),
        (unsigned long long)__atomic_load_n(&uar[0], __ATOMIC_ACQUIRE));
  __atomic_store_n(&dbrec[mlx5::kSndDbr], __builtin_bswap32(17u), __ATOMIC_RELEASE);
  uint64_t first8;
  std::memcpy(&first8, ring, 8);
  uint64_t v = 0;
  while ((v = __atomic_load_n(&uar[0], __ATOMIC_ACQUIRE)) == 0 &&
         std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  CHECK(v == first8 && proxy.doorbells() == 1, "rung 0x%llx after the record moved, want 0x%llx",
        (unsigned long long)v, (unsigned long long)first8);
  proxy.stop();
  CHECK(proxy.diagnostics().empty(), "proxy diagnostics: %s", proxy.diagnostics().c_str());
  std::printf("doorbell proxy: a reused ring slot is read again, not rung\n");
}

// The NIC's view of rank `rank`'s QP `index`, from what CREATE_QP / CREATE_CQ told the fake.
struct QpView {
  fake::Obj* qp = nullptr;
  uint8_t* ring = nullptr;
  uint32_t* dbr = nullptr;
  uint8_t* cqes = nullptr;
  uint32_t* cq_dbr = nullptr;
  fake::Uar* uar = nullptr;
};

QpView viewOf(const Rank& r, int index) {
  QpView v;
  v.qp = fake::qpByNumber(qpnOf(r, index));
  if (v.qp == nullptr) return v;
  fake::Obj* cq = fake::cqByNumber(v.qp->cqn);
  v.ring = umemAt(v.qp->umem_id, v.qp->umem_offset);
  v.dbr = (uint32_t*)umemAt(v.qp->dbr_umem_id, v.qp->dbr_offset);
  v.cqes = cq != nullptr ? umemAt(cq->umem_id, cq->umem_offset) : nullptr;
  v.cq_dbr = cq != nullptr ? (uint32_t*)umemAt(cq->dbr_umem_id, cq->dbr_offset) : nullptr;
  v.uar = fake::uarOf(v.qp->ctx);
  return v;
}

// The NIC's completion of WQE `wqe` in CQE slot `slot` (first pass: owner 0).
void completeWqe(const QpView& v, uint32_t slot, uint16_t wqe) {
  __atomic_store_n(&((mlx5::Cqe64*)v.cqes)[slot].dw[mlx5::kCqeDwOwner],
                   mlx5::cqe_make_dw15(wqe, mlx5::kCqeReq, 0), __ATOMIC_RELEASE);
}

// Expected WQE bytes, written field by field (big-endian, as the PRM lays them out).
struct WqeBytes {
  uint8_t b[64] = {};
  size_t n = 0;
  WqeBytes& be32(uint32_t v) {
    for (int i = 3; i >= 0; --i) b[n++] = (uint8_t)(v >> (8 * i));
    return *this;
  }
  WqeBytes& be64(uint64_t v) { return be32((uint32_t)(v >> 32)).be32((uint32_t)v); }
};

// Waits until every request of `batch` is final; true when they all are within the bound.
bool awaitBatch(te4j::TransferBatch* batch) {
  return batch->wait(10000000000ll * timeoutScale()) == te4j::kOk;
}

// A notification slot's publication over the mlx5 backend (docs/MLX5.md, "Notifications"):
// regionKey gives the one key host-posted requests use, and a host TransferBatch's
// submitPublication (its RDMA route attached) posts, on the QP (rank 1, channel: the batch's RDMA
// requests before it, mod qps_per_rank), the slot's WRITE and then the fenced 8-byte
// compare-and-swap of its sequence word at the next ring position, the doorbell announcing both;
// the test plays the NIC, reads the two WQEs back byte for byte and completes them.
void notificationPublication() {
  fake::Nic& f = fake::nic();
  f.roce = false;
  Rank ranks[kRanks];
  for (Rank& r : ranks) makeRank(&r);
  for (Rank& r : ranks) readMetadata(&r);
  connectAll(ranks);
  Rank& r0 = ranks[0];
  const int64_t key0 = r0.t->regionKey(r0.buf, kWindow);
  const int64_t key1 = ranks[1].t->regionKey(ranks[1].buf, 4096);
  CHECK(key0 > 0 && key0 == r0.meta[6], "regionKey 0x%llx, want the window's key 0x%llx (%s)",
        (long long)key0, (long long)r0.meta[6], r0.t->lastError());
  CHECK(key1 > 0 && key1 == ranks[1].meta[6], "rank 1's regionKey 0x%llx", (long long)key1);
  CHECK(r0.t->regionKey(r0.buf + 8, 8) == te4j::kInvalidArgument &&
            contains(r0.t->lastError(), "no registration starts"),
        "regionKey of an address inside the window: %s", r0.t->lastError());
  CHECK(r0.t->regionKey(r0.buf, kWindow + 1) == te4j::kInvalidArgument,
        "regionKey of a range past the window");
  if (key0 <= 0 || key1 <= 0) return;

  const int first = 2;  // after 2 RDMA requests: channel 2 % qps_per_rank = 0
  QpView v = viewOf(r0, 1 * kQpsPerRank + first % kQpsPerRank);
  CHECK(v.qp && v.ring && v.dbr && v.cqes && v.uar, "rank 0's QP to rank 1, channel 0");
  if (!(v.qp && v.ring && v.dbr && v.cqes && v.uar)) return;
  te4j::TransferBatch* batch = te4j::TransferBatch::create(te4j::kPlatformHost, 0, 8);
  CHECK(batch != nullptr && batch->status() == te4j::kOk, "batch");
  if (batch == nullptr) return;
  CHECK(batch->attachRdma(r0.t) == te4j::kOk, "attachRdma: %s", batch->lastError());
  te4j::BatchDescriptor* slots = batch->descriptors();
  // Two placeholder requests so the publication starts at `first` (a batch's parts follow on).
  for (int i = 0; i < 2; ++i)
    slots[i] = te4j::BatchDescriptor{te4j::kBatchWrite,
                                     1,
                                     (uint64_t)(uintptr_t)r0.buf,
                                     (uint64_t)(uintptr_t)ranks[1].buf,
                                     16,
                                     (uint32_t)key0,
                                     (uint32_t)key1};
  CHECK(batch->submit(0, 2, 5000000000ll) == 0, "placeholder part: %s", batch->lastError());
  // The placeholders go to channel 0 as WQEs 0 and 1.
  CHECK(awaitDoorbell(v.uar, 0, 1) != 0, "doorbell of the placeholders");
  completeWqe(v, 0, 0);
  completeWqe(v, 1, 1);
  CHECK(awaitBatch(batch), "placeholders complete: %s", batch->lastError());

  const uint64_t slot_local = (uint64_t)(uintptr_t)(r0.buf + 0x1008);
  const uint64_t fetch_local = (uint64_t)(uintptr_t)(r0.buf + 0x2000);
  const uint64_t seq_remote = (uint64_t)(uintptr_t)(ranks[1].buf + 0x4000);
  const uint32_t slot_bytes = 56 + 100;  // slot bytes 8 .. 64 + 100: header and payload
  const uint64_t expected = 0x3, sequence = 0xb;
  // The publication's slots: the slot's WRITE, then the sequence word (its old value lands at
  // fetch_local), as the Java layer writes them.
  auto describe = [&](uint64_t word_remote, uint32_t word_rkey, int32_t rank) {
    slots[first] =
        te4j::BatchDescriptor{te4j::kBatchWrite, rank,           slot_local,    seq_remote + 8,
                              slot_bytes,        (uint32_t)key0, (uint32_t)key1};
    slots[first + 1] = te4j::BatchDescriptor{
        te4j::kBatchWrite, rank, fetch_local, word_remote, 8, (uint32_t)key0, word_rkey};
  };
  // Refused before anything is posted: a sequence word off 8-byte alignment, a bad rank.
  describe(seq_remote + 4, (uint32_t)key1, 1);
  CHECK(
      batch->submitPublication(first, expected, sequence, 1000000000ll) == te4j::kInvalidArgument &&
          contains(batch->lastError(), "8-byte aligned"),
      "a misaligned sequence word is refused: %s", batch->lastError());
  describe(seq_remote, (uint32_t)key1, 2);
  CHECK(batch->submitPublication(first, expected, sequence, 1000000000ll) == te4j::kInvalidArgument,
        "rank 2 of 2 is refused");
  describe(seq_remote, 0, 1);
  CHECK(batch->submitPublication(first, expected, sequence, 1000000000ll) == te4j::kInvalidArgument,
        "a null key is refused");
  describe(seq_remote, (uint32_t)key1, 1);
  CHECK(batch->submitPublication(first, expected, sequence, 5000000000ll) == te4j::kOk,
        "submitPublication: %s", batch->lastError());
  const uint64_t bell = awaitDoorbell(v.uar, 0, 3);
  // The doorbell record is stored with release after the WQEs are written (the UAR word is a
  // relaxed MMIO store): reading it first is what orders the reads of the ring below.
  const uint32_t record =
      __builtin_bswap32(__atomic_load_n(&v.dbr[mlx5::kSndDbr], __ATOMIC_ACQUIRE));
  CHECK(record == 4, "doorbell record %u, want 4", record);
  uint64_t ctrl3;
  std::memcpy(&ctrl3, v.ring + 3 * 64, 8);
  CHECK(bell != 0 && bell == ctrl3, "the doorbell announces WQE 3 (the atomic)");
  const uint32_t qpn = v.qp->id;
  // WQE 2: the slot's WRITE (ds 3, CQ_UPDATE only).
  WqeBytes write;
  write.be32(2u << 8 | mlx5::kOpcodeRdmaWrite).be32(qpn << 8 | 3).be32(mlx5::kCtrlCqUpdate).be32(0);
  write.be64(seq_remote + 8).be32((uint32_t)key1).be32(0);  // the slot's bytes 8 ..
  write.be32(slot_bytes).be32((uint32_t)key0).be64(slot_local);
  CHECK(write.n == 48 && std::memcmp(v.ring + 2 * 64, write.b, write.n) == 0,
        "WQE 2 is the slot's WRITE");
  // WQE 3: the fenced compare-and-swap of the sequence word (ds 4, FENCE | CQ_UPDATE): swap, then
  // compare, then where the old value lands.
  WqeBytes cas;
  cas.be32(3u << 8 | 0x11).be32(qpn << 8 | 4).be32(0x80 | 0x08).be32(0);
  cas.be64(seq_remote).be32((uint32_t)key1).be32(0);
  cas.be64(sequence).be64(expected);
  cas.be32(8).be32((uint32_t)key0).be64(fetch_local);
  CHECK(cas.n == 64 && std::memcmp(v.ring + 3 * 64, cas.b, cas.n) == 0,
        "WQE 3 is the fenced compare-and-swap of the sequence word");
  int32_t states[2] = {-99, -99};
  CHECK(batch->states(first, 2, states) == 0 && states[0] == te4j::kRequestPending &&
            states[1] == te4j::kRequestPending,
        "pending until the NIC completes them: %d %d", states[0], states[1]);
  completeWqe(v, 2, 2);
  completeWqe(v, 3, 3);
  CHECK(awaitBatch(batch), "publication completes: %s", batch->lastError());
  CHECK(batch->states(first, 2, states) == 0 && states[0] == te4j::kRequestCompleted &&
            states[1] == te4j::kRequestCompleted,
        "both completed: %d %d", states[0], states[1]);
  delete batch;
  for (Rank& r : ranks) {
    delete r.t;
    std::free(r.buf);
  }

  // A region whose lkey and rkey differ has no one key for host-posted requests.
  f.split_mr_keys = true;
  Rank split;
  makeRank(&split);
  CHECK(split.t->regionKey(split.buf, kWindow) == te4j::kUnavailable &&
            contains(split.t->lastError(), "differ"),
        "split keys: %s", split.t->lastError());
  delete split.t;
  std::free(split.buf);
  f.split_mr_keys = false;
  CHECK(f.live() == 0, "%zu fake objects left after close", f.live());
  std::printf("notification publication: WRITE then fenced CAS on one QP, regionKey\n");
}

// Traffic, then connect again: after 2RST the NIC fetches from WQE 0 and writes CQE 0 with
// owner 0, so te4j must start there too: the first WQE after the reconnect lies in slot 0 with
// index 0 and the record announces only it (no old WQE re-executed), every old CQE is gone and
// nothing is consumed before the NIC completes the new WQE.
void reconnectAfterTraffic() {
  fake::Nic& f = fake::nic();
  f.roce = false;
  Rank ranks[kRanks];
  for (Rank& r : ranks) makeRank(&r);
  for (Rank& r : ranks) readMetadata(&r);
  connectAll(ranks);
  const int index = 1 * kQpsPerRank + 0;  // rank 0's QP to rank 1, channel 0
  QpView v = viewOf(ranks[0], index);
  CHECK(v.qp && v.ring && v.dbr && v.cqes && v.cq_dbr && v.uar,
        "rank 0's QP to rank 1 and its buffers");
  if (!(v.qp && v.ring && v.dbr && v.cqes && v.cq_dbr && v.uar)) return;
  Rank& r0 = ranks[0];
  // Three WQEs, all completed: the ring, the CQ and every counter have moved.
  CHECK(mc_rdma_put(r0.ctx, 0, 1, kQpsPerRank, r0.buf, r0.buf + 4096, 64, 0) == kMcRdmaOk, "put 0");
  CHECK(mc_rdma_atomic_add(r0.ctx, 0, 1, kQpsPerRank, (uint32_t*)(r0.buf + 64), 1) == kMcRdmaOk,
        "add 1");
  CHECK(mc_rdma_put(r0.ctx, 0, 1, kQpsPerRank, r0.buf, r0.buf + 8192, 64, 0) == kMcRdmaOk, "put 2");
  CHECK(awaitDoorbell(v.uar, 0, 2) != 0, "doorbell of WQE 2");
  for (uint16_t w = 0; w < 3; ++w) completeWqe(v, w, w);
  CHECK(mc_rdma_quiet(r0.ctx, 0, 1, kQpsPerRank) == kMcRdmaOk, "quiet before the reconnect");
  CHECK(__builtin_bswap32(v.dbr[mlx5::kSndDbr]) == 3 && __builtin_bswap32(v.cq_dbr[0]) == 3,
        "records before the reconnect: send %u, CQ %u", __builtin_bswap32(v.dbr[mlx5::kSndDbr]),
        __builtin_bswap32(v.cq_dbr[0]));

  std::memset(v.uar->page, 0, 4096);
  connectAll(ranks);
  checkConnections(ranks, false);
  CHECK(v.qp->resets == 1, "the QP went through RESET %d times, want 1", v.qp->resets);
  CHECK(qpnOf(ranks[0], index) == v.qp->id, "the QP number stays (the peer holds it)");
  CHECK(v.dbr[mlx5::kSndDbr] == 0 && v.dbr[mlx5::kRcvDbr] == 0 && v.cq_dbr[0] == 0,
        "doorbell records zeroed by the reconnect: send %u, CQ %u",
        __builtin_bswap32(v.dbr[mlx5::kSndDbr]), __builtin_bswap32(v.cq_dbr[0]));
  bool cq_clean = true;
  for (uint32_t c = 0; c < 16; ++c)
    cq_clean &=
        mlx5::cqe_opcode(((mlx5::Cqe64*)v.cqes)[c].dw[mlx5::kCqeDwOwner]) == mlx5::kCqeInvalid;
  CHECK(cq_clean, "every CQE invalid after the reconnect");
  int64_t err[8];
  CHECK(r0.t->queryQpError(index, err, 8) == 8 && err[6] == 0 && err[7] == 0 && err[0] == 0,
        "device counters after the reconnect: posted %lld completed %lld errors %lld",
        (long long)err[6], (long long)err[7], (long long)err[0]);

  CHECK(mc_rdma_put(r0.ctx, 0, 1, kQpsPerRank, r0.buf, r0.buf + 12288, 32, 0) == kMcRdmaOk,
        "put after");
  const uint64_t rung = awaitDoorbell(v.uar, 0, 0);
  uint64_t slot0;
  std::memcpy(&slot0, v.ring, 8);
  CHECK(rung != 0 && rung == slot0, "doorbell 0x%016llx for the WQE in slot 0 (0x%016llx)",
        (unsigned long long)rung, (unsigned long long)slot0);
  const uint32_t w0 = __builtin_bswap32((uint32_t)slot0);
  CHECK(((w0 >> 8) & 0xffff) == 0 && (w0 & 0xff) == mlx5::kOpcodeRdmaWrite,
        "slot 0 holds WQE index 0: 0x%08x", w0);
  const mlx5::RaddrSeg* raddr = (const mlx5::RaddrSeg*)(v.ring + 16);
  CHECK(__builtin_bswap64(raddr->raddr) == (uint64_t)ranks[1].meta[5] + 12288,
        "slot 0 is the new WRITE");
  CHECK(__builtin_bswap32(v.dbr[mlx5::kSndDbr]) == 1,
        "the record announces 1 WQE (got %u): none of the old ones",
        __builtin_bswap32(v.dbr[mlx5::kSndDbr]));
  uint64_t slot1 = 0;
  std::memcpy(&slot1, v.ring + 64, 8);
  CHECK(slot1 == 0, "the old WQE 1 is gone from the ring (0x%016llx)", (unsigned long long)slot1);
  IbgdaQp* qp = (IbgdaQp*)r0.ctx.qps + index;
  CHECK(ibgda_lock(&qp->lock, mc_globaltimer_ns() + 1000000000ull), "lock");
  const int consumed = ibgda_poll_cq(qp);
  ibgda_unlock(&qp->lock);
  CHECK(consumed == 0 && qp->sq_ci == 0, "no stale CQE consumed (%d consumed, sq_ci %u)", consumed,
        qp->sq_ci);
  completeWqe(v, 0, 0);
  CHECK(mc_rdma_quiet(r0.ctx, 0, 1, kQpsPerRank) == kMcRdmaOk && qp->sq_ci == 1 &&
            __builtin_bswap32(v.cq_dbr[0]) == 1,
        "the new WQE's CQE retires it");
  for (Rank& r : ranks) {
    delete r.t;
    std::free(r.buf);
  }
  CHECK(f.live() == 0, "%zu fake objects left", f.live());
  std::printf("reconnect after traffic: RESET path, no stale WQE rung, no stale CQE consumed\n");
}

// TE4J_RDMA_SL / _TRAFFIC_CLASS / _ACK_TIMEOUT / _RETRY_COUNT / _RNR_RETRY reach the mailboxes;
// malformed values are refused at initialize, naming the variable.
void fabricTuning() {
  setenv("TE4J_RDMA_SL", "3", 1);
  setenv("TE4J_RDMA_TRAFFIC_CLASS", "106", 1);  // DSCP 26, ECN 2
  setenv("TE4J_RDMA_ACK_TIMEOUT", "18", 1);
  setenv("TE4J_RDMA_RETRY_COUNT", "5", 1);
  setenv("TE4J_RDMA_RNR_RETRY", "6", 1);
  g_want_sl = 3, g_want_tclass = 106, g_want_ack_timeout = 18, g_want_retry = 5,
  g_want_rnr_retry = 6;
  for (bool roce : {true, false}) {
    fake::nic().roce = roce;
    Rank ranks[kRanks];
    for (Rank& r : ranks) makeRank(&r);
    for (Rank& r : ranks) readMetadata(&r);
    connectAll(ranks);
    checkConnections(ranks, roce);
    for (Rank& r : ranks) {
      delete r.t;
      std::free(r.buf);
    }
  }
  g_want_sl = 0, g_want_tclass = 0, g_want_ack_timeout = 20, g_want_retry = 7, g_want_rnr_retry = 7;
  for (const char* v : {"TE4J_RDMA_SL", "TE4J_RDMA_TRAFFIC_CLASS", "TE4J_RDMA_ACK_TIMEOUT",
                        "TE4J_RDMA_RETRY_COUNT", "TE4J_RDMA_RNR_RETRY"})
    unsetenv(v);
  struct Bad {
    const char* name;
    const char* value;
    bool roce;
    const char* says;
  } bad[] = {{"TE4J_RDMA_ACK_TIMEOUT", "32", false, "0..31"},
             {"TE4J_RDMA_RETRY_COUNT", "seven", false, "0..7"},
             {"TE4J_RDMA_SL", "9", true, "Ethernet priority"},
             {"TE4J_RDMA_TRAFFIC_CLASS", "-1", false, "0..255"}};
  for (const Bad& b : bad) {
    fake::nic().roce = b.roce;
    setenv(b.name, b.value, 1);
    te4j::RdmaTransport* t =
        te4j::RdmaTransport::create(te4j::kPlatformHost, 0, te4j::kRdmaBackendMlx5);
    CHECK(t->initialize("", 1, 1) == te4j::kInvalidArgument && contains(t->lastError(), b.name) &&
              contains(t->lastError(), b.says),
          "%s=%s: %s", b.name, b.value, t->lastError());
    delete t;
    unsetenv(b.name);
  }
  fake::nic().roce = false;
  CHECK(fake::nic().live() == 0, "tuning tests left %zu objects", fake::nic().live());
  std::printf(
      "fabric tuning: SL/priority, traffic class/DSCP, ack timeout, retries in the mailboxes\n");
}

// The control buffer's umem is built of 4 KiB pages (the mailboxes' offsets count in them);
// without mlx5dv_devx_umem_reg_ex every object gets its own legacy umem, used at offset 0.
void umemRegistration() {
  fake::Nic& f = fake::nic();
  for (int mode = 0; mode < 3; ++mode) {  // 0: _ex works, 1: _ex refused, 2: _ex absent
    f.fail_umem_ex = mode == 1;
    te4j::rdma::VerbsApi without_ex = fake::api(f.sysfs_root);
    without_ex.devx_umem_reg_ex = nullptr;
    if (mode == 2) te4j::rdma::injectVerbsApi(&without_ex);
    Rank r;
    makeRank(&r);
    size_t legacy = 0, four_k = 0;
    for (auto& e : f.umems) (e.second->pgsz_bitmap == 4096 ? four_k : legacy) += 1;
    size_t nonzero = 0, objects = 0;
    for (auto& e : f.objs) {
      ++objects;
      const fake::Obj* o = e.second;
      if (o->umem_offset != 0) ++nonzero;
      CHECK(o->dbr_umem_id != o->umem_id || mode == 0,
            "per-object umems: the records have their own");
      CHECK(umemAt(o->umem_id, o->umem_offset) != nullptr &&
                umemAt(o->dbr_umem_id, o->dbr_offset) != nullptr,
            "offsets inside their umems");
    }
    if (mode == 0) {
      CHECK(four_k == 1 && legacy == 0 && nonzero > 0, "one 4 KiB-page umem (%zu 4K, %zu legacy)",
            four_k, legacy);
    } else {
      CHECK(
          four_k == 0 && legacy == 3 * (size_t)kQps && nonzero == 0 && objects == 2 * (size_t)kQps,
          "mode %d: %zu legacy umems (want %d), %zu objects at a non-zero offset", mode, legacy,
          3 * kQps, nonzero);
    }
    delete r.t;
    std::free(r.buf);
    if (mode == 2) te4j::rdma::injectVerbsApi(g_api);
  }
  f.fail_umem_ex = false;
  CHECK(f.live() == 0, "umem tests left %zu objects", f.live());
  std::printf(
      "umem registration: 4 KiB page bitmap, else one legacy umem per object at offset 0\n");
}

// What explains a wait that timed out without an error CQE: QUERY_QP and the async events.
void timeoutDiagnostics() {
  fake::Nic& f = fake::nic();
  f.roce = false;
  Rank ranks[kRanks];
  for (Rank& r : ranks) makeRank(&r);
  for (Rank& r : ranks) readMetadata(&r);
  connectAll(ranks);
  CHECK(std::strlen(ranks[0].t->diagnostics()) == 0, "healthy: no diagnostics (%s)",
        ranks[0].t->diagnostics());
  fake::Obj* qp = fake::qpByNumber(qpnOf(ranks[0], 2));
  qp->state = fake::State::kErr;  // as the firmware moves a QP whose retries ran out
  const int acked = fake::acked_events;
  fake::raiseAsyncEvent(IBV_EVENT_PORT_ERR, 1);
  const std::string d = ranks[0].t->diagnostics();
  CHECK(contains(d.c_str(), "QP 2") && contains(d.c_str(), "QUERY_QP says ERR") &&
            contains(d.c_str(), "expects RTS"),
        "QUERY_QP in diagnostics: %s", d.c_str());
  CHECK(contains(d.c_str(), "async event: mlx5_0: PORT_ERR") && contains(d.c_str(), "on port 1"),
        "async event in diagnostics: %s", d.c_str());
  CHECK(fake::acked_events == acked + 1, "the event read is acknowledged (%d)",
        fake::acked_events - acked);
  CHECK(contains(ranks[1].t->diagnostics(), "PORT_ERR") && fake::acked_events == acked + 2,
        "rank 1 reads its own copy of the event");
  CHECK(contains(ranks[0].t->diagnostics(), "PORT_ERR"), "events already read stay in the report");
  for (Rank& r : ranks) {
    delete r.t;
    std::free(r.buf);
  }
  CHECK(f.live() == 0, "left %zu objects", f.live());
  std::printf("timeout diagnostics: QUERY_QP state and async events\n");
}

// A sysfs tree: two NICs under two root ports, the GPU under the second NIC's switch.
struct FakePci {
  std::string root;
  std::vector<std::string> made;  // files and directories, deepest last
};

void mkdirs(FakePci* t, const std::string& rel) {
  std::string path = t->root;
  size_t i = 0;
  while (i < rel.size()) {
    const size_t j = rel.find('/', i);
    path += "/" + rel.substr(i, (j == std::string::npos ? rel.size() : j) - i);
    if (mkdir(path.c_str(), 0700) == 0) t->made.push_back(path);
    if (j == std::string::npos) break;
    i = j + 1;
  }
}

void link(FakePci* t, const std::string& target_rel, const std::string& link_rel) {
  const std::string l = t->root + "/" + link_rel;
  if (symlink((t->root + "/" + target_rel).c_str(), l.c_str()) == 0) t->made.push_back(l);
}

void nicSelection() {
  fake::Nic& f = fake::nic();
  char dir[] = "/tmp/te4j-fake-pci-XXXXXX";
  CHECK(mkdtemp(dir) != nullptr, "mkdtemp");
  FakePci t{dir, {}};
  const std::string nic0 = "devices/pci0000:00/0000:00:01.0/0000:01:00.0";
  const std::string nic1 = "devices/pci0000:80/0000:80:01.0/0000:81:00.0/0000:82:00.0";
  const std::string gpu = "devices/pci0000:80/0000:80:01.0/0000:81:00.0/0000:83:00.0";
  for (const std::string& d :
       {nic0, nic1, gpu, std::string("class/infiniband/mlx5_0"),
        std::string("class/infiniband/mlx5_1"), std::string("bus/pci/devices")})
    mkdirs(&t, d);
  link(&t, nic0, "class/infiniband/mlx5_0/device");
  link(&t, nic1, "class/infiniband/mlx5_1/device");
  link(&t, gpu, "bus/pci/devices/0000:83:00.0");
  te4j::rdma::VerbsApi api = fake::api(t.root + "/class/infiniband");
  api.pci_devices_root = t.root + "/bus/pci/devices";

  CHECK(te4j::rdma::sysfsDistance("/a/b/c/d", "/a/b/e") == 3 &&
            te4j::rdma::sysfsDistance("", "/a") == -1,
        "sysfsDistance");
  f.device_names = {"mlx5_0", "mlx5_1"};
  f.roce = false;
  int n = 0;
  ibv_device** list = api.get_device_list(&n);
  std::string why;
  std::vector<te4j::rdma::Mlx5Candidate> c =
      te4j::rdma::mlx5Candidates(api, list, n, "", "0000:83:00.0", &why);
  CHECK(c.size() == 2 && c[0].name == "mlx5_1" && c[0].distance == 2 && c[1].name == "mlx5_0" &&
            c[1].distance == 7,
        "nearest first: %s (%d), %s (%d)", c.size() > 0 ? c[0].name.c_str() : "-",
        c.size() > 0 ? c[0].distance : 0, c.size() > 1 ? c[1].name.c_str() : "-",
        c.size() > 1 ? c[1].distance : 0);
  c = te4j::rdma::mlx5Candidates(api, list, n, "", "", &why);
  CHECK(c.size() == 2 && c[0].name == "mlx5_0" && c[0].distance == -1, "no GPU: ibverbs' order");
  c = te4j::rdma::mlx5Candidates(api, list, n, "mlx5_0", "0000:83:00.0", &why);
  CHECK(c.size() == 1 && c[0].name == "mlx5_0", "an explicit name wins over affinity");
  api.free_device_list(list);

  {
    te4j::rdma::Mlx5Device d(&api);
    CHECK(d.open("", "0000:83:00.0", &why) == te4j::kOk && d.name() == "mlx5_1" &&
              d.pciDistance() == 2,
          "open picks the GPU's NIC: %s %s", d.name().c_str(), why.c_str());
  }
  f.ports_down = {"mlx5_1"};
  {
    te4j::rdma::Mlx5Device d(&api);
    CHECK(d.open("", "0000:83:00.0", &why) == te4j::kOk && d.name() == "mlx5_0" &&
              contains(d.skipped().c_str(), "mlx5_1 port 1 is DOWN"),
          "port down: the next device (%s, skipped '%s')", d.name().c_str(), d.skipped().c_str());
  }
  f.ports_down = {"mlx5_0", "mlx5_1"};
  {
    te4j::rdma::Mlx5Device d(&api);
    why.clear();
    CHECK(d.open("", "0000:83:00.0", &why) == te4j::kUnavailable &&
              contains(why.c_str(), "no usable mlx5 device") &&
              contains(why.c_str(), "mlx5_0 port 1 is DOWN") &&
              contains(why.c_str(), "mlx5_1 port 1 is DOWN"),
          "every port down: %s", why.c_str());
  }
  f.ports_down.clear();
  f.device_names = {"mlx5_0"};
  for (size_t i = t.made.size(); i-- > 0;) {
    if (unlink(t.made[i].c_str()) != 0) rmdir(t.made[i].c_str());
  }
  rmdir(t.root.c_str());
  CHECK(f.live() == 0, "NIC selection left %zu objects", f.live());
  std::printf("NIC selection: nearest the GPU in the PCIe tree, next device when a port is down\n");
}

// NIC atomics are atomic only against NIC atomics: by default every add on a rank with a
// connected QP goes to the NIC, the own rank's (loopback QP) and a P2P peer's included; with
// TE4J_RDMA_ATOMICS=local self / P2P adds stay load/store atomics.
void atomicRoute() {
  fake::Nic& f = fake::nic();
  f.roce = false;
  for (const char* mode : {"", "local"}) {
    if (*mode != '\0') setenv("TE4J_RDMA_ATOMICS", mode, 1);
    Rank ranks[kRanks];
    for (Rank& r : ranks) makeRank(&r);
    for (Rank& r : ranks) readMetadata(&r);
    connectAll(ranks);
    const bool via_nic = *mode == '\0';
    CHECK(((ranks[0].ctx.flags & kIbgdaAtomicsViaNic) != 0) == via_nic, "flags 0x%x (mode '%s')",
          ranks[0].ctx.flags, mode);
    // Rank 0 sees rank 1 as a P2P peer too (its buffer mapped at ranks[1].buf).
    int available[kRanks] = {1, 1};
    void* peers[kRanks] = {ranks[0].buf, ranks[1].buf};
    P2PContext p2p{available, peers, ranks[0].buf};
    const CommCtx ctx = make_comm_ctx(p2p, ranks[0].ctx, 0);
    for (int dst = 0; dst < kRanks; ++dst) {
      const QpView v = viewOf(ranks[0], dst * kQpsPerRank);
      uint32_t* word = (uint32_t*)(ranks[0].buf + 256);
      uint32_t* target = (uint32_t*)(ranks[dst].buf + 256);
      const uint32_t before = *target;
      CHECK(mc_red_add(ctx, dst, 0, kQpsPerRank, word, 5) == kMcRouteOk, "mc_red_add to rank %d",
            dst);
      CHECK(mc_signal_noret(ctx, dst, 0, kQpsPerRank, word, 2) == kMcRouteOk,
            "mc_signal_noret to rank %d", dst);
      uint64_t first8[2] = {0, 0};
      std::memcpy(&first8[0], v.ring, 8);
      std::memcpy(&first8[1], v.ring + 64, 8);
      const bool posted =
          (__builtin_bswap32((uint32_t)first8[0]) & 0xff) == mlx5::kOpcodeAtomicMaskedFa &&
          (__builtin_bswap32((uint32_t)first8[1]) & 0xff) == mlx5::kOpcodeAtomicMaskedFa;
      if (via_nic) {
        CHECK(posted && *target == before,
              "rank %d: both adds posted to the NIC (%s), word untouched (%u)", dst,
              dst == 0 ? "loopback" : "P2P peer", *target);
      } else {
        CHECK(!posted && *target == before + 7,
              "rank %d: local adds (word %u, want %u), nothing posted", dst, *target, before + 7);
      }
    }
    for (Rank& r : ranks) {
      delete r.t;
      std::free(r.buf);
    }
    unsetenv("TE4J_RDMA_ATOMICS");
  }
  setenv("TE4J_RDMA_ATOMICS", "mixed", 1);
  te4j::RdmaTransport* t =
      te4j::RdmaTransport::create(te4j::kPlatformHost, 0, te4j::kRdmaBackendMlx5);
  CHECK(t->initialize("", 1, 1) == te4j::kInvalidArgument &&
            contains(t->lastError(), "TE4J_RDMA_ATOMICS"),
        "bad TE4J_RDMA_ATOMICS: %s", t->lastError());
  delete t;
  unsetenv("TE4J_RDMA_ATOMICS");
  CHECK(f.live() == 0, "atomic route tests left %zu objects", f.live());
  std::printf("atomic route: self and P2P adds through the NIC by default, local on request\n");
}

// The connect-time probe's decision: GPU doorbells only when the GPU-rung WRITE completed; the
// proxy when only its doorbell completed it; a failure when neither did. (The probe itself
// needs a GPU and a NIC: test_mlx5_gpu_support runs its kernel against the software NIC.)
void doorbellVerdicts() {
  using te4j::rdma::DoorbellVerdict;
  using te4j::rdma::doorbellVerdict;
  CHECK(doorbellVerdict(kMcRdmaOk, false) == DoorbellVerdict::kGpu, "completed: GPU doorbells");
  CHECK(doorbellVerdict(kMcRdmaTimeout, true) == DoorbellVerdict::kProxy, "lost GPU write: proxy");
  CHECK(doorbellVerdict(kMcRdmaTimeout, false) == DoorbellVerdict::kBroken,
        "nothing completes: broken");
  CHECK(doorbellVerdict(kMcRdmaQpError, false) == DoorbellVerdict::kBroken, "error CQE: broken");
  CHECK(doorbellVerdict(kMcRdmaFatal, true) == DoorbellVerdict::kBroken, "fatal CQE: broken");
  CHECK(doorbellVerdict(1, false) == DoorbellVerdict::kUnverified, "probe did not run: unverified");
  CHECK(contains(te4j::rdma::doorbellVerdictText(DoorbellVerdict::kProxy), "proxy"), "proxy text");
  std::printf("doorbell verdicts: GPU, proxy fallback, broken, unverified\n");
}

int g_dmabuf_fd = -1;
int okDmabuf(int, void*, size_t, uint64_t* offset, std::string*) {
  g_dmabuf_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  *offset = 0x40;
  return g_dmabuf_fd;
}
int noDmabuf(int, void*, size_t, uint64_t*, std::string* why) {
  *why = "dma-buf refused by the test";
  return -1;
}

void registrationPaths() {
  fake::Nic& f = fake::nic();
  te4j::rdma::VerbsApi api = fake::api("");
  ibv_pd pd{};
  uint8_t* gpu = (uint8_t*)std::aligned_alloc(4096, 8192);
  te4j::rdma::Registration reg;
  std::string why;
  CHECK(te4j::rdma::registerRegion(api, &pd, gpu + 0x40, 4096, &okDmabuf, 0, &reg, &why) == 0 &&
            reg.dmabuf,
        "dma-buf path: %s", why.c_str());
  CHECK(f.dmabuf_offset == 0x40 && f.dmabuf_iova == (uint64_t)(uintptr_t)(gpu + 0x40) &&
            f.dmabuf_fd == g_dmabuf_fd,
        "ibv_reg_dmabuf_mr got offset 0x%llx iova 0x%llx fd %d",
        (unsigned long long)f.dmabuf_offset, (unsigned long long)f.dmabuf_iova, f.dmabuf_fd);
  CHECK(fcntl(g_dmabuf_fd, F_GETFD) == -1, "the dma-buf fd is closed after registration");
  fake::deregMr(reg.mr);

  CHECK(te4j::rdma::registerRegion(api, &pd, gpu, 4096, &noDmabuf, 0, &reg, &why) == 0 &&
            !reg.dmabuf && contains(reg.note.c_str(), "refused by the test"),
        "no dma-buf: fallback to ibv_reg_mr (note '%s')", reg.note.c_str());
  fake::deregMr(reg.mr);

  f.fail_dmabuf_mr = true;
  CHECK(te4j::rdma::registerRegion(api, &pd, gpu, 4096, &okDmabuf, 0, &reg, &why) == 0 &&
            !reg.dmabuf && contains(reg.note.c_str(), "ibv_reg_dmabuf_mr failed"),
        "dma-buf MR refused: fallback (note '%s')", reg.note.c_str());
  fake::deregMr(reg.mr);
  f.fail_dmabuf_mr = false;

  f.fail_reg_mr = true;
  CHECK(te4j::rdma::registerRegion(api, &pd, gpu, 4096, &noDmabuf, 0, &reg, &why) != 0 &&
            contains(why.c_str(), "no dma-buf or peer-memory support") &&
            contains(why.c_str(), "nvidia-peermem") && reg.mr == nullptr,
        "both fail: %s", why.c_str());
  why.clear();
  CHECK(te4j::rdma::registerRegion(api, &pd, gpu, 4096, nullptr, 0, &reg, &why) != 0 &&
            contains(why.c_str(), "ibv_reg_mr") && !contains(why.c_str(), "peer-memory"),
        "host memory: %s", why.c_str());
  f.fail_reg_mr = false;
  CHECK(f.mrs.empty(), "%zu MRs left", f.mrs.size());
  std::free(gpu);
  std::printf("registration: dma-buf, fallbacks to ibv_reg_mr, and the peer-memory message\n");
}

void noDevice() {
  fake::Nic& f = fake::nic();
  f.device_names = {"rxe0"};
  f.is_mlx5 = false;
  te4j::RdmaTransport* t =
      te4j::RdmaTransport::create(te4j::kPlatformHost, 0, te4j::kRdmaBackendMlx5);
  CHECK(t->status() == te4j::kUnavailable && contains(t->lastError(), "no mlx5 device"), "mlx5: %s",
        t->lastError());
  delete t;
  t = te4j::RdmaTransport::create(te4j::kPlatformHost, 0, te4j::kRdmaBackendAuto);
  CHECK(t->status() == 0 && t->backend() == te4j::kRdmaBackendSoft, "auto without mlx5: soft NIC");
  delete t;
  f.device_names = {"mlx5_0"};
  f.is_mlx5 = true;
  t = te4j::RdmaTransport::create(te4j::kPlatformHost, 0, te4j::kRdmaBackendAuto);
  CHECK(t->status() == 0 && t->backend() == te4j::kRdmaBackendMlx5,
        "auto with mlx5: the DevX backend");
  delete t;
  std::printf("device choice: no mlx5 device reported, auto picks mlx5 only when present\n");
}

// The real libraries: rdma-core is installed here but no NIC.
void realLibraries() {
  te4j::rdma::injectVerbsApi(nullptr);
  std::string why;
  const te4j::rdma::VerbsApi* api = te4j::rdma::loadVerbsApi(&why);
  te4j::RdmaTransport* t =
      te4j::RdmaTransport::create(te4j::kPlatformHost, 0, te4j::kRdmaBackendMlx5);
  if (t->status() == 0) {
    std::printf(
        "SKIP real libraries: an mlx5 device exists here (the fake tests cover the rest)\n");
  } else {
    CHECK(t->status() == te4j::kUnavailable &&
              (contains(t->lastError(), "no mlx5 device") ||
               (api == nullptr && contains(t->lastError(), "not found"))),
          "real rdma-core: %s", t->lastError());
    std::printf("real rdma-core (%s): %s\n", api != nullptr ? "loaded" : "absent", t->lastError());
  }
  delete t;
}

}  // namespace

int main() {
  const std::string sysfs = fake::makeSysfs();
  static const te4j::rdma::VerbsApi api = fake::api(sysfs);
  g_api = &api;
  fake::nic().sysfs_root = sysfs;
  te4j::rdma::injectVerbsApi(&api);
  twoRanks(false);
  twoRanks(true);
  reconnectAfterTraffic();
  notificationPublication();
  fabricTuning();
  umemRegistration();
  timeoutDiagnostics();
  nicSelection();
  atomicRoute();
  doorbellVerdicts();
  gidOverride();
  initializeFailures();
  queueFailures();
  registrationPaths();
  proxyRereads();
  noDevice();
  realLibraries();
  fake::removeSysfs(sysfs);
  if (g_fail != 0) {
    std::printf("FAILED: %d of %d checks\n", g_fail, g_checks);
    return 1;
  }
  std::printf("mlx5 backend: %d checks passed\n", g_checks);
  return 0;
}

#endif  // TE4J_HAVE_RDMA_CORE_HEADERS
