// test_rdma_cuda_softnic.cpp — the GPU-initiated RDMA path through the software NIC, natively:
// two ranks, rank r on GPU r modulo the GPUs present (both on GPU 0 with one), P2P disabled for the
// pair (each window maps only its own rank), so every op to the other rank is posted by a te4j
// kernel as mlx5 WQEs and executed by the software NIC over TCP loopback. Uses te4j's C++ API only
// (te4j/api.h, te4j/rdma_api.h).
//
//   test_rdma_cuda_softnic             ranks as two forked processes (as the Java test runs them)
//   test_rdma_cuda_softnic --threads   both ranks in this process, one thread each
//
// Steps (each bounded; a failure prints the op's message, then every QP's ring counters and
// error record and the NIC statistics and diagnostics of that rank):
//   0. a lone WRITE (put), then a lone masked fetch-and-add (signal), both ways at once;
//   1. put + signal, 4 B .. 16 MiB, verified byte for byte with a poisoned tail;
//   2. many writers: 4 threads x 250 redAdds per rank to both ranks' counters, exact total;
//   3. one error CQE (the peer deregistered its window: remote access error 0x13), the QP's
//      error state, then recreateQueuePairs + reconnect and a verified put + signal;
//   4. (with --timing, or TE4J_SOFTNIC_TIMING=1) figures, printed as TIMING lines and never
//      asserted: 4 KiB puts back to back with the receiver idle and with a waitSignal kernel
//      spinning on the receiver's GPU, the 8 B put+signal round trip, 1 MiB and 16 MiB puts.
//      Run both modes: two processes on one GPU time-slice it (a rank's NIC copies and atomic
//      kernel wait for the other context's slice), one process (--threads) does not.
// Prints SKIP and exits 0 without a CUDA device (or without the CUDA build / a driver). Two
// processes on one GPU only time-slice it; the bounds below are seconds, far above a slice.
// TE4J_TIMEOUT_SCALE multiplies every bound; TE4J_DEVICE_TIMEOUT_MS sets the device-side bound
// of RDMA waits (default 5000).
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "te4j/api.h"
#include "te4j/rdma_api.h"

namespace {

constexpr int kRanks = 2;
constexpr int kQpsPerRank = 2;
constexpr int kRing = 64;
constexpr int kExitSkip = 3;
constexpr size_t kMiB = 1u << 20;
constexpr size_t kMaxPut = 16 * kMiB;
constexpr size_t kSlot = kMaxPut + 4096;    // receive slot [0, kSlot), send slot [kSlot, 2 kSlot)
constexpr size_t kSigData = 2 * kSlot;      // put+signal signal word (from the peer)
constexpr size_t kCounter = kSigData + 64;  // many-writer counter
constexpr size_t kSigRecover = kSigData + 128;
constexpr size_t kSigLone = kSigData + 192;
constexpr size_t kSigPing = kSigData + 256;  // timing: rank 0 -> rank 1 round trips
constexpr size_t kSigPong = kSigData + 320;  // timing: rank 1 -> rank 0
constexpr size_t kSigBusy = kSigData + 384;  // timing: ends the receiver's spinning wait
constexpr size_t kWindow = kSigData + 4096;
constexpr int kWriters = 4;
constexpr int kWrites = 250;

int timeoutScale() {
  const char* v = std::getenv("TE4J_TIMEOUT_SCALE");
  const int s = v != nullptr ? std::atoi(v) : 1;
  return s >= 1 ? s : 1;
}

int64_t deviceTimeoutNs() {
  const char* v = std::getenv("TE4J_DEVICE_TIMEOUT_MS");
  const long long ms = v != nullptr ? std::atoll(v) : 5000;
  return (ms > 0 ? ms : 5000) * 1000000ll * timeoutScale();
}

// Host-side bound of synchronize / barriers: well above the device bound, so the device reports
// first (with its QP snapshot) when the NIC does not answer.
int64_t hostTimeoutNs() { return deviceTimeoutNs() * 3 + 20000000000ll * timeoutScale(); }

uint8_t patternByte(size_t i, uint32_t seed) {
  return (uint8_t)((i * 131 + seed * 7 + (i >> 12)) & 0xff);
}
constexpr uint8_t kPoison = 0xee;

struct Rank {
  int rank = -1;
  int peer = -1;
  int device = -1;
  int fd = -1;  // socket to the other rank (metadata, barriers)
  int fails = 0;
  te4j::P2pTransport* p2p = nullptr;
  te4j::RdmaTransport* rdma = nullptr;
  te4j::OpStream* stream = nullptr;
  mooncake::device::CommCtx* ctx = nullptr;
  uint8_t* win = nullptr;  // device address of the window

  void say(const char* fmt, ...) const {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    std::printf("[rank %d] %s\n", rank, buf);
    std::fflush(stdout);
  }
};

// Prints everything the NIC and the device contexts know: what to read when a step fails.
void dumpDiagnostics(Rank& r, const char* why) {
  r.say("---- diagnostics (%s) ----", why);
  if (r.rdma == nullptr) return;
  int64_t st[32];
  const int n = r.rdma->statistics(st, 32);
  if (n > 0) {
    std::string names = r.rdma->statisticsNames();
    std::string line;
    size_t at = 0;
    for (int i = 0; i < n; ++i) {
      const size_t comma = names.find(',', at);
      line += names.substr(at, comma == std::string::npos ? std::string::npos : comma - at) + "=" +
              std::to_string((long long)st[i]) + " ";
      at = comma == std::string::npos ? names.size() : comma + 1;
    }
    r.say("NIC statistics: %s", line.c_str());
  } else {
    r.say("NIC statistics unavailable: %s", r.rdma->lastError());
  }
  const int qps = r.rdma->numRanks() * r.rdma->qpsPerRank();
  for (int q = 0; q < qps; ++q) {
    int64_t e[8];
    if (r.rdma->queryQpError(q, e, 8) != 8) {
      r.say("QP %d: queryQpError failed: %s", q, r.rdma->lastError());
      continue;
    }
    r.say(
        "QP %d (to rank %d, channel %d): WQEBBs posted %lld completed %lld; error CQEs %lld, first "
        "syndrome 0x%02llx vendor 0x%02llx opcode 0x%llx at wqe %lld; fatal CQEs %lld",
        q, q / kQpsPerRank, q % kQpsPerRank, (long long)e[6], (long long)e[7], (long long)e[0],
        (long long)e[1], (long long)e[2], (long long)e[3], (long long)e[4], (long long)e[5]);
  }
  const std::string diag = r.rdma->diagnostics();
  r.say("NIC diagnostics: %s", diag.empty() ? "(none)" : diag.c_str());
  r.say("---- end of diagnostics ----");
}

#define CHECK(r, cond, ...)                             \
  do {                                                  \
    if (!(cond)) {                                      \
      char what_[512];                                  \
      std::snprintf(what_, sizeof(what_), __VA_ARGS__); \
      (r).say("FAIL line %d: %s", __LINE__, what_);     \
      ++(r).fails;                                      \
    }                                                   \
  } while (0)

// ---- the socket between the ranks -----------------------------------------------------------

bool sendAll(Rank& r, const void* p, size_t n) {
  const uint8_t* b = (const uint8_t*)p;
  while (n > 0) {
    const ssize_t w = send(r.fd, b, n, MSG_NOSIGNAL);
    if (w <= 0) return false;
    b += w;
    n -= (size_t)w;
  }
  return true;
}

bool recvAll(Rank& r, void* p, size_t n) {
  uint8_t* b = (uint8_t*)p;
  const int timeout_ms = (int)(hostTimeoutNs() / 1000000);
  while (n > 0) {
    pollfd pf{r.fd, POLLIN, 0};
    if (poll(&pf, 1, timeout_ms) != 1) return false;
    const ssize_t got = recv(r.fd, b, n, 0);
    if (got <= 0) return false;
    b += got;
    n -= (size_t)got;
  }
  return true;
}

// Exchanges one int; false (and the run is over) when the other rank is gone.
bool exchangeInt(Rank& r, int mine, int* theirs) {
  return sendAll(r, &mine, sizeof(mine)) && recvAll(r, theirs, sizeof(*theirs));
}

bool barrier(Rank& r, const char* where) {
  int other = 0;
  if (!exchangeInt(r, r.fails, &other)) {
    r.say("FAIL barrier '%s': the other rank is gone or stuck", where);
    ++r.fails;
    return false;
  }
  return true;
}

// ---- steps ----------------------------------------------------------------------------------

// Synchronizes the stream; on failure prints the op's message and the diagnostics.
bool syncOk(Rank& r, te4j::OpStream* s, const char* what) {
  const auto t0 = std::chrono::steady_clock::now();
  const int rc = s->synchronize(hostTimeoutNs());
  if (rc == te4j::kOk) return true;
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  r.say("FAIL %s: synchronize returned %d after %.1f ms: %s", what, rc, ms, s->lastError());
  ++r.fails;
  dumpDiagnostics(r, what);
  return false;
}

// Metadata exchange + connectPeers + barrier + fillCommCtx (also after recreateQueuePairs).
bool connectRdma(Rank& r) {
  const int n = r.rdma->localMetadataLength();
  std::vector<int64_t> mine(n), other(n);
  if (r.rdma->localMetadata(mine.data(), n) != n) {
    CHECK(r, false, "localMetadata: %s", r.rdma->lastError());
    return false;
  }
  if (!sendAll(r, mine.data(), 8 * (size_t)n) || !recvAll(r, other.data(), 8 * (size_t)n)) {
    CHECK(r, false, "metadata exchange: the other rank is gone");
    return false;
  }
  const int64_t* row[kRanks] = {r.rank == 0 ? mine.data() : other.data(),
                                r.rank == 0 ? other.data() : mine.data()};
  uint64_t addrs[kRanks], prefixes[kRanks], ifids[kRanks];
  uint32_t keys[kRanks], lids[kRanks];
  const int qps = kRanks * kQpsPerRank;
  std::vector<uint32_t> qpns((size_t)kRanks * qps);
  for (int k = 0; k < kRanks; ++k) {
    CHECK(r, row[k][0] == te4j::kRdmaMetadataMagic && row[k][1] == te4j::kRdmaMetadataVersion,
          "metadata header of rank %d", k);
    addrs[k] = (uint64_t)row[k][5];
    keys[k] = (uint32_t)row[k][6];
    prefixes[k] = (uint64_t)row[k][7];
    ifids[k] = (uint64_t)row[k][8];
    lids[k] = (uint32_t)row[k][9];
    for (int q = 0; q < qps; ++q)
      qpns[(size_t)k * qps + q] = (uint32_t)row[k][te4j::kRdmaMetadataHeader + q];
  }
  // The NICs' keys travel with the metadata: a connection must prove the listener's key.
  uint8_t auth[kRanks][32];
  CHECK(r, r.rdma->authKey(auth[r.rank], 32) == 32, "authKey: %s", r.rdma->lastError());
  if (!sendAll(r, auth[r.rank], 32) || !recvAll(r, auth[1 - r.rank], 32)) {
    CHECK(r, false, "key exchange: the other rank is gone");
    return false;
  }
  CHECK(r, r.rdma->setPeerKeys(&auth[0][0], 32 * kRanks) == 0, "setPeerKeys: %s",
        r.rdma->lastError());
  const int s = r.rdma->connectPeers(r.rank, true, addrs, keys, qpns.data(), lids, prefixes, ifids,
                                     (1u << kRanks) - 1);
  CHECK(r, s == 0, "connectPeers: %s", r.rdma->lastError());
  if (!barrier(r, "connected")) return false;  // both ends connected before anyone posts
  const int f = r.rdma->fillCommCtx(r.ctx);
  CHECK(r, f == 0, "fillCommCtx: %s", r.rdma->lastError());
  return s == 0 && f == 0;
}

bool writePattern(Rank& r, size_t off, size_t n, uint32_t seed) {
  std::vector<uint8_t> h(n);
  for (size_t i = 0; i < n; ++i) h[i] = patternByte(i, seed);
  const int rc = te4j::copyMemory(te4j::kPlatformCuda, r.device, r.win + off, h.data(), n);
  CHECK(r, rc == 0, "copyMemory to the window: %s", te4j::lastThreadError());
  return rc == 0;
}

// Checks n pattern bytes at off and `tail` poison bytes after them; prints the first mismatch.
bool verifyPattern(Rank& r, size_t off, size_t n, uint32_t seed, size_t tail, const char* what) {
  std::vector<uint8_t> h(n + tail);
  const int rc = te4j::copyMemory(te4j::kPlatformCuda, r.device, h.data(), r.win + off, n + tail);
  if (rc != 0) {
    CHECK(r, false, "%s: copyMemory from the window: %s", what, te4j::lastThreadError());
    return false;
  }
  size_t bad = 0, first = (size_t)-1;
  for (size_t i = 0; i < n; ++i)
    if (h[i] != patternByte(i, seed)) {
      if (first == (size_t)-1) first = i;
      ++bad;
    }
  if (bad > 0) {
    CHECK(r, false, "%s: %zu of %zu bytes wrong, first at %zu (0x%02x, expected 0x%02x)", what, bad,
          n, first, h[first], patternByte(first, seed));
    return false;
  }
  for (size_t i = n; i < n + tail; ++i)
    if (h[i] != kPoison) {
      CHECK(r, false, "%s: byte %zu past the end was overwritten (0x%02x)", what, i, h[i]);
      return false;
    }
  return true;
}

uint32_t readWord(Rank& r, size_t off) {
  uint32_t v = 0;
  if (te4j::copyMemory(te4j::kPlatformCuda, r.device, &v, r.win + off, 4) != 0)
    CHECK(r, false, "copyMemory of a word: %s", te4j::lastThreadError());
  return v;
}

uint32_t* word(Rank& r, size_t off) { return (uint32_t*)(r.win + off); }

// 0. A lone WRITE, then a lone masked FA, each way at once: tells a broken data path from a
// broken atomic path (the responder's fetch-and-add kernel) before anything else runs.
bool stepLone(Rank& r) {
  if (!writePattern(r, kSlot, 64, 500 + r.rank)) return false;
  if (te4j::fillMemory(te4j::kPlatformCuda, r.device, r.win, kPoison, 128) != 0)
    CHECK(r, false, "fillMemory: %s", te4j::lastThreadError());
  if (!barrier(r, "before the lone put")) return false;
  CHECK(r, r.stream->put(r.ctx, r.peer, r.win, r.win + kSlot, 64, 0, 0) == 0, "put: %s",
        r.stream->lastError());
  if (!syncOk(r, r.stream, "lone put (RDMA WRITE, 64 B)")) return false;
  r.say("OK lone put completed (WRITE CQE seen by the kernel)");
  if (!barrier(r, "after the lone put")) return false;
  verifyPattern(r, 0, 64, 500 + r.peer, 64, "lone put data");
  CHECK(r, r.stream->signal(r.ctx, r.peer, word(r, kSigLone), 1) == 0, "signal: %s",
        r.stream->lastError());
  if (!syncOk(r, r.stream, "lone signal (masked fetch-and-add)")) return false;
  r.say("OK lone signal completed (atomic CQE seen by the kernel)");
  CHECK(r, r.stream->waitSignal(word(r, kSigLone), 1, hostTimeoutNs() / 2) == 0, "waitSignal: %s",
        r.stream->lastError());
  if (!syncOk(r, r.stream, "waiting for the peer's lone signal")) return false;
  CHECK(r, readWord(r, kSigLone) == 1, "lone signal word %u != 1", readWord(r, kSigLone));
  if (!barrier(r, "after the lone signal")) return false;
  if (r.fails == 0) r.say("OK lone put and signal both ways");
  return r.fails == 0;
}

// 1. put + signal, sizes 4 B .. 16 MiB, both ranks at once, data verified with a poisoned tail.
bool stepPutSignal(Rank& r) {
  const size_t sizes[] = {4, 4099, 65536, kMiB + 3, kMaxPut};
  uint32_t round = 0;
  for (size_t size : sizes) {
    ++round;
    if (te4j::fillMemory(te4j::kPlatformCuda, r.device, r.win, kPoison, size + 64) != 0)
      CHECK(r, false, "fillMemory: %s", te4j::lastThreadError());
    if (!writePattern(r, kSlot, size, 1000 * r.rank + round)) return false;
    if (!barrier(r, "before put+signal")) return false;  // the peer's slot is poisoned
    CHECK(r,
          r.stream->putWithSignal(r.ctx, r.peer, r.win, r.win + kSlot, size, word(r, kSigData), 1,
                                  0, 0) == 0,
          "putWithSignal: %s", r.stream->lastError());
    char what[96];
    std::snprintf(what, sizeof(what), "putWithSignal of %zu B to rank %d", size, r.peer);
    if (!syncOk(r, r.stream, what)) return false;
    CHECK(r, r.stream->waitSignal(word(r, kSigData), round, hostTimeoutNs() / 2) == 0,
          "waitSignal: %s", r.stream->lastError());
    std::snprintf(what, sizeof(what), "waiting for the signal of the peer's %zu B put", size);
    if (!syncOk(r, r.stream, what)) return false;
    std::snprintf(what, sizeof(what), "data of the peer's %zu B put", size);
    verifyPattern(r, 0, size, 1000 * r.peer + round, 64, what);
    CHECK(r, readWord(r, kSigData) == round, "signal word %u != %u", readWord(r, kSigData), round);
    if (!barrier(r, "after put+signal")) return false;
    if (r.fails != 0) return false;
    r.say("OK put+signal %zu B both ways, data verified", size);
  }
  return true;
}

// 2. Many writers: kWriters threads, each with its own stream (created in the thread, as the
// Java test does), kWrites redAdds of rank+1 to both ranks' counters (own rank: local route).
bool stepManyWriters(Rank& r) {
  if (!barrier(r, "before many writers")) return false;
  std::atomic<int> failed{0};
  std::vector<std::string> errors(kWriters);
  std::vector<std::thread> threads;
  for (int t = 0; t < kWriters; ++t) {
    threads.emplace_back([&, t] {
      te4j::OpStream* s = te4j::OpStream::create(te4j::kPlatformCuda, r.device);
      if (s == nullptr || s->status() != 0) {
        errors[t] = std::string("OpStream::create: ") + (s ? s->lastError() : "null");
        failed.fetch_add(1);
        delete s;
        return;
      }
      for (int i = 0; i < kWrites && errors[t].empty(); ++i)
        for (int dst = 0; dst < kRanks && errors[t].empty(); ++dst)
          if (s->redAdd(r.ctx, dst, word(r, kCounter), (uint32_t)(r.rank + 1)) != 0)
            errors[t] = std::string("redAdd: ") + s->lastError();
      if (errors[t].empty() && s->synchronize(hostTimeoutNs()) != 0)
        errors[t] = std::string("synchronize: ") + s->lastError();
      if (!errors[t].empty()) failed.fetch_add(1);
      te4j::destroyObject(s);
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kWriters; ++t)
    if (!errors[t].empty()) CHECK(r, false, "writer %d: %s", t, errors[t].c_str());
  if (failed.load() != 0) {
    dumpDiagnostics(r, "many writers");
    return false;
  }
  const uint32_t expected = kWriters * kWrites * (1 + 2);  // both ranks add rank + 1
  CHECK(r, r.stream->waitSignal(word(r, kCounter), expected, hostTimeoutNs() / 2) == 0,
        "waitSignal: %s", r.stream->lastError());
  if (!syncOk(r, r.stream, "waiting for the many-writer total")) {
    r.say("counter reads %u of %u", readWord(r, kCounter), expected);
    return false;
  }
  if (!barrier(r, "after many writers")) return false;
  const uint32_t total = readWord(r, kCounter);
  CHECK(r, total == expected, "many-writer total %u != %u", total, expected);
  if (total == expected)
    r.say("OK many-writer total %u (2 ranks x %d threads x %d adds)", total, kWriters, kWrites);
  return r.fails == 0;
}

// 3. One error CQE: rank 1 deregisters its window, rank 0's put gets remote access error 0x13,
// the QP is then in the error state; both recreate their QPs, reconnect, and a put works again.
bool stepErrorCqe(Rank& r) {
  if (!barrier(r, "before the error step")) return false;
  if (r.rank == 1)
    CHECK(r, r.rdma->deregisterMemory(r.win) == 0, "deregisterMemory: %s", r.rdma->lastError());
  if (!barrier(r, "window deregistered")) return false;
  if (r.rank == 0) {
    CHECK(r, r.stream->put(r.ctx, 1, r.win, r.win + kSlot, 4096, 0, 0) == 0, "put: %s",
          r.stream->lastError());
    int rc = r.stream->synchronize(hostTimeoutNs());
    std::string msg = r.stream->lastError();
    CHECK(r, rc == te4j::kRemoteError && msg.find("0x13") != std::string::npos,
          "put to a deregistered window: expected kRemoteError with syndrome 0x13, got %d: %s", rc,
          msg.c_str());
    if (rc == te4j::kRemoteError) r.say("OK error CQE raised: %s", msg.c_str());
    int64_t e[8];
    const int qp = 1 * kQpsPerRank + 0;
    CHECK(r, r.rdma->queryQpError(qp, e, 8) == 8, "queryQpError: %s", r.rdma->lastError());
    CHECK(r, e[0] >= 1 && e[1] == 0x13 && e[3] == 0xd,
          "QP %d error record: %lld error CQEs, syndrome 0x%llx, opcode 0x%llx (expected >= 1, "
          "0x13, 0xd)",
          qp, (long long)e[0], (long long)e[1], (long long)e[3]);
    CHECK(r, r.stream->signal(r.ctx, 1, word(r, kSigRecover), 1) == 0, "signal: %s",
          r.stream->lastError());
    rc = r.stream->synchronize(hostTimeoutNs());
    msg = r.stream->lastError();
    CHECK(r, rc == te4j::kRemoteError && msg.find("error state") != std::string::npos,
          "signal on a QP in error: expected kRemoteError (error state), got %d: %s", rc,
          msg.c_str());
    if (r.fails != 0) dumpDiagnostics(r, "error CQE");
  }
  if (!barrier(r, "error seen")) return false;
  if (r.rank == 1)
    CHECK(r, r.rdma->registerMemory(r.win, kWindow) == 0, "registerMemory: %s",
          r.rdma->lastError());
  CHECK(r, r.rdma->recreateQueuePairs(r.stream->nativeHandle()) == 0, "recreateQueuePairs: %s",
        r.rdma->lastError());
  if (!connectRdma(r)) return false;
  if (r.rank == 0) {
    int64_t e[8];
    CHECK(r, r.rdma->queryQpError(1 * kQpsPerRank, e, 8) == 8 && e[0] == 0,
          "QP still in error after recreate");
    if (te4j::fillMemory(te4j::kPlatformCuda, r.device, r.win + kSlot, 0, 4096) != 0)
      CHECK(r, false, "fillMemory: %s", te4j::lastThreadError());
    writePattern(r, kSlot, 4096, 777);
  } else if (te4j::fillMemory(te4j::kPlatformCuda, r.device, r.win, kPoison, 4096 + 64) != 0) {
    CHECK(r, false, "fillMemory: %s", te4j::lastThreadError());
  }
  if (!barrier(r, "reconnected")) return false;
  if (r.rank == 0) {
    CHECK(r,
          r.stream->putWithSignal(r.ctx, 1, r.win, r.win + kSlot, 4096, word(r, kSigRecover), 1, 0,
                                  0) == 0,
          "putWithSignal: %s", r.stream->lastError());
    syncOk(r, r.stream, "putWithSignal after recovery");
  } else {
    CHECK(r, r.stream->waitSignal(word(r, kSigRecover), 1, hostTimeoutNs() / 2) == 0,
          "waitSignal: %s", r.stream->lastError());
    if (syncOk(r, r.stream, "waiting for the signal after recovery"))
      verifyPattern(r, 0, 4096, 777, 64, "put after recovery");
  }
  if (!barrier(r, "after recovery")) return false;
  if (r.fails == 0)
    r.say("OK error CQE, error state, recreateQueuePairs + reconnect, put+signal after recovery");
  return r.fails == 0;
}

// ---- one rank -------------------------------------------------------------------------------

const char* g_mode = "fork";  // printed with the TIMING lines

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

bool zeroWords(Rank& r) {
  const int rc = te4j::fillMemory(te4j::kPlatformCuda, r.device, r.win + kSigPing, 0, 192);
  CHECK(r, rc == 0, "fillMemory: %s", te4j::lastThreadError());
  return rc == 0;
}

// Rank 0 puts `count` x `size` bytes to rank 1 back to back (one synchronize at the end).
// busy_receiver: rank 1 has a waitSignal kernel spinning on its GPU meanwhile, which rank 0
// ends with a signal after the puts (as a consumer waiting for data would).
bool timePuts(Rank& r, size_t size, int count, bool busy_receiver) {
  if (!zeroWords(r) || !barrier(r, "timing: words zeroed")) return false;
  if (r.rank == 1 && busy_receiver)
    CHECK(r, r.stream->waitSignal(word(r, kSigBusy), 1, hostTimeoutNs() / 2) == 0, "waitSignal: %s",
          r.stream->lastError());
  if (!barrier(r, "timing: before the puts")) return false;
  if (r.rank == 0) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < count && r.fails == 0; ++i)
      CHECK(r, r.stream->put(r.ctx, r.peer, r.win, r.win + kSlot, size, 0, 0) == 0, "put: %s",
            r.stream->lastError());
    if (busy_receiver)
      CHECK(r, r.stream->signal(r.ctx, r.peer, word(r, kSigBusy), 1) == 0, "signal: %s",
            r.stream->lastError());
    if (!syncOk(r, r.stream, "timed puts")) return false;
    const double s = secondsSince(t0);
    r.say("TIMING mode=%s puts size=%zu count=%d receiver=%s: %.1f us/op, %.3f GB/s", g_mode, size,
          count, busy_receiver ? "spinning" : "idle", s * 1e6 / count,
          (double)size * count / s / 1e9);
  } else if (!syncOk(r, r.stream, "timed puts, receiver")) {
    return false;
  }
  return barrier(r, "timing: after the puts");
}

// 8 B put+signal round trips, all enqueued, timed to the end of synchronize (as the bench).
bool timeRoundTrips(Rank& r, int count) {
  if (!zeroWords(r) || !barrier(r, "timing: round-trip words zeroed")) return false;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 1; i <= count && r.fails == 0; ++i) {
    if (r.rank == 1)
      CHECK(r, r.stream->waitSignal(word(r, kSigPing), (uint32_t)i, hostTimeoutNs() / 2) == 0,
            "waitSignal: %s", r.stream->lastError());
    CHECK(r,
          r.stream->putWithSignal(r.ctx, r.peer, r.win, r.win + kSlot, 8,
                                  word(r, r.rank == 0 ? kSigPing : kSigPong), 1, 0, 0) == 0,
          "putWithSignal: %s", r.stream->lastError());
    if (r.rank == 0)
      CHECK(r, r.stream->waitSignal(word(r, kSigPong), (uint32_t)i, hostTimeoutNs() / 2) == 0,
            "waitSignal: %s", r.stream->lastError());
  }
  if (!syncOk(r, r.stream, "timed round trips")) return false;
  if (r.rank == 0)
    r.say("TIMING mode=%s put+signal round trip size=8 count=%d: %.1f us", g_mode, count,
          secondsSince(t0) * 1e6 / count);
  return barrier(r, "timing: after the round trips");
}

// 4. Figures for the record (printed, never asserted): see the header.
bool stepTiming(Rank& r) {
  bool ok = timePuts(r, 4096, 1000, false) && timePuts(r, 4096, 1000, true) &&
            timeRoundTrips(r, 200) && timePuts(r, kMiB, 64, false) && timePuts(r, kMiB, 64, true) &&
            timePuts(r, kMaxPut, 8, false);
  if (ok && r.rank == 0) dumpDiagnostics(r, "after the timing step");
  return ok;
}

bool timingWanted(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--timing") == 0) return true;
  const char* v = std::getenv("TE4J_SOFTNIC_TIMING");
  return v != nullptr && std::strcmp(v, "1") == 0;
}
bool g_timing = false;

int runRank(int rank, int fd) {
  Rank r;
  r.rank = rank;
  r.peer = 1 - rank;
  r.fd = fd;
  // Agree on skipping before anything else: both ranks see the same machine, but a rank must
  // never wait in a barrier for one that left.
  const int devices = te4j::cudaDeviceCount();
  std::string why;
  if (devices < 1)
    why = devices < 0 ? std::string("CUDA unusable: ") + te4j::lastThreadError() : "no CUDA device";
  r.device = devices > 0 ? rank % devices : 0;
  int other_skip = 0;
  if (!exchangeInt(r, why.empty() ? 0 : 1, &other_skip)) {
    r.say("FAIL the other rank is gone before the start");
    return 1;
  }
  if (!why.empty() || other_skip != 0) {
    r.say("SKIP %s", why.empty() ? "the other rank skips" : why.c_str());
    return kExitSkip;
  }
  r.say(
      "GPU %d of %d; cudaCanAccessPeer(%d, %d) = %d (te4j's P2P route is disabled for the pair "
      "regardless); device timeout %.0f ms, host timeout %.0f ms",
      r.device, devices, r.device, r.peer, te4j::cudaCanAccessPeer(r.device, r.peer),
      deviceTimeoutNs() / 1e6, hostTimeoutNs() / 1e6);

  r.p2p = te4j::P2pTransport::create(te4j::kPlatformCuda, r.device, kRanks);
  CHECK(r, r.p2p != nullptr && r.p2p->status() == 0, "P2pTransport::create: %s",
        r.p2p ? r.p2p->lastError() : "null");
  void* win = nullptr;
  if (r.fails == 0)
    CHECK(r, r.p2p->allocateBuffer(kWindow, &win) == 0, "allocateBuffer: %s", r.p2p->lastError());
  r.win = (uint8_t*)win;
  int window = -1;
  if (r.fails == 0) {
    // Only the own rank is active: the peer's row is ignored, so no handles are exchanged.
    std::vector<int32_t> handles((size_t)kRanks * r.p2p->handleInts(), 0);
    window = r.p2p->importPeerHandles(win, r.rank, kRanks, handles.data(), 1ull << r.rank);
    CHECK(r, window >= 0, "importPeerHandles: %s", r.p2p->lastError());
  }
  r.ctx = te4j::newCommCtx();
  if (r.fails == 0)
    CHECK(r, r.p2p->makeCommCtx(window, r.ctx) == 0, "makeCommCtx: %s", r.p2p->lastError());
  r.stream = te4j::OpStream::create(te4j::kPlatformCuda, r.device);
  CHECK(r, r.stream != nullptr && r.stream->status() == 0, "OpStream::create: %s",
        r.stream ? r.stream->lastError() : "null");
  r.rdma = te4j::RdmaTransport::create(te4j::kPlatformCuda, r.device, te4j::kRdmaBackendSoft);
  CHECK(r, r.rdma != nullptr && r.rdma->status() == 0, "RdmaTransport::create: %s",
        r.rdma ? r.rdma->lastError() : "null");
  if (r.fails == 0)
    CHECK(r, r.rdma->initialize("soft@127.0.0.1", kRanks, kRanks * kQpsPerRank) == 0,
          "initialize: %s", r.rdma->lastError());
  if (r.fails == 0)
    CHECK(r, r.rdma->registerMemory(win, kWindow) == 0, "registerMemory: %s", r.rdma->lastError());
  if (r.fails == 0)
    CHECK(r, r.rdma->setRingSize(kRing) == 0, "setRingSize: %s", r.rdma->lastError());
  if (r.fails == 0)
    CHECK(r, r.rdma->setDeviceTimeoutNs(deviceTimeoutNs()) == 0, "setDeviceTimeoutNs: %s",
          r.rdma->lastError());
  if (r.fails == 0)
    CHECK(r, r.rdma->createQueuePairs(r.stream->nativeHandle()) == 0, "createQueuePairs: %s",
          r.rdma->lastError());
  int other_fails = 0;
  if (!exchangeInt(r, r.fails, &other_fails)) {
    r.say("FAIL the other rank is gone during setup");
    return 1;
  }
  bool ok = r.fails == 0 && other_fails == 0 && connectRdma(r);
  if (ok)
    r.say("OK connected over the software NIC (ring %d WQEBBs, %d QPs per rank)", kRing,
          kQpsPerRank);
  if (ok) ok = stepLone(r);
  if (ok) ok = stepPutSignal(r);
  if (ok) ok = stepManyWriters(r);
  if (ok && g_timing) ok = stepTiming(r);
  if (ok) ok = stepErrorCqe(r);
  if (ok) {
    int64_t st[32];
    const int n = r.rdma->statistics(st, 32);
    CHECK(r, n >= 3 && st[1] == 0 && st[2] == 0,
          "doorbell contract violations (dbr %lld, uar %lld): %s", (long long)st[1],
          (long long)st[2], r.rdma->diagnostics());
    dumpDiagnostics(r, "final state, for the record");
    ok = barrier(r, "done") && r.fails == 0;
  }
  // Nobody frees its window while the peer may still write into it (best effort on failure).
  if (r.fails == 0) barrier(r, "before teardown");
  if (r.rdma != nullptr) te4j::RdmaTransport::clearCommCtx(r.ctx);
  te4j::destroyObject(r.stream);
  te4j::destroyObject(r.rdma);
  if (r.p2p != nullptr && win != nullptr) r.p2p->freeBuffer(win);
  te4j::destroyObject(r.p2p);
  te4j::deleteCommCtx(r.ctx);
  close(r.fd);  // a rank still waiting in a barrier sees the end at once
  r.say("%s", ok && r.fails == 0 ? "ok" : "FAILED");
  return ok && r.fails == 0 ? 0 : 1;
}

int verdict(int rc0, int rc1) {
  if (rc0 == kExitSkip && rc1 == kExitSkip) {
    std::printf("SKIP test_rdma_cuda_softnic (see the ranks' reasons above)\n");
    return 0;
  }
  const bool ok = rc0 == 0 && rc1 == 0;
  std::printf("%s test_rdma_cuda_softnic (rank 0 exit %d, rank 1 exit %d)\n", ok ? "PASS" : "FAIL",
              rc0, rc1);
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  bool threads = false;
  for (int i = 1; i < argc; ++i) threads = threads || std::strcmp(argv[i], "--threads") == 0;
  g_timing = timingWanted(argc, argv);
  g_mode = threads ? "threads" : "fork";
  // As the Java GPU tests: no NVLink multicast anywhere (children inherit it).
  setenv("NCCL_NVLS_ENABLE", "0", 0);
  setenv("NVSHMEM_DISABLE_NVLS", "1", 0);
  setenv("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1", 0);
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
    std::perror("socketpair");
    return 1;
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  if (threads) {
    std::printf("test_rdma_cuda_softnic: both ranks in this process (threads)\n");
    int rc[2] = {1, 1};
    std::thread t1([&] { rc[1] = runRank(1, sv[1]); });
    rc[0] = runRank(0, sv[0]);
    t1.join();
    return verdict(rc[0], rc[1]);
  }
  // Forked ranks: this process never touches CUDA (a child of a CUDA process cannot use it).
  std::printf("test_rdma_cuda_softnic: ranks as two processes\n");
  std::fflush(stdout);
  pid_t pids[2] = {-1, -1};
  for (int rank = 0; rank < 2; ++rank) {
    pids[rank] = fork();
    if (pids[rank] < 0) {
      std::perror("fork");
      if (rank == 1) kill(pids[0], SIGKILL);
      return 1;
    }
    if (pids[rank] == 0) {
      close(sv[1 - rank]);
      const int rc = runRank(rank, sv[rank]);
      std::fflush(stdout);
      _exit(rc);
    }
  }
  close(sv[0]);
  close(sv[1]);
  int rc[2] = {-1, -1};
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(300 * timeoutScale());
  int left = 2;
  while (left > 0) {
    for (int rank = 0; rank < 2; ++rank) {
      if (rc[rank] != -1) continue;
      int status = 0;
      if (waitpid(pids[rank], &status, WNOHANG) == pids[rank]) {
        rc[rank] = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        --left;
      }
    }
    if (left > 0 && std::chrono::steady_clock::now() > deadline) {
      std::printf("FAIL test_rdma_cuda_softnic: ranks still running after %d s, killing them\n",
                  300 * timeoutScale());
      for (int rank = 0; rank < 2; ++rank)
        if (rc[rank] == -1) {
          kill(pids[rank], SIGKILL);
          waitpid(pids[rank], nullptr, 0);
          rc[rank] = 137;
        }
      break;
    }
    if (left > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return verdict(rc[0], rc[1]);
}
