// test_cuda_ops.cpp — a C++ driver of te4j's CUDA kernels, for compute-sanitizer.
//
// The Java GPU groups (CudaInProcessTest, the multi-process P2P tests) are far too slow to start
// under compute-sanitizer (the JVM alone did not finish starting under memcheck in 70 s), so this
// driver runs the same kernels through the C++ API (te4j/api.h) only, in seconds:
//   * 2 CUDA ranks in one process, rank r on device r modulo the devices present (0 and 1, or
//     both on 0 with one GPU; direct pointers either way): allocate, export,
//     importPeerHandles, verifyPeerAccess (its probe kernel), makeCommCtx, one OpStream per rank;
//   * put / putWithSignal from 0 B to TE4J_CUDA_OPS_MAX_BYTES (default 16 MiB), odd sizes,
//     odd and congruent offsets, several launch shapes, both directions and to the own rank:
//     random data, poisoned destinations, no byte written before or after the range;
//     once per put path of te4j/tuning.h (the default, base, auto, ce, cesm; signal=atom/red;
//     pdl=0/1; arrival=sys/gpu; the put kernel's experiment variants are te4j-bench's);
//   * ordering (8 MiB on 132 blocks, 200 x 64 KiB on 8 blocks): the receiver's stream
//     snapshots the data (a put to itself) right after its waitSignal, on the device;
//   * CUDA graph capture of putWithSignal + redAdd, replayed 10 times (and synchronize refused
//     while capturing);
//   * many-writer totals: signal and redAdd from both ranks to both ranks;
//   * a waitSignal timeout reported by synchronize (kTimeout), the put queued behind it skipped,
//     and the stream usable afterwards;
//   * 2 ranks as 2 processes (this binary re-executed, CUDA IPC handles exchanged over a socket
//     pair): puts with signals both ways, redAdd totals, verifyPeerAccess, teardown in order;
//   * clean teardown: every graph, stream, window, buffer and transport released (memcheck
//     --leak-check full sees no device allocation left).
// Every API call is checked; a failure prints the call, its status and lastError().
// Prints "SKIP: <reason>" and exits 0 where CUDA is unusable, there is no device, or devices 0
// and 1 have no peer access (CI has no GPU). Exit status: 0 = passed or skipped, 1 = failures.
// Two processes on one GPU only time-slice it: the 10 s base deadline of each wait is far above
// a time slice, so it stays a bound on a hang, not a measure of speed.
//
// Environment:
//   TE4J_CUDA_OPS_MAX_BYTES  largest put (default 16777216)
//   TE4J_CUDA_OPS_VARIANTS   ';'-separated te4j/tuning.h specs to run the put tests under
//                            (default: "default" (the production knobs), then every put kernel, the
//                            copy-engine routes and both signal atomics; a spec this libte4j does
//                            not know is reported and skipped)
//   TE4J_CUDA_OPS_ADDS       signal/redAdd ops per (writer, target) pair (default 2000)
//   TE4J_CUDA_OPS_IPC        0 skips the 2-process CUDA IPC part (default 1)
//   TE4J_TIMEOUT_SCALE       multiplies every deadline (default 1; base deadline 10 s)
//
// Compiled by g++ as plain C++: no CUDA header, no kernel; cudart is reached through libte4j.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "te4j/api.h"
#include "te4j/tuning.h"

namespace {

using mooncake::device::CommCtx;
using te4j::kPlatformCuda;
using te4j::NativeObject;
using te4j::OpStream;
using te4j::P2pTransport;

int g_failures = 0;
int g_rank_tag = -1;  // -1: the main process; 0/1: an IPC child

const char* statusName(int st) {
  switch (st) {
    case te4j::kOk: return "kOk";
    case te4j::kInvalidArgument: return "kInvalidArgument";
    case te4j::kUnavailable: return "kUnavailable";
    case te4j::kCudaError: return "kCudaError";
    case te4j::kSystemError: return "kSystemError";
    case te4j::kTimeout: return "kTimeout";
    case te4j::kPeerLost: return "kPeerLost";
    case te4j::kBadHandle: return "kBadHandle";
    case te4j::kOutOfMemory: return "kOutOfMemory";
    case te4j::kIllegalState: return "kIllegalState";
    case te4j::kDeviceFault: return "kDeviceFault";
    case te4j::kRemoteError: return "kRemoteError";
  }
  return st > 0 ? "positive" : "unknown";
}

std::string errorOf(const NativeObject* object) {
  return object != nullptr ? object->lastError() : te4j::lastThreadError();
}

void failHeader(int line) {
  ++g_failures;
  if (g_rank_tag >= 0) {
    std::fprintf(stderr, "[ipc rank %d] FAIL test_cuda_ops.cpp:%d: ", g_rank_tag, line);
  } else {
    std::fprintf(stderr, "FAIL test_cuda_ops.cpp:%d: ", line);
  }
}

void reportCall(int line, const char* call, int st, const std::string& error) {
  failHeader(line);
  std::fprintf(stderr, "%s returned %d (%s): %s\n", call, st, statusName(st),
               error.empty() ? "(no message)" : error.c_str());
  std::fflush(stderr);
}

// A te4j call that must succeed (status >= 0); `object` supplies lastError() (nullptr: the
// calling thread's lastThreadError()). On failure: report and leave the current test (false).
#define REQUIRE_OK(object, call)                         \
  do {                                                   \
    const int st_ = (call);                              \
    if (st_ < 0) {                                       \
      reportCall(__LINE__, #call, st_, errorOf(object)); \
      return false;                                      \
    }                                                    \
  } while (0)

// Same, in teardown code: report and go on.
#define CHECK_OK(object, call)                                      \
  do {                                                              \
    const int st_ = (call);                                         \
    if (st_ < 0) reportCall(__LINE__, #call, st_, errorOf(object)); \
  } while (0)

#define REQUIRE(cond, ...)                 \
  do {                                     \
    if (!(cond)) {                         \
      failHeader(__LINE__);                \
      std::fprintf(stderr, "%s: ", #cond); \
      std::fprintf(stderr, __VA_ARGS__);   \
      std::fprintf(stderr, "\n");          \
      std::fflush(stderr);                 \
      return false;                        \
    }                                      \
  } while (0)

constexpr int64_t kMs = 1000000;
constexpr uint8_t kPoison = 0xA5;
constexpr std::size_t kGuard = 64;  // poisoned bytes checked on each side of a put's range

struct Config {
  std::size_t max_bytes = 16u << 20;
  int adds = 2000;
  bool ipc = true;
  int64_t timeout_ns = 10000 * kMs;
  std::vector<std::string> variants;
};

Config g_cfg;

long envLong(const char* name, long fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 0);
  if (end == v || *end != '\0' || x < 0) {
    std::fprintf(stderr, "ignoring %s=%s (not a non-negative number)\n", name, v);
    return fallback;
  }
  return x;
}

void loadConfig() {
  g_cfg.max_bytes = static_cast<std::size_t>(envLong("TE4J_CUDA_OPS_MAX_BYTES", 16L << 20));
  if (g_cfg.max_bytes < 4096) g_cfg.max_bytes = 4096;
  g_cfg.adds = static_cast<int>(envLong("TE4J_CUDA_OPS_ADDS", 2000));
  g_cfg.ipc = envLong("TE4J_CUDA_OPS_IPC", 1) != 0;
  const long scale = envLong("TE4J_TIMEOUT_SCALE", 1);
  g_cfg.timeout_ns = 10000 * kMs * (scale > 0 ? scale : 1);
  const char* v = std::getenv("TE4J_CUDA_OPS_VARIANTS");
  const std::string spec =
      v != nullptr && *v != '\0'
          ? v
          : "default;put=base;put=auto;put=ce;put=cesm,cesplit=55;put=cesm,cesplit=95;"
            "put=auto,signal=atom,pdl=0;arrival=sys";
  std::size_t at = 0;
  while (at <= spec.size()) {
    const std::size_t end = std::min(spec.find(';', at), spec.size());
    if (end > at) g_cfg.variants.push_back(spec.substr(at, end - at));
    at = end + 1;
  }
}

// Window layout of every rank (all offsets are the same on both ranks):
//   [0, slot)            receive slot of the put tests
//   [slot, 2 slot)       snapshot slot of the ordering test
//   [2 slot, +4096)      signal words, each on its own 128-byte line
struct Layout {
  std::size_t slot;
  std::size_t sigs;
  std::size_t bytes;
  explicit Layout(std::size_t max_bytes) {
    slot = (max_bytes + 4096 + 255) / 256 * 256;
    sigs = 2 * slot;
    bytes = sigs + 4096;
  }
};
constexpr std::size_t kSigPut = 0;
constexpr std::size_t kSigOrder = 128;
constexpr std::size_t kSigAdd = 256;
constexpr std::size_t kSigGraph = 384;
constexpr std::size_t kSigGraphAdd = 512;
constexpr std::size_t kSigTimeout = 640;
constexpr std::size_t kSigRecover = 768;

uint64_t mix(uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

void pattern(std::vector<uint8_t>* out, std::size_t n, uint64_t seed) {
  out->resize(n);
  uint64_t state = mix(seed);
  for (std::size_t i = 0; i < n; i += 8) {
    state = mix(state);
    std::memcpy(out->data() + i, &state, std::min<std::size_t>(8, n - i));
  }
}

// Blocking host <-> device copies and fills through libte4j (cudaMemcpy / cudaMemset).
bool upload(int device, void* dst, const std::vector<uint8_t>& data) {
  if (data.empty()) return true;
  REQUIRE_OK(nullptr, te4j::copyMemory(kPlatformCuda, device, dst, data.data(), data.size()));
  return true;
}

bool download(int device, std::vector<uint8_t>* out, const void* src, std::size_t n) {
  out->resize(n);
  if (n == 0) return true;
  REQUIRE_OK(nullptr, te4j::copyMemory(kPlatformCuda, device, out->data(), src, n));
  return true;
}

bool poison(int device, void* dst, std::size_t n) {
  REQUIRE_OK(nullptr, te4j::fillMemory(kPlatformCuda, device, dst, kPoison, n));
  return true;
}

bool readWord(int device, const uint8_t* p, uint32_t* value) {
  REQUIRE_OK(nullptr, te4j::copyMemory(kPlatformCuda, device, value, p, sizeof(*value)));
  return true;
}

// Checks the receive area [0, off + n + kGuard) of `base` on `device`: poison before off, the
// expected bytes in [off, off + n), poison in the kGuard bytes after.
bool checkLanded(int device, const uint8_t* base, std::size_t off, const std::vector<uint8_t>& want,
                 const char* what) {
  const std::size_t n = want.size();
  std::vector<uint8_t> got;
  if (!download(device, &got, base, off + n + kGuard)) return false;
  for (std::size_t i = 0; i < off; ++i) {
    REQUIRE(got[i] == kPoison, "%s: byte %zu before the range (offset %zu) was overwritten: 0x%02x",
            what, i, off, got[i]);
  }
  if (n > 0 && std::memcmp(got.data() + off, want.data(), n) != 0) {
    std::size_t i = 0;
    while (got[off + i] == want[i]) ++i;
    std::size_t bad = 0;
    for (std::size_t j = 0; j < n; ++j) bad += got[off + j] != want[j] ? 1 : 0;
    REQUIRE(false, "%s: %zu of %zu bytes differ, first at %zu: got 0x%02x want 0x%02x", what, bad,
            n, i, got[off + i], want[i]);
  }
  for (std::size_t i = off + n; i < off + n + kGuard; ++i) {
    REQUIRE(got[i] == kPoison, "%s: overrun: byte %zu after the range was written: 0x%02x", what,
            i - off - n, got[i]);
  }
  return true;
}

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

uint32_t* word(uint8_t* window, const Layout& layout, std::size_t at) {
  return reinterpret_cast<uint32_t*>(window + layout.sigs + at);
}

// The device of a rank: round-robin over the devices present, so one GPU holds both ranks.
int deviceOf(int rank) {
  const int n = te4j::cudaDeviceCount();
  return n > 0 ? rank % n : 0;
}

// ---------------------------------------------------------------------------------------------
// Two ranks in this process.

struct Rank {
  int device = 0;
  P2pTransport* transport = nullptr;
  OpStream* stream = nullptr;
  CommCtx* ctx = nullptr;
  uint8_t* window = nullptr;  // the symmetric buffer
  uint8_t* src = nullptr;     // send buffer (not shared)
  int window_id = -1;
  uint32_t put_signals = 0;  // putWithSignal adds received on kSigPut
};

struct World {
  Layout layout{g_cfg.max_bytes};
  Rank rank[2];
  uint32_t order_signals = 0;  // adds received by rank 1 on kSigOrder
  uint32_t graph_signals = 0;  // by rank 1 on kSigGraph
  uint64_t cases = 0;
};

bool setUp(World* w) {
  const std::size_t bytes = w->layout.bytes;
  for (int r = 0; r < 2; ++r) {
    Rank& k = w->rank[r];
    k.device = deviceOf(r);
    k.transport = P2pTransport::create(kPlatformCuda, k.device, 2);
    REQUIRE(k.transport != nullptr, "P2pTransport::create(cuda, %d, 2) returned nullptr", r);
    REQUIRE_OK(k.transport, k.transport->status());
    void* p = nullptr;
    REQUIRE_OK(k.transport, k.transport->allocateBuffer(bytes, &p));
    k.window = static_cast<uint8_t*>(p);
    REQUIRE_OK(k.transport, k.transport->allocateBuffer(w->layout.slot, &p));
    k.src = static_cast<uint8_t*>(p);
  }
  const int ints = w->rank[0].transport->handleInts();
  REQUIRE(ints > 0 && ints == w->rank[1].transport->handleInts(), "handleInts %d / %d", ints,
          w->rank[1].transport->handleInts());
  std::vector<int32_t> rows(static_cast<std::size_t>(2 * ints), 0);
  for (int r = 0; r < 2; ++r) {
    Rank& k = w->rank[r];
    int n = 0;
    REQUIRE_OK(k.transport,
               n = k.transport->exportIpcHandle(k.window, rows.data() + r * ints, ints));
    REQUIRE(n == ints, "exportIpcHandle wrote %d ints, expected %d", n, ints);
  }
  for (int r = 0; r < 2; ++r) {
    Rank& k = w->rank[r];
    REQUIRE_OK(k.transport,
               k.window_id = k.transport->importPeerHandles(k.window, r, 2, rows.data(), 3));
    REQUIRE(k.transport->allPeersAccessible(k.window_id), "rank %d: not all peers accessible", r);
    REQUIRE(k.transport->availableTablePtr(k.window_id) != nullptr &&
                k.transport->peerPtrsTablePtr(k.window_id) != nullptr,
            "rank %d: null device tables", r);
    REQUIRE_OK(k.transport, k.transport->verifyPeerAccess(k.window_id));
    k.ctx = te4j::newCommCtx();
    REQUIRE(k.ctx != nullptr, "newCommCtx returned nullptr");
    REQUIRE_OK(k.transport, k.transport->makeCommCtx(k.window_id, k.ctx));
    k.stream = OpStream::create(kPlatformCuda, k.device);
    REQUIRE(k.stream != nullptr, "OpStream::create(cuda, %d) returned nullptr", r);
    REQUIRE_OK(k.stream, k.stream->status());
    REQUIRE(k.stream->nativeHandle() != nullptr, "rank %d: no cudaStream_t", r);
  }
  std::printf("OK setup: 2 ranks on devices %d and %d, windows of %zu B, verifyPeerAccess passed\n",
              w->rank[0].device, w->rank[1].device, bytes);
  return true;
}

bool sync(Rank& k) {
  REQUIRE_OK(k.stream, k.stream->synchronize(g_cfg.timeout_ns));
  return true;
}

// One put or putWithSignal from rank s to rank d, checked byte for byte.
bool putCase(World* w, int s, int d, bool with_signal, std::size_t n, std::size_t off,
             std::size_t soff, int blocks, int threads, const std::string& variant) {
  Rank& from = w->rank[s];
  Rank& to = w->rank[d];
  char what[256];
  std::snprintf(what, sizeof(what), "[%s] %s %d->%d n=%zu off=%zu soff=%zu shape=%dx%d",
                variant.c_str(), with_signal ? "putWithSignal" : "put", s, d, n, off, soff, blocks,
                threads);
  std::vector<uint8_t> data;
  pattern(&data, n, (w->cases++ << 8) ^ n ^ (static_cast<uint64_t>(s) << 62));
  if (!upload(from.device, from.src + soff, data)) return false;
  if (!poison(to.device, to.window, off + n + kGuard)) return false;
  if (with_signal) {
    uint32_t* sig = word(from.window, w->layout, kSigPut);
    REQUIRE_OK(from.stream,
               from.stream->putWithSignal(from.ctx, d, from.window + off, from.src + soff, n, sig,
                                          1, blocks, threads));
    ++to.put_signals;
    // The producer is enqueued first: correct even where a tool serialises kernels.
    REQUIRE_OK(to.stream, to.stream->waitSignal(word(to.window, w->layout, kSigPut), to.put_signals,
                                                g_cfg.timeout_ns));
    if (!sync(to)) return false;
  } else {
    REQUIRE_OK(from.stream, from.stream->put(from.ctx, d, from.window + off, from.src + soff, n,
                                             blocks, threads));
  }
  if (!sync(from)) return false;
  return checkLanded(to.device, to.window, off, data, what);
}

bool testSizes(World* w, const std::string& variant) {
  static const std::size_t kSizes[] = {0,
                                       1,
                                       2,
                                       3,
                                       7,
                                       15,
                                       16,
                                       17,
                                       31,
                                       33,
                                       63,
                                       64,
                                       65,
                                       127,
                                       255,
                                       256,
                                       257,
                                       1000,
                                       4095,
                                       4096,
                                       4099,
                                       65536,
                                       65539,
                                       262143,
                                       262144 + 3,
                                       1u << 20,
                                       (1u << 20) + 5,
                                       4u << 20,
                                       (4u << 20) + 3,
                                       16u << 20,
                                       (16u << 20) - 1};
  static const std::size_t kOffsets[][2] = {{0, 0},   {1, 0},  {0, 3}, {3, 3},
                                            {16, 16}, {5, 13}, {4, 8}, {13, 0}};
  static const int kShapes[][2] = {{0, 0}, {132, 512}, {3, 96}, {1, 32}, {16, 1024}, {7, 0}};
  const std::size_t limit = w->layout.slot - 64 - kGuard;
  int done = 0;
  std::size_t largest = 0;
  for (std::size_t n : kSizes) {
    if (n > g_cfg.max_bytes) continue;
    for (int op = 0; op < 2; ++op) {
      const uint64_t k = w->cases;
      const int s = static_cast<int>(k % 2);
      const int d = k % 7 == 6 ? s : 1 - s;  // now and then a put to the own rank
      const std::size_t off = kOffsets[k % 8][0];
      const std::size_t soff = kOffsets[k % 8][1];
      if (off + n > limit || soff + n > w->layout.slot) continue;
      const int* shape = kShapes[k % 6];
      if (!putCase(w, s, d, op == 1, n, off, soff, shape[0], shape[1], variant)) return false;
      ++done;
      largest = std::max(largest, n);
    }
  }
  std::printf(
      "OK [%s] put/putWithSignal: %d cases, 0 .. %zu B, odd sizes and offsets, both "
      "directions and own rank\n",
      variant.c_str(), done, largest);
  return true;
}

// The receiver's stream copies the data away (a put to itself) right after its waitSignal, with
// no host step in between: a block whose data landed after the signal would be missed.
bool testOrderingShape(World* w, const std::string& variant, std::size_t n, int blocks,
                       int rounds) {
  Rank& a = w->rank[0];
  Rank& b = w->rank[1];
  std::vector<uint8_t> data;
  for (int round = 1; round <= rounds; ++round) {
    pattern(&data, n, 0x0e0e0000u + w->cases++);
    if (!upload(a.device, a.src, data)) return false;
    if (!poison(b.device, b.window, n) ||
        !poison(b.device, b.window + w->layout.slot, n + kGuard)) {
      return false;
    }
    REQUIRE_OK(a.stream,
               a.stream->putWithSignal(a.ctx, 1, a.window, a.src, n,
                                       word(a.window, w->layout, kSigOrder), 1, blocks, 512));
    ++w->order_signals;
    REQUIRE_OK(b.stream, b.stream->waitSignal(word(b.window, w->layout, kSigOrder),
                                              w->order_signals, g_cfg.timeout_ns));
    REQUIRE_OK(b.stream, b.stream->put(b.ctx, 1, b.window + w->layout.slot, b.window, n, 0, 0));
    if (!sync(a) || !sync(b)) return false;
    char what[128];
    std::snprintf(what, sizeof(what), "[%s] ordering round %d snapshot", variant.c_str(), round);
    if (!checkLanded(b.device, b.window + w->layout.slot, 0, data, what)) return false;
  }
  std::printf(
      "OK [%s] ordering: %d rounds of %zu B on %d blocks, snapshot taken on the device "
      "right after the signal\n",
      variant.c_str(), rounds, n, blocks);
  return true;
}

// Two shapes: 8 MiB over 132 blocks, and 64 KiB over 8 blocks many times (the per-op latency
// shape, where the blocks' arrival protocol decides whether the signal can overtake data).
bool testOrdering(World* w, const std::string& variant) {
  return testOrderingShape(w, variant, std::min<std::size_t>(g_cfg.max_bytes, 8u << 20), 132, 8) &&
         testOrderingShape(w, variant, std::min<std::size_t>(g_cfg.max_bytes, 64u << 10), 8, 200);
}

bool testGraph(World* w, const std::string& variant) {
  Rank& a = w->rank[0];
  Rank& b = w->rank[1];
  const std::size_t n = std::min<std::size_t>(g_cfg.max_bytes, (1u << 20) + 3);
  std::vector<uint8_t> data;
  pattern(&data, n, 4242 + w->cases++);
  if (!upload(a.device, a.src, data) || !poison(b.device, b.window, n + kGuard)) return false;
  uint32_t before = 0;
  if (!readWord(b.device, reinterpret_cast<uint8_t*>(word(b.window, w->layout, kSigGraphAdd)),
                &before)) {
    return false;
  }
  REQUIRE_OK(a.stream, a.stream->beginCapture());
  const int refused = a.stream->synchronize(g_cfg.timeout_ns);
  void* graph = nullptr;
  const int put_rc = a.stream->putWithSignal(a.ctx, 1, a.window, a.src, n,
                                             word(a.window, w->layout, kSigGraph), 1, 0, 0);
  const int add_rc = a.stream->redAdd(a.ctx, 1, word(a.window, w->layout, kSigGraphAdd), 2);
  const int end_rc = a.stream->endCapture(&graph);  // always ends the capture
  REQUIRE(refused == te4j::kIllegalState,
          "synchronize while capturing returned %d (%s), "
          "expected kIllegalState",
          refused, statusName(refused));
  REQUIRE(put_rc == te4j::kOk && add_rc == te4j::kOk, "captured ops: %d / %d: %s", put_rc, add_rc,
          a.stream->lastError());
  REQUIRE_OK(a.stream, end_rc);
  REQUIRE(graph != nullptr, "endCapture gave no graph");
  const int replays = 10;
  bool ok = true;
  for (int i = 0; i < replays && ok; ++i) {
    const int rc = a.stream->launchGraph(graph);
    if (rc != te4j::kOk) {
      reportCall(__LINE__, "a.stream->launchGraph(graph)", rc, a.stream->lastError());
      ok = false;
    }
  }
  if (ok) ok = sync(a);
  CHECK_OK(a.stream, a.stream->destroyGraph(graph));
  if (!ok) return false;
  w->graph_signals += replays;
  REQUIRE_OK(b.stream, b.stream->waitSignal(word(b.window, w->layout, kSigGraph), w->graph_signals,
                                            g_cfg.timeout_ns));
  if (!sync(b)) return false;
  char what[128];
  std::snprintf(what, sizeof(what), "[%s] graph replay data", variant.c_str());
  if (!checkLanded(b.device, b.window, 0, data, what)) return false;
  uint32_t after = 0;
  if (!readWord(b.device, reinterpret_cast<uint8_t*>(word(b.window, w->layout, kSigGraphAdd)),
                &after)) {
    return false;
  }
  REQUIRE(after - before == 2u * replays, "graph redAdd total %u, expected %u", after - before,
          2u * replays);
  std::printf("OK [%s] graph capture: %d replays of putWithSignal (%zu B) + redAdd\n",
              variant.c_str(), replays, n);
  return true;
}

bool testManyWriters(World* w) {
  const int adds = g_cfg.adds;
  for (int i = 0; i < adds; ++i) {
    for (int r = 0; r < 2; ++r) {
      Rank& k = w->rank[r];
      for (int d = 0; d < 2; ++d) {
        uint32_t* target = word(k.window, w->layout, kSigAdd);
        const uint32_t value = static_cast<uint32_t>(r + 1);
        if ((i + d) % 2 == 0) {
          REQUIRE_OK(k.stream, k.stream->redAdd(k.ctx, d, target, value));
        } else {
          REQUIRE_OK(k.stream, k.stream->signal(k.ctx, d, target, value));
        }
      }
    }
  }
  const uint32_t total = 3u * static_cast<uint32_t>(adds);
  for (int d = 0; d < 2; ++d) {
    Rank& k = w->rank[d];
    REQUIRE_OK(k.stream,
               k.stream->waitSignal(word(k.window, w->layout, kSigAdd), total, g_cfg.timeout_ns));
  }
  if (!sync(w->rank[0]) || !sync(w->rank[1])) return false;
  for (int d = 0; d < 2; ++d) {
    uint32_t got = 0;
    Rank& k = w->rank[d];
    if (!readWord(k.device, reinterpret_cast<uint8_t*>(word(k.window, w->layout, kSigAdd)), &got)) {
      return false;
    }
    REQUIRE(got == total, "rank %d: many-writer total %u, expected %u", d, got, total);
  }
  std::printf(
      "OK many-writer totals: %d signal/redAdd from each rank to each rank, total %u on "
      "both\n",
      4 * adds, total);
  return true;
}

bool testTimeout(World* w) {
  Rank& a = w->rank[0];
  Rank& b = w->rank[1];
  const std::size_t n = 4096 + 1;
  if (!poison(a.device, a.window, n + kGuard)) return false;
  std::vector<uint8_t> data;
  pattern(&data, n, 777);
  if (!upload(b.device, b.src, data)) return false;
  const auto t0 = std::chrono::steady_clock::now();
  REQUIRE_OK(b.stream, b.stream->waitSignal(word(b.window, w->layout, kSigTimeout), 1, 200 * kMs));
  // Queued behind the failing wait: the aborted stream must skip it.
  REQUIRE_OK(b.stream, b.stream->put(b.ctx, 0, b.window, b.src, n, 0, 0));
  const int rc = b.stream->synchronize(g_cfg.timeout_ns);
  const std::string message = b.stream->lastError();
  const double waited = secondsSince(t0);
  REQUIRE(rc == te4j::kTimeout,
          "synchronize after a waitSignal nobody satisfies returned %d (%s): "
          "%s",
          rc, statusName(rc), message.c_str());
  REQUIRE(message.find("waitSignal timed out") != std::string::npos,
          "the timeout is not the device's: %s", message.c_str());
  REQUIRE(waited >= 0.19, "timed out after %.3f s, before its 200 ms", waited);
  std::vector<uint8_t> got;
  if (!download(a.device, &got, a.window, n + kGuard)) return false;
  for (std::size_t i = 0; i < got.size(); ++i) {
    REQUIRE(got[i] == kPoison, "the put queued behind the timed-out wait ran (byte %zu)", i);
  }
  std::printf("OK device timeout reported by synchronize after %.3f s: %s\n", waited,
              message.c_str());
  // The stream is usable again: a signal from the peer is awaited, then a put runs.
  REQUIRE_OK(a.stream, a.stream->signal(a.ctx, 1, word(a.window, w->layout, kSigRecover), 1));
  REQUIRE_OK(b.stream,
             b.stream->waitSignal(word(b.window, w->layout, kSigRecover), 1, g_cfg.timeout_ns));
  REQUIRE_OK(b.stream, b.stream->put(b.ctx, 0, b.window, b.src, n, 0, 0));
  if (!sync(a) || !sync(b)) return false;
  if (!checkLanded(a.device, a.window, 0, data, "put after the timeout")) return false;
  std::printf("OK stream usable after the timeout (waitSignal + put)\n");
  return true;
}

// Applies a tuning spec; false (with the reason printed) when this libte4j does not know it.
bool applyVariant(const std::string& spec) {
  const char* error = nullptr;
  if (te4j::tuning::apply(spec.c_str(), &error) != 0) {
    std::printf("NOTE variant '%s' skipped: this libte4j refuses it: %s\n", spec.c_str(),
                error != nullptr ? error : "?");
    return false;
  }
  return true;
}

void tearDown(World* w) {
  for (int r = 0; r < 2; ++r) {
    Rank& k = w->rank[r];
    if (k.stream != nullptr) CHECK_OK(k.stream, k.stream->synchronize(g_cfg.timeout_ns));
  }
  for (int r = 0; r < 2; ++r) {
    Rank& k = w->rank[r];
    if (k.stream != nullptr) te4j::destroyObject(k.stream);
    k.stream = nullptr;
    if (k.ctx != nullptr) te4j::deleteCommCtx(k.ctx);
    k.ctx = nullptr;
  }
  // Both windows closed before either buffer is freed (peers map each other's buffers).
  for (int r = 0; r < 2; ++r) {
    Rank& k = w->rank[r];
    if (k.transport != nullptr && k.window_id >= 0) {
      CHECK_OK(k.transport, k.transport->closeWindow(k.window_id));
    }
  }
  for (int r = 0; r < 2; ++r) {
    Rank& k = w->rank[r];
    if (k.transport == nullptr) continue;
    if (k.window != nullptr) CHECK_OK(k.transport, k.transport->freeBuffer(k.window));
    if (k.src != nullptr) CHECK_OK(k.transport, k.transport->freeBuffer(k.src));
    te4j::destroyObject(k.transport);
    k.transport = nullptr;
  }
}

void runInProcess() {
  const auto t0 = std::chrono::steady_clock::now();
  World w;
  if (setUp(&w)) {
    for (const std::string& variant : g_cfg.variants) {
      if (!applyVariant(variant)) continue;
      const auto tv = std::chrono::steady_clock::now();
      const bool ok = testSizes(&w, variant) && testOrdering(&w, variant) && testGraph(&w, variant);
      std::printf("   [%s] (%s) %.2f s\n", variant.c_str(), te4j::tuning::describe(),
                  secondsSince(tv));
      if (!ok) break;  // later variants would fail on the same broken state
    }
    applyVariant("");  // production kernels for the rest
    testManyWriters(&w);
    testTimeout(&w);
  }
  tearDown(&w);
  std::printf("in-process part: %.2f s\n", secondsSince(t0));
}

// ---------------------------------------------------------------------------------------------
// Two ranks as two processes: this binary re-executed as "--ipc-child RANK FD" (exec, so that
// each child starts CUDA afresh; a forked copy of an initialised CUDA process cannot use it).

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Moves exactly n bytes over the socket within the deadline; false on timeout, EOF or error.
bool moveAll(int fd, void* data, std::size_t n, bool sending, int64_t deadline_ns,
             const char* what) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    const int64_t left_ms = (deadline_ns - nowNs()) / kMs;
    REQUIRE(left_ms > 0, "%s: timed out waiting for the peer process", what);
    pollfd pfd = {fd, static_cast<short>(sending ? POLLOUT : POLLIN), 0};
    const int ready = ::poll(&pfd, 1, static_cast<int>(std::min<int64_t>(left_ms, 1000)));
    if (ready < 0 && errno == EINTR) continue;
    REQUIRE(ready >= 0, "%s: poll: %s", what, std::strerror(errno));
    if (ready == 0) continue;
    const ssize_t m = sending ? ::send(fd, p, n, MSG_NOSIGNAL) : ::recv(fd, p, n, 0);
    if (m < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    REQUIRE(m > 0, "%s: %s", what,
            m == 0 ? "the peer process closed the socket" : std::strerror(errno));
    p += m;
    n -= static_cast<std::size_t>(m);
  }
  return true;
}

bool barrier(int fd, const char* what) {
  char token = 'B';
  const int64_t deadline = nowNs() + 3 * g_cfg.timeout_ns;
  return moveAll(fd, &token, 1, true, deadline, what) &&
         moveAll(fd, &token, 1, false, deadline, what) && token == 'B';
}

struct IpcRank {
  P2pTransport* transport = nullptr;
  OpStream* stream = nullptr;
  CommCtx* ctx = nullptr;
  uint8_t* window = nullptr;
  uint8_t* src = nullptr;
  int window_id = -1;
};

bool ipcBody(int rank, int fd, IpcRank* k, const Layout& layout) {
  const int peer = 1 - rank;
  const int device = deviceOf(rank);
  k->transport = P2pTransport::create(kPlatformCuda, device, 2);
  REQUIRE(k->transport != nullptr, "P2pTransport::create returned nullptr");
  REQUIRE_OK(k->transport, k->transport->status());
  void* p = nullptr;
  REQUIRE_OK(k->transport, k->transport->allocateBuffer(layout.bytes, &p));
  k->window = static_cast<uint8_t*>(p);
  REQUIRE_OK(k->transport, k->transport->allocateBuffer(layout.slot, &p));
  k->src = static_cast<uint8_t*>(p);
  const int ints = k->transport->handleInts();
  std::vector<int32_t> rows(static_cast<std::size_t>(2 * ints), 0);
  int n = 0;
  REQUIRE_OK(k->transport,
             n = k->transport->exportIpcHandle(k->window, rows.data() + rank * ints, ints));
  REQUIRE(n == ints, "exportIpcHandle wrote %d ints, expected %d", n, ints);
  const int64_t deadline = nowNs() + 3 * g_cfg.timeout_ns;
  const std::size_t row_bytes = sizeof(int32_t) * static_cast<std::size_t>(ints);
  if (!moveAll(fd, rows.data() + rank * ints, row_bytes, true, deadline, "send handle") ||
      !moveAll(fd, rows.data() + peer * ints, row_bytes, false, deadline, "receive handle")) {
    return false;
  }
  REQUIRE_OK(k->transport,
             k->window_id = k->transport->importPeerHandles(k->window, rank, 2, rows.data(), 3));
  REQUIRE_OK(k->transport, k->transport->verifyPeerAccess(k->window_id));
  k->ctx = te4j::newCommCtx();
  REQUIRE(k->ctx != nullptr, "newCommCtx returned nullptr");
  REQUIRE_OK(k->transport, k->transport->makeCommCtx(k->window_id, k->ctx));
  k->stream = OpStream::create(kPlatformCuda, device);
  REQUIRE(k->stream != nullptr, "OpStream::create returned nullptr");
  REQUIRE_OK(k->stream, k->stream->status());

  // Rounds: poison the own receive area, barrier, put to the peer with a signal, await the
  // peer's signal, check what the peer sent (its pattern is computed here from the seed).
  static const std::size_t kSizes[] = {1, 17, 4096 + 3, 65536, (1u << 20) + 5, 4u << 20, 16u << 20};
  static const std::size_t kOffsets[][2] = {{0, 0}, {3, 0}, {16, 16}, {5, 13}};
  uint32_t expected = 0;
  int round = 0;
  std::vector<uint8_t> mine;
  std::vector<uint8_t> theirs;
  for (std::size_t bytes : kSizes) {
    if (bytes > g_cfg.max_bytes) continue;
    const std::size_t off = kOffsets[round % 4][0];
    const std::size_t soff = kOffsets[round % 4][1];
    pattern(&mine, bytes, 0x1bc0000u + static_cast<uint64_t>(round) * 2 + rank);
    pattern(&theirs, bytes, 0x1bc0000u + static_cast<uint64_t>(round) * 2 + peer);
    if (!upload(device, k->src + soff, mine) || !poison(device, k->window, off + bytes + kGuard)) {
      return false;
    }
    if (!barrier(fd, "round barrier")) return false;
    REQUIRE_OK(k->stream,
               k->stream->putWithSignal(k->ctx, peer, k->window + off, k->src + soff, bytes,
                                        word(k->window, layout, kSigPut), 1, 0, 0));
    REQUIRE_OK(k->stream, k->stream->waitSignal(word(k->window, layout, kSigPut), ++expected,
                                                g_cfg.timeout_ns));
    REQUIRE_OK(k->stream, k->stream->synchronize(g_cfg.timeout_ns));
    char what[96];
    std::snprintf(what, sizeof(what), "ipc round %d: %zu B from rank %d", round, bytes, peer);
    if (!checkLanded(device, k->window, off, theirs, what)) return false;
    ++round;
  }
  // Many writers over IPC: both ranks add to both ranks' word.
  const int adds = std::max(1, g_cfg.adds / 4);
  for (int i = 0; i < adds; ++i) {
    for (int d = 0; d < 2; ++d) {
      uint32_t* target = word(k->window, layout, kSigAdd);
      const uint32_t value = static_cast<uint32_t>(rank + 1);
      if (i % 2 == 0) {
        REQUIRE_OK(k->stream, k->stream->redAdd(k->ctx, d, target, value));
      } else {
        REQUIRE_OK(k->stream, k->stream->signal(k->ctx, d, target, value));
      }
    }
  }
  const uint32_t total = 3u * static_cast<uint32_t>(adds);
  REQUIRE_OK(k->stream,
             k->stream->waitSignal(word(k->window, layout, kSigAdd), total, g_cfg.timeout_ns));
  REQUIRE_OK(k->stream, k->stream->synchronize(g_cfg.timeout_ns));
  uint32_t got = 0;
  if (!readWord(device, reinterpret_cast<uint8_t*>(word(k->window, layout, kSigAdd)), &got)) {
    return false;
  }
  REQUIRE(got == total, "ipc many-writer total %u, expected %u", got, total);
  std::printf("[ipc rank %d] OK %d put+signal rounds checked, many-writer total %u\n", rank, round,
              total);
  return true;
}

int runIpcChild(int rank, int fd) {
  g_rank_tag = rank;
  ::alarm(static_cast<unsigned>(std::min<int64_t>(20 * g_cfg.timeout_ns / 1000000000, 86400)));
  const Layout layout(g_cfg.max_bytes);
  IpcRank k;
  const bool ok = ipcBody(rank, fd, &k, layout);
  if (k.stream != nullptr) {
    CHECK_OK(k.stream, k.stream->synchronize(g_cfg.timeout_ns));
    te4j::destroyObject(k.stream);
  }
  if (k.ctx != nullptr) te4j::deleteCommCtx(k.ctx);
  if (k.transport != nullptr) {
    if (k.window_id >= 0) CHECK_OK(k.transport, k.transport->closeWindow(k.window_id));
    // The peer unmaps this buffer before it is freed (CUDA leaves freeing a mapped one undefined).
    // After a failure the peer may be gone: then there is nobody to wait for.
    if (ok && !barrier(fd, "teardown barrier")) std::fprintf(stderr, "teardown barrier failed\n");
    if (k.window != nullptr) CHECK_OK(k.transport, k.transport->freeBuffer(k.window));
    if (k.src != nullptr) CHECK_OK(k.transport, k.transport->freeBuffer(k.src));
    te4j::destroyObject(k.transport);
  }
  ::close(fd);
  // Every stream is gone: its words go back to the CUDA runtime, so that memcheck's leak check
  // sees only what te4j really lost.
  te4j::releaseCachedMemory();
  if (!ok && g_failures == 0) ++g_failures;
  return g_failures == 0 ? 0 : 1;
}

void runIpc() {
  const auto t0 = std::chrono::steady_clock::now();
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
    failHeader(__LINE__);
    std::fprintf(stderr, "socketpair: %s\n", std::strerror(errno));
    return;
  }
  // Everything the children need is prepared before fork: they only close and exec.
  char rank_arg[2][8];
  char fd_arg[2][16];
  for (int r = 0; r < 2; ++r) {
    std::snprintf(rank_arg[r], sizeof(rank_arg[r]), "%d", r);
    std::snprintf(fd_arg[r], sizeof(fd_arg[r]), "%d", sv[r]);
  }
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pids[2] = {-1, -1};
  for (int r = 0; r < 2; ++r) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(sv[1 - r]);
      ::execl("/proc/self/exe", "test_cuda_ops", "--ipc-child", rank_arg[r], fd_arg[r],
              static_cast<char*>(nullptr));
      _exit(127);
    }
    if (pid < 0) {
      failHeader(__LINE__);
      std::fprintf(stderr, "fork: %s\n", std::strerror(errno));
      break;
    }
    pids[r] = pid;
  }
  ::close(sv[0]);
  ::close(sv[1]);
  const int64_t deadline = nowNs() + 6 * g_cfg.timeout_ns + 60000 * kMs;
  int status[2] = {-1, -1};
  int left = (pids[0] > 0) + (pids[1] > 0);
  while (left > 0) {
    for (int r = 0; r < 2; ++r) {
      if (pids[r] <= 0 || status[r] != -1) continue;
      int st = 0;
      const pid_t got = ::waitpid(pids[r], &st, WNOHANG);
      if (got == pids[r]) {
        status[r] = st;
        --left;
      }
    }
    if (left == 0) break;
    if (nowNs() > deadline) {
      failHeader(__LINE__);
      std::fprintf(stderr, "ipc children still running at the deadline: killing them\n");
      for (int r = 0; r < 2; ++r) {
        if (pids[r] > 0 && status[r] == -1) {
          ::kill(pids[r], SIGKILL);
          ::waitpid(pids[r], &status[r], 0);
        }
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (int r = 0; r < 2; ++r) {
    if (pids[r] <= 0) continue;
    const int st = status[r];
    if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
      failHeader(__LINE__);
      if (WIFEXITED(st)) {
        std::fprintf(stderr, "ipc rank %d exited with %d\n", r, WEXITSTATUS(st));
      } else if (WIFSIGNALED(st)) {
        std::fprintf(stderr, "ipc rank %d died of signal %d\n", r, WTERMSIG(st));
      } else {
        std::fprintf(stderr, "ipc rank %d: wait status 0x%x\n", r, st);
      }
    }
  }
  std::printf("ipc part (2 processes, CUDA IPC handles): %.2f s\n", secondsSince(t0));
}

// Empty when this machine can run the test, else why not.
std::string skipReason() {
  const int n = te4j::cudaDeviceCount();
  if (n < 0) return std::string("CUDA unusable: ") + te4j::lastThreadError();
  if (n == 0) {
    const std::string report = te4j::availabilityReport();
    if (report.find("cuda.built=false") != std::string::npos) {
      return "libte4j was built without CUDA (no nvcc at build time)";
    }
    return "no CUDA device";
  }
  if (n < 2) return "";  // both ranks on device 0
  const int can01 = te4j::cudaCanAccessPeer(0, 1);
  const int can10 = te4j::cudaCanAccessPeer(1, 0);
  if (can01 < 0 || can10 < 0) {
    return std::string("cudaCanAccessPeer failed: ") + te4j::lastThreadError();
  }
  if (can01 == 0 || can10 == 0) return "devices 0 and 1 have no peer access";
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  loadConfig();
  if (argc == 4 && std::strcmp(argv[1], "--ipc-child") == 0) {
    const int rank = std::atoi(argv[2]);
    const int fd = std::atoi(argv[3]);
    if ((rank != 0 && rank != 1) || fd < 0) {
      std::fprintf(stderr, "usage: test_cuda_ops [--ipc-child 0|1 FD]\n");
      return 2;
    }
    return runIpcChild(rank, fd);
  }
  const std::string skip = skipReason();
  if (!skip.empty()) {
    std::printf("SKIP: %s\n", skip.c_str());
    return 0;
  }
  // A last resort against a hang the bounded waits miss (the default action kills us).
  ::alarm(static_cast<unsigned>(std::min<int64_t>(60 * g_cfg.timeout_ns / 1000000000, 86400)));
  std::string variants;
  for (const std::string& v : g_cfg.variants) variants += (variants.empty() ? "" : " | ") + v;
  std::printf("test_cuda_ops: max %zu B, %d adds, deadline %.0f s, variants: %s\n", g_cfg.max_bytes,
              g_cfg.adds, g_cfg.timeout_ns / 1e9, variants.c_str());
  runInProcess();
  if (g_cfg.ipc) {
    runIpc();
  } else {
    std::printf("ipc part skipped (TE4J_CUDA_OPS_IPC=0)\n");
  }
  const std::size_t released = te4j::releaseCachedMemory();
  std::printf("released %zu bytes of idle op-stream words\n", released);
  std::printf(g_failures == 0 ? "test_cuda_ops: OK\n" : "test_cuda_ops: %d FAILED\n", g_failures);
  return g_failures == 0 ? 0 : 1;
}
