// softnic_pair.h — the two-process setup of the software-NIC test drivers: rank 0 (the parent)
// and rank 1 (a forked child) talk over a socketpair for barriers and the metadata exchange,
// and join their software NICs over TCP on loopback. Each driver supplies runRank(rank); this
// header supplies everything around it: CHECK, bounded waits, the barrier, the connect, and
// main's fork/wait. Header-only: every driver is a program of its own.
//
// Every bound is multiplied by TE4J_TIMEOUT_SCALE (scripts/sanitize.sh sets it), since
// instrumented code and the NIC threads run several times slower.
//
// ThreadSanitizer tracks synchronisation inside one process only. When rank 1 reads bytes and
// then, through a barrier to rank 0 (another process) and rank 0's next request over TCP, its
// responder thread writes those bytes again, that order is real but invisible to TSan, which
// reports a race. A driver therefore never lets a later phase write bytes an earlier phase
// read: fresh destinations leave TSan only the in-process order it does see (data placed by
// the responder before the signal's fetch-and-add, a release RMW on the same thread, which the
// waiter acquires).
#pragma once

#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "te4j/rdma_api.h"
#include "transport/device/ibgda_device.cuh"

namespace softnic_pair {

inline int g_fd = -1;  // socketpair to the other rank
inline int g_rank = -1;
inline int g_fail = 0;
inline pid_t g_child = -1;  // in rank 0: rank 1's pid (a driver may stop and continue it)

/// TE4J_TIMEOUT_SCALE, at least 1.
inline int timeoutScale() {
  const char* v = std::getenv("TE4J_TIMEOUT_SCALE");
  const int s = v != nullptr ? std::atoi(v) : 1;
  return s >= 1 ? s : 1;
}
inline int seconds(int base) { return base * timeoutScale(); }

// MSG_NOSIGNAL: a rank that died is reported by the barrier, not by SIGPIPE.
inline bool sendAll(const void* p, size_t n) {
  return send(g_fd, p, n, MSG_NOSIGNAL) == (ssize_t)n;
}
inline bool recvAll(void* p, size_t n) {
  uint8_t* b = (uint8_t*)p;
  while (n > 0) {
    const ssize_t r = read(g_fd, b, n);
    if (r <= 0) return false;
    b += r;
    n -= (size_t)r;
  }
  return true;
}

/// Both ranks reach this point; a rank that is gone ends this one (exit 2).
inline void barrier() {
  int x = g_fail;
  int y = 0;
  if (!sendAll(&x, 4) || !recvAll(&y, 4)) {
    std::printf("FAIL rank %d: barrier lost the other rank\n", g_rank);
    std::exit(2);
  }
}

/// Waits (bounded) until *word reaches expected (wrapping compare), acquiring it.
inline bool waitValue(const uint32_t* word, uint32_t expected, int seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while ((int32_t)(__atomic_load_n(word, __ATOMIC_ACQUIRE) - expected) < 0) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::yield();
  }
  return true;
}

}  // namespace softnic_pair

#define CHECK(cond, ...)                                                     \
  do {                                                                       \
    if (!(cond)) {                                                           \
      std::printf("FAIL rank %d line %d: ", softnic_pair::g_rank, __LINE__); \
      std::printf(__VA_ARGS__);                                              \
      std::printf("\n");                                                     \
      std::fflush(stdout);                                                   \
      ++softnic_pair::g_fail;                                                \
    }                                                                        \
  } while (0)

namespace softnic_pair {

/// Both ranks' connection tables, as connectPeers takes them, from the exchanged metadata.
struct PeerTables {
  static constexpr int kRanks = 2;
  uint64_t addrs[kRanks] = {};
  uint64_t prefixes[kRanks] = {};
  uint64_t ifids[kRanks] = {};
  uint32_t keys[kRanks] = {};
  uint32_t lids[kRanks] = {};
  std::vector<uint32_t> qpns;  // kRanks rows of kRanks * qps_per_rank
  bool header_ok = true;       // both rows carry the metadata magic and version
};

/// Exchanges metadata and the NICs' keys with the other rank (a connection must prove the
/// listener's key, so the keys travel with the metadata) and fills *tables. False when the
/// other rank is gone or the metadata cannot be read.
inline bool exchangeMetadata(te4j::RdmaTransport* t, int qps_per_rank, PeerTables* tables) {
  constexpr int kRanks = PeerTables::kRanks;
  const int n = t->localMetadataLength();
  std::vector<int64_t> mine(n), other(n);
  if (t->localMetadata(mine.data(), n) != n) {
    CHECK(false, "metadata: %s", t->lastError());
    return false;
  }
  if (!sendAll(mine.data(), 8 * n) || !recvAll(other.data(), 8 * n)) return false;
  const int64_t* row[kRanks] = {g_rank == 0 ? mine.data() : other.data(),
                                g_rank == 0 ? other.data() : mine.data()};
  tables->qpns.assign((size_t)kRanks * kRanks * qps_per_rank, 0);
  for (int r = 0; r < kRanks; ++r) {
    tables->header_ok = tables->header_ok && row[r][0] == te4j::kRdmaMetadataMagic &&
                        row[r][1] == te4j::kRdmaMetadataVersion;
    tables->addrs[r] = (uint64_t)row[r][5];
    tables->keys[r] = (uint32_t)row[r][6];
    tables->prefixes[r] = (uint64_t)row[r][7];
    tables->ifids[r] = (uint64_t)row[r][8];
    tables->lids[r] = (uint32_t)row[r][9];
    for (int q = 0; q < kRanks * qps_per_rank; ++q)
      tables->qpns[(size_t)r * kRanks * qps_per_rank + q] =
          (uint32_t)row[r][te4j::kRdmaMetadataHeader + q];
  }
  uint8_t auth[kRanks][32];
  CHECK(t->authKey(auth[g_rank], 32) == 32, "authKey: %s", t->lastError());
  if (!sendAll(auth[g_rank], 32) || !recvAll(auth[1 - g_rank], 32)) return false;
  CHECK(t->setPeerKeys(&auth[0][0], 64) == 0, "setPeerKeys: %s", t->lastError());
  return true;
}

/// connectPeers with the tables and a peer mask.
inline int connectWith(te4j::RdmaTransport* t, PeerTables& tables, uint64_t mask) {
  return t->connectPeers(g_rank, true, tables.addrs, tables.keys, tables.qpns.data(), tables.lids,
                         tables.prefixes, tables.ifids, mask);
}

/// Connects to both ranks (own included), waits for the other rank to be connected too (the
/// barrier: both ends up before anyone posts) and fills *ctx. False when it failed.
inline bool connectBoth(te4j::RdmaTransport* t, PeerTables& tables,
                        mooncake::device::IbgdaContext* ctx) {
  const int s = connectWith(t, tables, 3);
  CHECK(s == 0, "connectPeers: %s", t->lastError());
  barrier();
  CHECK(t->fillIbgdaContext(ctx) == 0, "fillIbgdaContext: %s", t->lastError());
  return s == 0;
}

/// exchangeMetadata then connectBoth.
inline bool connectPair(te4j::RdmaTransport* t, int qps_per_rank,
                        mooncake::device::IbgdaContext* ctx) {
  PeerTables tables;
  if (!exchangeMetadata(t, qps_per_rank, &tables)) return false;
  return connectBoth(t, tables, ctx);
}

/// main() of a driver: forks rank 1, runs rank 0 here, and prints "PASS name" or "FAIL name".
/// A hung rank dies by alarm (300 s, scaled) instead of hanging CI; rank 1 is continued before
/// it is waited for, so a driver that stopped it never leaves it stopped, whatever failed.
inline int runPair(const char* name, int (*run_rank)(int)) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
    std::perror("socketpair");
    return 1;
  }
  std::fflush(stdout);
  const pid_t child = fork();
  if (child < 0) {
    std::perror("fork");
    return 1;
  }
  if (child == 0) {
    close(sv[0]);
    g_fd = sv[1];
    alarm(300 * timeoutScale());
    const int rc = run_rank(1);
    std::fflush(stdout);
    _exit(rc);
  }
  close(sv[1]);
  g_fd = sv[0];
  g_child = child;
  alarm(300 * timeoutScale());
  const int mine = run_rank(0);
  kill(child, SIGCONT);
  int status = 0;
  waitpid(child, &status, 0);
  const bool ok = mine == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  std::printf("%s %s\n", ok ? "PASS" : "FAIL", name);
  return ok ? 0 : 1;
}

}  // namespace softnic_pair
