// fuzz_rdma_metadata.cpp — what the software NIC's connectPeers makes of the other ranks' RDMA
// metadata: their addresses (GID ::ffff:IPv4 and lid = TCP port), QP numbers, remote address and
// key, and NIC keys (setPeerKeys), as the Java layer decoded them from the exchanged bytes
// (RdmaMetadata.fromBytes, which the Java API fuzzer covers) and passes them in.
//
// Setup, once: two software-NIC transports of a 2-rank job on loopback, each with a registered
// buffer and its QPs; this target's transport is rank 0, the other one only answers. Input:
// byte 0 the local rank (2 is out of range), byte 1 the mask, byte 2 is_roce, byte 3 how the
// keys are passed; then, per rank, a byte of choices and the fuzzed fields. The choice bits
// replace fuzzed fields with that rank's real ones (address, QP row, NIC key, raddr/rkey):
// the port and keys are new every run, and without them no input would ever get past the
// handshake. connectPeers runs under a 100 ms deadline, so every input ends quickly whatever it
// names.
// Fuzzed IPv4 addresses must not reach other machines: the target moves itself into a network
// namespace of its own with only loopback (root, or unprivileged user namespaces); where that is
// refused it maps every address outside 127/8 onto 127.0.0.1 and says so.
// Invariants: the call returns (bounded by the deadline plus slack); it succeeds only for a
// valid local rank, RoCE addressing and a mask of the job's ranks; a refused call leaves a message.
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <vector>

#include "fuzz_support.h"
#include "te4j/rdma_api.h"

using namespace te4j;
namespace fz = te4j::fuzz;

namespace {

constexpr int kRanks = 2;
constexpr int kQps = kRanks;  // one QP per rank
constexpr size_t kBytes = 1 << 16;
constexpr int kTimeoutMs = 100;

bool g_isolated = false;

struct Rank {
  RdmaTransport* t = nullptr;
  std::vector<int64_t> meta;
  uint8_t key[32];
};
Rank g_rank[kRanks];

bool loopbackUp() {
  const int s = socket(AF_INET, SOCK_DGRAM, 0);
  if (s < 0) return false;
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
  bool ok = ioctl(s, SIOCGIFFLAGS, &ifr) == 0;
  ifr.ifr_flags |= IFF_UP;
  ok = ok && ioctl(s, SIOCSIFFLAGS, &ifr) == 0;
  close(s);
  return ok;
}

void isolate() {
  // Before any thread starts: the NICs' threads inherit this thread's namespace.
  if ((unshare(CLONE_NEWNET) == 0 || unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0) && loopbackUp()) {
    g_isolated = true;
  } else {
    std::fprintf(stderr,
                 "fuzz_rdma_metadata: no network namespace of its own here (%s): addresses outside "
                 "127/8 are mapped onto 127.0.0.1\n",
                 std::strerror(errno));
  }
}

void setUp(Rank* r) {
  r->t = RdmaTransport::create(kPlatformHost, 0, kRdmaBackendSoft);
  FUZZ_ASSERT(r->t != nullptr && r->t->status() == kOk);
  void* buf = aligned_alloc(4096, kBytes);
  std::memset(buf, 0, kBytes);
  FUZZ_ASSERT(r->t->initialize("soft@127.0.0.1", kRanks, kQps) == kOk);
  FUZZ_ASSERT(r->t->registerMemory(buf, kBytes) == kOk);
  FUZZ_ASSERT(r->t->setRingSize(4) == kOk);
  FUZZ_ASSERT(r->t->allocateControlBuffer() == kOk);
  FUZZ_ASSERT(r->t->createQueuePairs(nullptr) == kOk);
  FUZZ_ASSERT(r->t->setConnectTimeoutMs(kTimeoutMs) == kOk);
  r->meta.resize((size_t)r->t->localMetadataLength());
  FUZZ_ASSERT(r->t->localMetadata(r->meta.data(), (int)r->meta.size()) == (int)r->meta.size());
  FUZZ_ASSERT(r->t->authKey(r->key, 32) == 32);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  isolate();
  for (Rank& r : g_rank) setUp(&r);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fz::Bytes in{data, size};
  const int local_rank = in.u8() % 3;
  const uint64_t mask = in.u8() & 7;  // bit 2: a rank the job does not have
  const bool is_roce = (in.u8() & 1) == 0;
  const uint8_t key_mode = in.u8() % 3;

  uint64_t addrs[kRanks], prefixes[kRanks], ifids[kRanks];
  uint32_t rkeys[kRanks], lids[kRanks];
  uint32_t qpns[kRanks * kQps];
  uint8_t keys[kRanks * 32];
  for (int r = 0; r < kRanks; ++r) {
    const uint8_t choice = in.u8();
    const Rank& real = g_rank[r];
    addrs[r] = in.u64();
    rkeys[r] = in.u32();
    lids[r] = in.u32();
    prefixes[r] = in.u64();
    ifids[r] = in.u64();
    for (int q = 0; q < kQps; ++q) qpns[r * kQps + q] = in.u32();
    for (int b = 0; b < 32; ++b) keys[r * 32 + b] = in.u8();
    if (choice & 1) {
      prefixes[r] = (uint64_t)real.meta[7];
      ifids[r] = (uint64_t)real.meta[8];
      lids[r] = (uint32_t)real.meta[9];
    }
    if (choice & 2)
      for (int q = 0; q < kQps; ++q)
        qpns[r * kQps + q] = (uint32_t)real.meta[kRdmaMetadataHeader + q];
    if (choice & 4) std::memcpy(keys + r * 32, real.key, 32);
    if (choice & 8) {
      addrs[r] = (uint64_t)real.meta[5];
      rkeys[r] = (uint32_t)real.meta[6];
    }
    if (!g_isolated && (uint8_t)(ifids[r] >> 24) != 127)
      ifids[r] = (ifids[r] & ~0xffffffffull) | 0x7f000001u;
  }

  RdmaTransport* t = g_rank[0].t;
  // Keys of an earlier input must not carry over: every input starts from keys nobody has.
  static const uint8_t kNoKeys[kRanks * 32] = {};
  FUZZ_ASSERT(t->setPeerKeys(kNoKeys, sizeof(kNoKeys)) == kOk);
  const int key_status = key_mode == 0   ? t->setPeerKeys(keys, sizeof(keys))
                         : key_mode == 1 ? t->setPeerKeys(keys, (int)sizeof(keys) - 1)
                                         : kOk;
  if (key_mode == 1) FUZZ_ASSERT(key_status != kOk);
  const auto start = std::chrono::steady_clock::now();
  const int status =
      t->connectPeers(local_rank, is_roce, addrs, rkeys, qpns, lids, prefixes, ifids, mask);
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - start);
  // The deadline is the call's. The slack is for sanitizers and a machine shared with other
  // builds (stalls of a second or two were seen at a load of 15 on 2 cores); what it must catch
  // is a wait the deadline does not bound, such as the NIC's 30 s I/O timeout.
  if (took.count() > kTimeoutMs + 500)
    std::fprintf(stderr, "fuzz_rdma_metadata: slow connectPeers: %lld ms (deadline %d ms)\n",
                 (long long)took.count(), kTimeoutMs);
  FUZZ_ASSERT(took.count() < kTimeoutMs + 5000);
  // Replaying one input with TE4J_FUZZ_VERBOSE=1 says what became of it.
  static const bool verbose = std::getenv("TE4J_FUZZ_VERBOSE") != nullptr;
  if (verbose)
    std::fprintf(stderr, "connectPeers: %d %s\n", status, status == kOk ? "" : t->lastError());
  if (status == kOk) {
    FUZZ_ASSERT(local_rank < kRanks && is_roce && (mask & 4) == 0);
  } else {
    FUZZ_ASSERT(std::strlen(t->lastError()) > 0);
  }
  return 0;
}
