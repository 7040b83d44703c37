// test_host_p2p.cpp — native test of the host-platform P2pTransport with real processes.
//
// Groups of 2 and 4 forked processes allocate, export, exchange blobs through pipes (the parent
// is the rendezvous), import, write random data and atomic counters into every peer through the
// peer pointers, and check what arrived. Then bad handles (each field corrupted, a forged fd, a
// dead owner), wrong arguments, same-process peers, and finally: nothing new in /dev/shm.
// main() returns nonzero when anything failed. Every wait is bounded by alarm() (default action:
// the process dies, so a hang turns into a failure; no signal handler is installed).
#include <dirent.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "p2p/host_p2p_transport.h"
#include "te4j/api.h"
#include "transport/device/comm_device.cuh"

namespace {

using te4j::P2pTransport;

int g_failures = 0;

#define EXPECT(cond, ...)                                                                     \
  do {                                                                                        \
    if (!(cond)) {                                                                            \
      ++g_failures;                                                                           \
      std::fprintf(stderr, "[pid %d] FAIL %s:%d: %s: ", static_cast<int>(getpid()), __FILE__, \
                   __LINE__, #cond);                                                          \
      std::fprintf(stderr, __VA_ARGS__);                                                      \
      std::fprintf(stderr, "\n");                                                             \
    }                                                                                         \
  } while (0)

constexpr std::size_t kSlot = 64 * 1024;  // bytes each rank writes into each peer

// Blob layout facts the bad-handle cases corrupt (see handle_blob.h / host_p2p_transport.h).
constexpr int kPlatformAt = 2, kVersionAt = 1, kPidAt = 3, kSizeLoAt = 4, kHostIdAt = 6;
constexpr int kFdAt = 10, kTokenAt = 11;

bool writeAll(int fd, const void* data, std::size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

bool readAll(int fd, void* data, std::size_t n) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t r = ::read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

// Deterministic bytes for the slot that rank `src` writes into rank `dst`.
void fillPattern(unsigned char* out, std::size_t n, uint64_t seed, int src, int dst) {
  std::mt19937_64 gen(seed ^ (static_cast<uint64_t>(src) << 32) ^ static_cast<uint64_t>(dst));
  for (std::size_t i = 0; i < n; i += 8) {
    const uint64_t v = gen();
    std::memcpy(out + i, &v, n - i < 8 ? n - i : 8);
  }
}

std::set<std::string> listDevShm() {
  std::set<std::string> names;
  if (DIR* d = ::opendir("/dev/shm")) {
    while (dirent* e = ::readdir(d)) names.insert(e->d_name);
    ::closedir(d);
  }
  return names;
}

// ---- one rank of a group, in a child process; returns the exit code -------------------------

int runRank(int rank, int n, uint64_t seed, int up, int down) {
  ::alarm(60);
  const std::size_t bytes = kSlot * static_cast<std::size_t>(n) + 64;
  const std::size_t counter_at = bytes - sizeof(uint32_t);
  P2pTransport* t = P2pTransport::create(te4j::kPlatformHost, 0, n);
  EXPECT(t != nullptr && t->status() == te4j::kOk, "create: %s", t ? t->lastError() : "null");
  if (t == nullptr || t->status() != te4j::kOk) return 1;
  const int ints = t->handleInts();
  void* local = nullptr;
  int st = t->allocateBuffer(bytes, &local);
  EXPECT(st == te4j::kOk && local != nullptr, "allocateBuffer: %d %s", st, t->lastError());
  if (st != te4j::kOk) return 1;
  for (std::size_t i = 0; i < bytes; ++i) {
    if (static_cast<unsigned char*>(local)[i] != 0) {
      EXPECT(false, "buffer not zero-filled at %zu", i);
      break;
    }
  }
  std::vector<int32_t> mine(static_cast<std::size_t>(ints));
  st = t->exportIpcHandle(local, mine.data(), ints);
  EXPECT(st == ints, "exportIpcHandle: %d %s", st, t->lastError());
  std::vector<int32_t> all(static_cast<std::size_t>(ints * n));
  if (!writeAll(up, mine.data(), mine.size() * 4) || !readAll(down, all.data(), all.size() * 4)) {
    return 2;
  }
  const uint64_t mask = n == 64 ? ~0ull : (1ull << n) - 1;
  const int window = t->importPeerHandles(local, rank, n, all.data(), mask);
  EXPECT(window >= 0, "importPeerHandles: %d %s", window, t->lastError());
  if (window < 0) return 1;
  EXPECT(t->allPeersAccessible(window), "allPeersAccessible");
  st = t->verifyPeerAccess(window);
  EXPECT(st == te4j::kOk, "verifyPeerAccess: %d %s", st, t->lastError());
  mooncake::device::CommCtx ctx;
  st = t->makeCommCtx(window, &ctx);
  EXPECT(st == te4j::kOk && ctx.rank == rank && ctx.p2p.local_base == local &&
             ctx.ibgda.qps == nullptr,
         "makeCommCtx: %d %s", st, t->lastError());
  int* avail = static_cast<int*>(t->availableTablePtr(window));
  void** peers = static_cast<void**>(t->peerPtrsTablePtr(window));
  EXPECT(avail == ctx.p2p.available && peers == ctx.p2p.peer_ptrs, "table accessors");
  EXPECT(peers[rank] == local, "own peer pointer is the local base");
  // Each rank's route, decided once by the window: every rank mapped (host memory), none past it.
  for (int r = 0; r < mooncake::device::kMcMaxRanks; ++r) {
    const int want =
        r < n ? mooncake::device::kMcRankRouteSameDevice : mooncake::device::kMcRankRouteNone;
    const int got = mooncake::device::mc_decided_route(ctx, r);
    EXPECT(got == want, "route of rank %d: %d, want %d", r, got, want);
  }

  // Write my slot into every peer (myself included), through the device-header helpers, and
  // bump each peer's counter once.
  std::vector<unsigned char> pattern(kSlot);
  for (int dst = 0; dst < n; ++dst) {
    EXPECT(mooncake::device::mc_p2p_available(ctx.p2p, dst), "rank %d not available", dst);
    fillPattern(pattern.data(), kSlot, seed, rank, dst);
    unsigned char* slot =
        static_cast<unsigned char*>(local) + kSlot * static_cast<std::size_t>(rank);
    void* remote = mooncake::device::mc_p2p_peer_ptr(ctx.p2p, dst, slot);
    std::memcpy(remote, pattern.data(), kSlot);
    if (dst != rank) {
      uint32_t* counter = static_cast<uint32_t*>(mooncake::device::mc_p2p_peer_ptr(
          ctx.p2p, dst, static_cast<unsigned char*>(local) + counter_at));
      __atomic_fetch_add(counter, 1u, __ATOMIC_RELEASE);
    }
  }
  char byte = 'w';
  if (!writeAll(up, &byte, 1) || !readAll(down, &byte, 1)) return 2;  // barrier: all wrote

  for (int src = 0; src < n; ++src) {
    fillPattern(pattern.data(), kSlot, seed, src, rank);
    const unsigned char* slot =
        static_cast<unsigned char*>(local) + kSlot * static_cast<std::size_t>(src);
    EXPECT(std::memcmp(slot, pattern.data(), kSlot) == 0, "rank %d: slot from %d differs", rank,
           src);
  }
  const uint32_t count =
      __atomic_load_n(reinterpret_cast<uint32_t*>(static_cast<unsigned char*>(local) + counter_at),
                      __ATOMIC_ACQUIRE);
  EXPECT(count == static_cast<uint32_t>(n - 1), "rank %d: counter %u, expected %d", rank, count,
         n - 1);

  st = t->freeBuffer(local);
  EXPECT(st == te4j::kIllegalState, "freeBuffer with an open window: %d", st);
  if (!writeAll(up, &byte, 1) || !readAll(down, &byte, 1)) return 2;  // barrier: all checked
  EXPECT(t->closeWindow(window) == te4j::kOk, "closeWindow: %s", t->lastError());
  EXPECT(t->closeWindow(window) == te4j::kInvalidArgument, "closeWindow twice");
  EXPECT(t->availableTablePtr(window) == nullptr, "table of a closed window");
  EXPECT(t->freeBuffer(local) == te4j::kOk, "freeBuffer: %s", t->lastError());
  delete t;
  return g_failures == 0 ? 0 : 1;
}

// Runs n ranks in n child processes; the parent relays blobs and barriers.
void runGroup(int n) {
  std::printf("group of %d processes\n", n);
  std::fflush(stdout);
  const uint64_t seed = std::random_device{}() * 0x9e3779b97f4a7c15ull + static_cast<uint64_t>(n);
  std::vector<int> up(static_cast<std::size_t>(n)), down(static_cast<std::size_t>(n));
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    int u[2], d[2];
    if (::pipe(u) != 0 || ::pipe(d) != 0) {
      EXPECT(false, "pipe: %s", std::strerror(errno));
      return;
    }
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(u[0]);
      ::close(d[1]);
      for (int k = 0; k < r; ++k) {  // earlier ranks' parent-side ends
        ::close(up[static_cast<std::size_t>(k)]);
        ::close(down[static_cast<std::size_t>(k)]);
      }
      ::_exit(runRank(r, n, seed, u[1], d[0]));
    }
    ::close(u[1]);
    ::close(d[0]);
    up[static_cast<std::size_t>(r)] = u[0];
    down[static_cast<std::size_t>(r)] = d[1];
    pids.push_back(pid);
  }
  const int ints = 15;
  std::vector<int32_t> all(static_cast<std::size_t>(ints * n));
  bool io = true;
  for (int r = 0; r < n && io; ++r) {
    io = readAll(up[r], &all[static_cast<std::size_t>(r * ints)], ints * 4);
  }
  for (int r = 0; r < n && io; ++r) io = writeAll(down[r], all.data(), all.size() * 4);
  for (int phase = 0; phase < 2 && io; ++phase) {
    char b;
    for (int r = 0; r < n && io; ++r) io = readAll(up[r], &b, 1);
    for (int r = 0; r < n && io; ++r) io = writeAll(down[r], &b, 1);
  }
  EXPECT(io, "group of %d: a child stopped talking (crashed or failed early)", n);
  for (int r = 0; r < n; ++r) {
    ::close(up[r]);
    ::close(down[r]);
  }
  for (int r = 0; r < n; ++r) {
    int status = 0;
    ::waitpid(pids[static_cast<std::size_t>(r)], &status, 0);
    EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "group of %d: rank %d exit status 0x%x",
           n, r, status);
  }
}

// ---- bad handles against a live (then dead) peer process -------------------------------------

void runBadHandles() {
  std::printf("bad handles\n");
  std::fflush(stdout);
  const std::size_t bytes = 8192;
  int u[2], d[2];
  if (::pipe(u) != 0 || ::pipe(d) != 0) {
    EXPECT(false, "pipe");
    return;
  }
  const pid_t pid = ::fork();
  if (pid == 0) {  // the peer: rank 1; writes a marker, exports, waits until told to exit
    ::alarm(60);
    ::close(u[0]);
    ::close(d[1]);
    P2pTransport* t = P2pTransport::create(te4j::kPlatformHost, 0, 2);
    void* p = nullptr;
    int32_t blob[15] = {0};
    if (t == nullptr || t->allocateBuffer(bytes, &p) != te4j::kOk) ::_exit(1);
    std::memcpy(p, "alive", 6);
    if (t->exportIpcHandle(p, blob, 15) != 15) ::_exit(1);
    char b;
    if (!writeAll(u[1], blob, sizeof(blob)) || !readAll(d[0], &b, 1)) ::_exit(2);
    ::_exit(0);  // leaves the buffer to the kernel, as a SIGKILL would
  }
  ::close(u[1]);
  ::close(d[0]);
  int32_t peer[15];
  EXPECT(readAll(u[0], peer, sizeof(peer)), "peer blob");

  P2pTransport* t = P2pTransport::create(te4j::kPlatformHost, 0, 2);
  void* local = nullptr;
  EXPECT(t->allocateBuffer(bytes, &local) == te4j::kOk, "allocate: %s", t->lastError());
  int32_t rows[30];
  EXPECT(t->exportIpcHandle(local, rows, 15) == 15, "export");

  struct Case {
    const char* name;
    int field;
    int32_t value;
    int expected;
  };
  const Case cases[] = {
      {"corrupted magic", 0, 0x12345678, te4j::kBadHandle},
      {"version 2", kVersionAt, 2, te4j::kBadHandle},
      {"platform cuda", kPlatformAt, te4j::kPlatformCuda, te4j::kBadHandle},
      {"pid 0", kPidAt, 0, te4j::kBadHandle},
      {"wrong size", kSizeLoAt, static_cast<int32_t>(bytes + 4096), te4j::kBadHandle},
      {"foreign host id", kHostIdAt + 2, peer[kHostIdAt + 2] ^ 1, te4j::kBadHandle},
      {"fd token mismatch", kTokenAt + 3, peer[kTokenAt + 3] ^ 0x10, te4j::kBadHandle},
      {"forged fd (a pipe of the peer)", kFdAt, u[1], te4j::kBadHandle},
      {"fd not open in the peer", kFdAt, 999, te4j::kBadHandle},
      {"negative fd", kFdAt, -3, te4j::kBadHandle},
  };
  for (const Case& c : cases) {
    std::memcpy(rows + 15, peer, sizeof(peer));
    rows[15 + c.field] = c.value;
    const int st = t->importPeerHandles(local, 0, 2, rows, 3);
    EXPECT(st == c.expected, "%s: got %d (%s), expected %d", c.name, st, t->lastError(),
           c.expected);
    std::printf("  %-32s -> %d  %s\n", c.name, st, t->lastError());
  }

  // Random corruption of one word, many times: always refused, never a crash.
  std::mt19937 gen(12345);
  for (int i = 0; i < 300; ++i) {
    std::memcpy(rows + 15, peer, sizeof(peer));
    const int field = static_cast<int>(gen() % 15);
    rows[15 + field] ^= static_cast<int32_t>(1u << (gen() % 32));
    const int st = t->importPeerHandles(local, 0, 2, rows, 3);
    EXPECT(st < 0, "corrupted word %d accepted (window %d)", field, st);
    if (st >= 0) t->closeWindow(st);
  }

  // Argument checks.
  std::memcpy(rows + 15, peer, sizeof(peer));
  EXPECT(t->importPeerHandles(local, 2, 2, rows, 3) == te4j::kInvalidArgument, "rank 2 of 2");
  EXPECT(t->importPeerHandles(local, 0, 2, rows, 7) == te4j::kInvalidArgument, "mask bit 2");
  EXPECT(t->importPeerHandles(local, 0, 3, rows, 3) == te4j::kInvalidArgument, "num_ranks 3");
  EXPECT(
      t->importPeerHandles(static_cast<char*>(local) + 8, 0, 2, rows, 3) == te4j::kInvalidArgument,
      "interior local_ptr");
  EXPECT(t->importPeerHandles(rows, 0, 2, rows, 3) == te4j::kInvalidArgument, "foreign ptr");
  EXPECT(t->importPeerHandles(local, 0, 2, nullptr, 3) == te4j::kInvalidArgument, "null rows");
  EXPECT(t->exportIpcHandle(local, rows, 14) == te4j::kInvalidArgument, "small capacity");
  EXPECT(t->registerBuffer(local, bytes) == te4j::kInvalidArgument, "register on host");

  // Inactive peer: only the own rank, nothing read from the peer row.
  int w = t->importPeerHandles(local, 0, 2, nullptr, 1);
  EXPECT(w >= 0 && !t->allPeersAccessible(w), "own rank only: %d %s", w, t->lastError());
  EXPECT(static_cast<int*>(t->availableTablePtr(w))[1] == 0, "inactive rank available");
  EXPECT(static_cast<void**>(t->peerPtrsTablePtr(w))[1] == nullptr, "inactive rank pointer");
  EXPECT(t->closeWindow(w) == te4j::kOk, "close");

  // The real thing, then the peer exits (zombie first, then reaped).
  w = t->importPeerHandles(local, 0, 2, rows, 3);
  EXPECT(w >= 0, "valid import: %d %s", w, t->lastError());
  if (w >= 0) {
    EXPECT(t->verifyPeerAccess(w) == te4j::kOk, "verify live peer: %s", t->lastError());
    const char* marker = static_cast<const char*>(static_cast<void**>(t->peerPtrsTablePtr(w))[1]);
    EXPECT(std::strcmp(marker, "alive") == 0, "peer marker");
  }
  char b = 'x';
  writeAll(d[1], &b, 1);
  EXPECT(!readAll(u[0], &b, 1), "peer exits (EOF)");  // EOF: the peer is closing its fds
  if (w >= 0) {  // exiting or zombie, whichever comes first: both count as lost
    const int st = t->verifyPeerAccess(w);
    EXPECT(st == te4j::kPeerLost, "verify exiting peer: %d %s", st, t->lastError());
  }
  siginfo_t info;
  std::memset(&info, 0, sizeof(info));
  ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT);  // a zombie, not reaped
  if (w >= 0) {
    int st = t->verifyPeerAccess(w);
    EXPECT(st == te4j::kPeerLost, "verify zombie peer: %d %s", st, t->lastError());
    std::printf("  %-32s -> %d  %s\n", "verify, zombie peer", st, t->lastError());
    const char* marker = static_cast<const char*>(static_cast<void**>(t->peerPtrsTablePtr(w))[1]);
    EXPECT(std::strcmp(marker, "alive") == 0, "mapping outlives its owner");
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "peer exit 0x%x", status);
  const int st = t->importPeerHandles(local, 0, 2, rows, 3);
  EXPECT(st == te4j::kPeerLost, "dead pid: got %d (%s)", st, t->lastError());
  std::printf("  %-32s -> %d  %s\n", "dead pid", st, t->lastError());
  if (w >= 0) EXPECT(t->closeWindow(w) == te4j::kOk, "close after peer death");
  EXPECT(t->freeBuffer(local) == te4j::kOk, "free");
  ::close(u[0]);
  ::close(d[1]);
  delete t;
}

// ---- peers inside one process ------------------------------------------------------------------

void runSameProcess() {
  std::printf("same process\n");
  const std::size_t bytes = 4096 * 3;
  // Two transports: a different transport's segment is mapped again (an alias of the same pages).
  P2pTransport* a = P2pTransport::create(te4j::kPlatformHost, 0, 2);
  P2pTransport* b = P2pTransport::create(te4j::kPlatformHost, 0, 2);
  void *pa = nullptr, *pb = nullptr;
  EXPECT(a->allocateBuffer(bytes, &pa) == te4j::kOk && b->allocateBuffer(bytes, &pb) == te4j::kOk,
         "allocate");
  int32_t rows[30];
  EXPECT(a->exportIpcHandle(pa, rows, 15) == 15 && b->exportIpcHandle(pb, rows + 15, 15) == 15,
         "export");
  const int wa = a->importPeerHandles(pa, 0, 2, rows, 3);
  const int wb = b->importPeerHandles(pb, 1, 2, rows, 3);
  EXPECT(wa >= 0 && wb >= 0, "import: %s / %s", a->lastError(), b->lastError());
  if (wa >= 0 && wb >= 0) {
    uint32_t* into_b = static_cast<uint32_t*>(static_cast<void**>(a->peerPtrsTablePtr(wa))[1]);
    EXPECT(into_b != pb, "another transport's segment is an alias mapping");
    into_b[100] = 0xfeedbeef;
    EXPECT(static_cast<uint32_t*>(pb)[100] == 0xfeedbeef, "alias sees the write");
    EXPECT(a->verifyPeerAccess(wa) == te4j::kOk && b->verifyPeerAccess(wb) == te4j::kOk,
           "verify: %s / %s", a->lastError(), b->lastError());
    EXPECT(a->closeWindow(wa) == te4j::kOk && b->closeWindow(wb) == te4j::kOk, "close");
  }
  // One transport, two of its own buffers: the peer is its local mapping, used directly.
  void* pc = nullptr;
  EXPECT(a->allocateBuffer(bytes, &pc) == te4j::kOk, "allocate second");
  EXPECT(a->exportIpcHandle(static_cast<char*>(pc) + 100, rows + 15, 15) == 15,
         "export by interior pointer");
  const int wc = a->importPeerHandles(pa, 0, 2, rows, 3);
  EXPECT(wc >= 0, "import own: %s", a->lastError());
  if (wc >= 0) {
    EXPECT(static_cast<void**>(a->peerPtrsTablePtr(wc))[1] == pc, "own segment used directly");
    EXPECT(a->peerPtrsTablePtr(-1) == a->peerPtrsTablePtr(wc), "window -1 is the latest");
    EXPECT(a->freeBuffer(pc) == te4j::kIllegalState, "free a buffer a window maps directly");
    EXPECT(a->verifyPeerAccess(wc) == te4j::kOk, "verify own: %s", a->lastError());
    EXPECT(a->closeWindow(wc) == te4j::kOk, "close own");
  }
  EXPECT(a->freeBuffer(pc) == te4j::kOk, "free second: %s", a->lastError());
  EXPECT(a->freeBuffer(pc) == te4j::kInvalidArgument, "double free");
  delete a;  // frees pa with its window closed; b's destructor frees pb
  delete b;
}

// True when [addr, addr + one page) is mapped in this process (mincore answers ENOMEM otherwise).
bool pageMapped(const void* addr) {
  const long page = ::sysconf(_SC_PAGESIZE);
  unsigned char resident = 0;
  void* start = reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(addr) &
                                        ~(static_cast<uintptr_t>(page) - 1));
  return ::mincore(start, static_cast<std::size_t>(page), &resident) == 0;
}

// mapSegment's mapping must go whole on unmapSegment and on destruction: its control page and
// its entry in the registry of control pages too, or an executor would find a stale control page
// for an address that a later mapping reuses.
void runMapSegment() {
  std::printf("mapSegment / unmapSegment\n");
  const std::size_t bytes = 4096 * 2 + 100;
  P2pTransport* owner = P2pTransport::create(te4j::kPlatformHost, 0, 1);
  P2pTransport* mapper = P2pTransport::create(te4j::kPlatformHost, 0, 1);
  void* p = nullptr;
  int32_t blob[15];
  EXPECT(owner->allocateBuffer(bytes, &p) == te4j::kOk, "allocate: %s", owner->lastError());
  EXPECT(owner->exportIpcHandle(p, blob, 15) == 15, "export: %s", owner->lastError());
  const std::size_t control_at =
      te4j::hostSegmentMapBytes(bytes) - static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  for (int round = 0; round < 2; ++round) {
    void* base = nullptr;
    uint64_t got = 0;
    EXPECT(mapper->mapSegment(blob, 15, &base, &got) == te4j::kOk && got == bytes, "map: %s",
           mapper->lastError());
    if (base == nullptr) break;
    static_cast<unsigned char*>(base)[bytes - 1] = 0x5a;
    EXPECT(static_cast<unsigned char*>(p)[bytes - 1] == 0x5a, "the mapping aliases the buffer");
    te4j::HostControlCache cache;
    EXPECT(te4j::hostSegmentControl(base, &cache) != nullptr, "the mapping has a control page");
    const void* control = static_cast<unsigned char*>(base) + control_at;
    EXPECT(pageMapped(control), "control page mapped while the segment is");
    if (round == 0) {
      EXPECT(mapper->unmapSegment(base) == te4j::kOk, "unmap: %s", mapper->lastError());
      EXPECT(mapper->unmapSegment(base) == te4j::kInvalidArgument, "second unmap refused");
    } else {
      delete mapper;  // unmaps what is still mapped
      mapper = nullptr;
    }
    te4j::HostControlCache fresh;
    EXPECT(te4j::hostSegmentControl(base, &fresh) == nullptr,
           "round %d: no registry entry left for the unmapped segment", round);
    EXPECT(!pageMapped(base), "round %d: user bytes unmapped", round);
    EXPECT(!pageMapped(control), "round %d: control page unmapped", round);
  }
  delete mapper;
  EXPECT(owner->freeBuffer(p) == te4j::kOk, "free: %s", owner->lastError());
  delete owner;
}

void runFactory() {
  std::printf("factory and free functions\n");
  P2pTransport* t = P2pTransport::create(te4j::kPlatformHost, 0, 65);
  EXPECT(t != nullptr && t->status() == te4j::kInvalidArgument, "65 ranks refused");
  void* p = nullptr;
  EXPECT(t->allocateBuffer(16, &p) == te4j::kInvalidArgument && p == nullptr, "unusable object");
  delete t;
  t = P2pTransport::create(te4j::kPlatformHost, 0, 64);
  EXPECT(t->status() == te4j::kOk, "64 ranks");
  EXPECT(t->allocateBuffer(0, &p) == te4j::kInvalidArgument, "0 bytes");
  EXPECT(t->allocateBuffer(16, nullptr) == te4j::kInvalidArgument, "null out");
  EXPECT(t->freeBuffer(&p) == te4j::kInvalidArgument, "free foreign");
  EXPECT(t->verifyPeerAccess(0) == te4j::kInvalidArgument, "verify no window");
  EXPECT(t->makeCommCtx(0, nullptr) == te4j::kInvalidArgument, "ctx null");
  delete t;
  t = P2pTransport::create(7, 0, 2);
  EXPECT(t != nullptr && t->status() == te4j::kInvalidArgument, "unknown platform");
  delete t;
  t = P2pTransport::create(te4j::kPlatformCuda, 0, 2);
  std::printf("  cuda transport: status %d %s\n", t->status(), t->lastError());
  EXPECT(t->status() != te4j::kOk || t->platform() == te4j::kPlatformCuda, "cuda transport");
  delete t;
  const std::string report = te4j::availabilityReport();
  std::printf("%s", report.c_str());
  EXPECT(report.find("host.available=true\n") != std::string::npos, "host available");
  EXPECT(report.find("cuda.built=") != std::string::npos, "cuda.built line");
  mooncake::device::CommCtx* ctx = te4j::newCommCtx();
  EXPECT(ctx != nullptr && ctx->p2p.available == nullptr && ctx->rank == 0, "newCommCtx zeroed");
  te4j::deleteCommCtx(ctx);
  char src[8] = "abcdefg", dst[8] = {0};
  EXPECT(te4j::copyMemory(te4j::kPlatformHost, 0, dst, src, 8) == te4j::kOk &&
             std::strcmp(dst, "abcdefg") == 0,
         "copyMemory host");
  EXPECT(te4j::fillMemory(te4j::kPlatformHost, 0, dst, 'z', 3) == te4j::kOk && dst[2] == 'z',
         "fillMemory host");
  EXPECT(te4j::copyMemory(te4j::kPlatformHost, 0, nullptr, src, 8) == te4j::kInvalidArgument &&
             *te4j::lastThreadError() != '\0',
         "copyMemory null");
}

}  // namespace

int main() {
  ::alarm(120);
  const std::set<std::string> shm_before = listDevShm();
  runFactory();
  runGroup(2);
  runGroup(4);
  runBadHandles();
  runSameProcess();
  runMapSegment();
  for (const std::string& name : listDevShm()) {
    EXPECT(shm_before.count(name) != 0, "new /dev/shm entry after the test: %s", name.c_str());
  }
  std::printf(g_failures == 0 ? "test_host_p2p: OK\n" : "test_host_p2p: %d FAILED\n", g_failures);
  return g_failures == 0 ? 0 : 1;
}
