// host_p2p_transport.cpp — te4j::P2pTransport for kPlatformHost: each symmetric buffer is a memfd
// segment; peers of the same host map it through /proc/<owner pid>/fd/<fd>.
//
// Why memfd + /proc rather than shm_open: a memfd has no name in /dev/shm, so a process killed
// with SIGKILL leaves nothing behind; the kernel frees a segment once its last fd and mapping are
// gone. The price: opening /proc/<pid>/fd/<n> needs ptrace read access to the owner (same user,
// dumpable, same pid namespace), and the owner keeps the fd open while the buffer lives.
//
// Why a random token in the memfd name: the blob travels through untrusted channels; an importer
// maps an fd only when its link reads "/memfd:te4j-<token> (deleted)", so a forged handle cannot
// make it map any other file of the named process.
//
// Why seals: a segment is sealed against shrinking, so no one (not even a process that opened it
// through /proc) can truncate it and turn peers' accesses into SIGBUS.
//
// Why a control page after the user's bytes (HostSegmentControl): a waiter parks with FUTEX_WAIT
// on a signal word and a writer of another process must know whether to call FUTEX_WAKE; the
// count of parked waiters has to live in memory that both map, and the user's bytes are theirs.
//
// The windows, their checks and their order are the skeleton's (symmetric_window_transport.h);
// this file holds the memfd segments and the hooks.
//
// Threading: every method takes the object's mutex; tables returned by the accessors stay valid
// until closeWindow or destruction.
#include "p2p/host_p2p_transport.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <sstream>
#include <string>
#include <vector>

#include "p2p/handle_blob.h"
#include "p2p/symmetric_window_transport.h"
#include "transport/device/comm_device.cuh"

namespace te4j {
namespace {

struct Token {
  uint32_t w[4];
  bool operator==(const Token& o) const { return std::memcmp(w, o.w, sizeof(w)) == 0; }
};

std::string tokenHex(const Token& t) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%08x%08x%08x%08x", t.w[0], t.w[1], t.w[2], t.w[3]);
  return buf;
}

// What readlink() shows for an fd of our memfd: the kernel prefixes "/memfd:" and, since a memfd
// has no directory entry, suffixes " (deleted)".
std::string expectedLink(const Token& t) { return "/memfd:te4j-" + tokenHex(t) + " (deleted)"; }

std::string errnoText(int err) {
  char buf[128];
  // GNU strerror_r: returns the message pointer (thread-safe, unlike strerror).
  const char* text = strerror_r(err, buf, sizeof(buf));
  return std::string(text) + " (errno " + std::to_string(err) + ")";
}

int randomToken(Token* t, std::string* why) {
  unsigned char* out = reinterpret_cast<unsigned char*>(t->w);
  size_t got = 0;
  while (got < sizeof(t->w)) {
    const ssize_t n = ::getrandom(out + got, sizeof(t->w) - got, 0);
    if (n > 0) {
      got += static_cast<size_t>(n);
    } else if (n < 0 && errno != EINTR) {
      *why = "getrandom failed: " + errnoText(errno);
      return kSystemError;
    }
  }
  return kOk;
}

// readlink() as a string; returns 0 or an errno.
int readLink(const char* path, std::string* out) {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink(path, buf, sizeof(buf));
  if (n < 0) return errno;
  out->assign(buf, static_cast<size_t>(n));
  return 0;
}

std::size_t pageBytes() {
  static const std::size_t page = [] {
    const long p = ::sysconf(_SC_PAGESIZE);
    return p > 0 ? static_cast<std::size_t>(p) : static_cast<std::size_t>(4096);
  }();
  return page;
}

// Every mapping of a host segment in this process (own segments and peers' mappings), so that an
// executor can find the control page of the segment a word lies in. Changes are rare (allocate,
// free, connect, close); lookups hit a per-thread cache that the generation invalidates.
struct ControlRange {
  uintptr_t begin;
  uintptr_t end;  // the user's bytes only
  HostSegmentControl* control;
};

struct ControlRegistry {
  std::mutex mu;
  std::vector<ControlRange> ranges;
  std::atomic<uint64_t> generation{1};
};

ControlRegistry& registry() {
  static ControlRegistry* r =
      new ControlRegistry();  // never destroyed: executors may outlive statics
  return *r;
}

HostSegmentControl* controlOf(void* base, std::size_t bytes) {
  const std::size_t page = pageBytes();
  const std::size_t rounded = (bytes + page - 1) / page * page;
  return reinterpret_cast<HostSegmentControl*>(static_cast<unsigned char*>(base) + rounded);
}

// Returns false when memory for the bookkeeping is exhausted.
bool registerMapping(void* base, std::size_t bytes) {
  ControlRegistry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  try {
    r.ranges.push_back({reinterpret_cast<uintptr_t>(base),
                        reinterpret_cast<uintptr_t>(base) + bytes, controlOf(base, bytes)});
  } catch (const std::bad_alloc&) {
    return false;
  }
  r.generation.fetch_add(1, std::memory_order_release);
  return true;
}

void unregisterMapping(void* base) {
  ControlRegistry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  const uintptr_t b = reinterpret_cast<uintptr_t>(base);
  for (size_t i = 0; i < r.ranges.size(); ++i) {
    if (r.ranges[i].begin == b) {
      r.ranges.erase(r.ranges.begin() + static_cast<std::ptrdiff_t>(i));
      break;
    }
  }
  r.generation.fetch_add(1, std::memory_order_release);
}

// A buffer made by allocateBuffer. The fd stays open: peers open the segment through it.
struct Segment {
  void* base = nullptr;
  size_t bytes = 0;
  int fd = -1;
  Token token{};
};

// One peer of a window. `mapped` is true when this window owns the mapping (munmap on close).
struct PeerMap {
  void* base = nullptr;
  bool mapped = false;
  int32_t pid = 0;
  int32_t fd = -1;
  Token token{};
};

// The device API's tables are in normal memory on this platform: the skeleton's host copies.
struct HostWindow final : SymmetricWindow {
  std::vector<PeerMap> peers;
};

HostWindow* hostWindow(SymmetricWindow* w) { return static_cast<HostWindow*>(w); }

// The owner's pid, fd and token, as a blob carries them.
PeerMap peerOf(const int32_t* b) {
  PeerMap p;
  p.pid = b[blob::kPidAt];
  p.fd = b[kHostFdAt];
  for (int i = 0; i < 4; ++i) p.token.w[i] = static_cast<uint32_t>(b[kHostTokenAt + i]);
  return p;
}

class HostP2pTransport final : public SymmetricWindowTransport {
 public:
  explicit HostP2pTransport(int num_ranks) : SymmetricWindowTransport(num_ranks) {}

  ~HostP2pTransport() override {
    std::lock_guard<std::mutex> lock(mu_);
    releaseAll();
    for (Segment& s : segments_) {
      unregisterMapping(s.base);
      ::munmap(s.base, hostSegmentMapBytes(s.bytes));
      ::close(s.fd);
    }
  }

  int platform() const override { return kPlatformHost; }
  int device() const override { return 0; }
  int handleInts() const override { return kHostHandleInts; }

  int allocateBuffer(std::size_t bytes, void** out) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (int st = checkInit()) return st;
    if (out == nullptr) return fail(kInvalidArgument, "allocateBuffer: out is null");
    *out = nullptr;
    if (bytes == 0 || bytes > static_cast<std::size_t>(INT64_MAX)) {
      return fail(kInvalidArgument, "allocateBuffer: bytes " + std::to_string(bytes) +
                                        " must be > 0 and fit in off_t");
    }
    Segment s;
    s.bytes = bytes;
    std::string why;
    if (int st = randomToken(&s.token, &why)) return fail(st, "allocateBuffer: " + why);
    const std::string name = "te4j-" + tokenHex(s.token);
    s.fd = ::memfd_create(name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (s.fd < 0) {
      return fail(kSystemError, "allocateBuffer: memfd_create failed: " + errnoText(errno));
    }
    // A fresh memfd grown by ftruncate reads as zeros: the buffer is zero-filled by construction
    // (the control page too: no waiters).
    const std::size_t map_bytes = hostSegmentMapBytes(bytes);
    if (map_bytes < bytes || map_bytes > static_cast<std::size_t>(INT64_MAX)) {
      ::close(s.fd);
      return fail(kInvalidArgument, "allocateBuffer: bytes " + std::to_string(bytes) +
                                        " leave no room for the segment's control page");
    }
    if (::ftruncate(s.fd, static_cast<off_t>(map_bytes)) != 0) {
      const int err = errno;
      ::close(s.fd);
      return fail(
          err == ENOMEM || err == ENOSPC || err == EFBIG ? kOutOfMemory : kSystemError,
          "allocateBuffer: ftruncate(" + std::to_string(bytes) + ") failed: " + errnoText(err));
    }
    if (::fcntl(s.fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
      const int err = errno;
      ::close(s.fd);
      return fail(kSystemError, "allocateBuffer: sealing the memfd failed: " + errnoText(err));
    }
    s.base = ::mmap(nullptr, map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, s.fd, 0);
    if (s.base == MAP_FAILED) {
      const int err = errno;
      ::close(s.fd);
      return fail(err == ENOMEM ? kOutOfMemory : kSystemError,
                  "allocateBuffer: mmap(" + std::to_string(bytes) + ") failed: " + errnoText(err));
    }
    bool kept = false;
    try {
      segments_.push_back(s);
      kept = true;
    } catch (const std::bad_alloc&) {
    }
    if (!kept || !registerMapping(s.base, s.bytes)) {
      if (kept) segments_.pop_back();
      ::munmap(s.base, map_bytes);
      ::close(s.fd);
      return fail(kOutOfMemory, "allocateBuffer: out of memory for bookkeeping");
    }
    *out = s.base;
    return ok();
  }

  // Refused while an open window uses the buffer (as its local buffer, or as a same-process peer
  // mapped directly): kernels and executors read those tables. Peers of other processes keep
  // their own mappings, which stay valid after we unmap: the kernel frees the memfd only when
  // the last mapping goes.
  int freeBuffer(void* ptr) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (int st = checkInit()) return st;
    for (size_t i = 0; i < segments_.size(); ++i) {
      Segment& s = segments_[i];
      if (s.base != ptr) continue;
      if (int st = refuseIfInUse(s.base)) return st;
      unregisterMapping(s.base);
      ::munmap(s.base, hostSegmentMapBytes(s.bytes));
      ::close(s.fd);
      segments_.erase(segments_.begin() + static_cast<std::ptrdiff_t>(i));
      return ok();
    }
    return fail(kInvalidArgument,
                "freeBuffer: pointer is not the start of a buffer of this "
                "transport");
  }

  int registerBuffer(void*, std::size_t) override {
    return fail(kInvalidArgument,
                "registerBuffer is CUDA only: on the host platform allocate "
                "with allocateBuffer");
  }

 protected:
  const char* handleKind() const override { return "host"; }

  bool findBuffer(const void* p, void** start, std::size_t* bytes) const override {
    const Segment* s = findContaining(p);
    if (s == nullptr) return false;
    *start = s->base;
    *bytes = s->bytes;
    return true;
  }

  int writeHandle(void* start, int32_t* out, std::string*) override {
    const Segment* s = findContaining(start);
    out[kHostFdAt] = s->fd;
    for (int i = 0; i < 4; ++i) out[kHostTokenAt + i] = static_cast<int32_t>(s->token.w[i]);
    return kOk;
  }

  int checkPlatformFields(int rank, const int32_t* b, uint64_t, std::string* why) override {
    if (b[kHostFdAt] < 0) {
      *why = "handle of rank " + std::to_string(rank) + ": field fd is " +
             std::to_string(b[kHostFdAt]) + ", expected >= 0";
      return kBadHandle;
    }
    return kOk;
  }

  std::unique_ptr<SymmetricWindow> newWindow() override {
    return std::unique_ptr<SymmetricWindow>(new (std::nothrow) HostWindow());
  }

  void sizePeerState(SymmetricWindow* w, std::size_t n) override {
    hostWindow(w)->peers.assign(n, PeerMap());
  }

  void adoptLocal(SymmetricWindow* w) override {
    hostWindow(w)->peers[static_cast<size_t>(w->rank)].base = w->local_base;
  }

  int mapPeer(SymmetricWindow* w, int r, const int32_t* b, void** peer, std::string* why) override {
    PeerMap& p = hostWindow(w)->peers[static_cast<size_t>(r)];
    p = peerOf(b);
    if (int st = mapPeerSegment(r, w->bytes, &p, why)) return st;
    *peer = p.base;
    // Host memory: every mapped rank is memory of the one device the host platform has.
    w->routes[static_cast<size_t>(r)] = mooncake::device::kMcRankRouteSameDevice;
    return kOk;
  }

  int releaseWindow(SymmetricWindow* w, std::string*) override {
    HostWindow* hw = hostWindow(w);
    for (PeerMap& p : hw->peers) {
      if (p.mapped) unmapProcMapping(p.base, w->bytes);
      p.mapped = false;
      p.base = nullptr;
    }
    for (size_t r = 0; r < w->available.size(); ++r) {
      w->available[r] = 0;
      w->peer_ptrs[r] = nullptr;
    }
    std::vector<PeerMap>().swap(hw->peers);
    return kOk;
  }

  // A peer's window of this process's own segments is the local mapping itself.
  bool windowUses(const SymmetricWindow& w, const void* start) const override {
    for (const PeerMap& p : static_cast<const HostWindow&>(w).peers) {
      if (p.base == start && !p.mapped) return true;
    }
    return false;
  }

  // Touches the first and last word of each peer mapping with an atomic read-modify-write of 0
  // (needs write permission, changes nothing), then checks the owner still holds the segment:
  // writes into the segment of an exited peer would be lost without an error.
  int probeWindow(SymmetricWindow* w, std::string* why) override {
    const HostWindow* hw = hostWindow(w);
    for (size_t r = 0; r < hw->peers.size(); ++r) {
      if (w->available[r] == 0) continue;
      unsigned char* base = static_cast<unsigned char*>(w->peer_ptrs[r]);
      if (w->bytes >= sizeof(uint32_t)) {
        // The base is page aligned, the last word is 4-byte aligned by rounding down.
        __atomic_fetch_add(reinterpret_cast<uint32_t*>(base), 0u, __ATOMIC_SEQ_CST);
        const size_t last = (w->bytes - sizeof(uint32_t)) & ~static_cast<size_t>(3);
        __atomic_fetch_add(reinterpret_cast<uint32_t*>(base + last), 0u, __ATOMIC_SEQ_CST);
      } else {
        __atomic_fetch_add(base, static_cast<unsigned char>(0), __ATOMIC_SEQ_CST);
      }
      const PeerMap& p = hw->peers[r];
      if (!p.mapped) continue;  // own buffer, or one of this transport's own segments
      if (int st = checkOwnerHolds(static_cast<int>(r), p, why)) {
        return st == kBadHandle ? kPeerLost : st;
      }
    }
    return kOk;
  }

  int checkSegmentFields(const int32_t* b, uint64_t size, std::string* why) override {
    if (size == 0 || size > static_cast<uint64_t>(SIZE_MAX / 2) || b[kHostFdAt] < 0) {
      *why = "handle has size " + std::to_string(size) + " and fd " + std::to_string(b[kHostFdAt]);
      return kBadHandle;
    }
    return kOk;
  }

  // Always a mapping of its own, even of this process's segments: freeing the buffer then
  // cannot leave the segment's users dangling (the kernel keeps the memory while it is mapped).
  int openSegment(const int32_t* b, uint64_t size, SegmentMapping* m, std::string* why) override {
    PeerMap p = peerOf(b);
    if (int st = mapThroughProc(0, static_cast<size_t>(size), &p, why)) return st;
    m->base = p.base;
    m->bytes = static_cast<size_t>(size);
    m->opened = p.base;
    return kOk;
  }

  int closeSegment(const SegmentMapping& m, std::string*) override {
    unmapProcMapping(m.opened, m.bytes);
    return kOk;
  }

 private:
  const Segment* findContaining(const void* p) const {
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    for (const Segment& s : segments_) {
      const uintptr_t b = reinterpret_cast<uintptr_t>(s.base);
      if (a >= b && a - b < s.bytes) return &s;
    }
    return nullptr;
  }

  // The status and message for a failed access to /proc/<pid>/fd/<fd>.
  int procFailure(int rank, const PeerMap& p, const char* path, const char* what, int err,
                  std::string* why) {
    std::ostringstream msg;
    msg << "rank " << rank << ": " << what << " " << path << " failed: " << errnoText(err);
    int status = kSystemError;
    // Checked first: /proc of an exited (zombie) process answers EACCES to non-root callers.
    if (blob::ownerExited(p.pid)) {
      msg << ": the owner process " << p.pid << " has exited";
      status = kPeerLost;
    } else if (err == ENOENT || err == ESRCH) {
      msg << ": process " << p.pid << " has no fd " << p.fd
          << " (the peer freed its buffer, or the handle is stale)";
      status = kBadHandle;
    } else if (err == EACCES || err == EPERM) {
      msg << ": mapping a peer's segment needs ptrace read access to it: run all ranks as the "
             "same user, keep them dumpable (no setuid, no PR_SET_DUMPABLE 0), in one pid "
             "namespace, and check security modules (SELinux/AppArmor)";
    }
    *why = msg.str();
    return status;
  }

  // kOk when pid still holds fd as te4j segment `token`; otherwise the failure of the check.
  int checkOwnerHolds(int rank, const PeerMap& p, std::string* why) {
    char path[64];
    std::snprintf(path, sizeof(path), "/proc/%d/fd/%d", p.pid, p.fd);
    std::string link;
    if (int err = readLink(path, &link)) return procFailure(rank, p, path, "readlink", err, why);
    // An exporter writes its process id; a thread id reaches the same fd table through /proc.
    const int32_t group = blob::threadGroupOf(p.pid);
    if (group != p.pid) {
      *why = "rank " + std::to_string(rank) + ": pid " + std::to_string(p.pid) +
             (group > 0 ? " is a thread of process " + std::to_string(group) : " is no process") +
             ", not the process that exported the segment (a forged or damaged handle)";
      return kBadHandle;
    }
    if (link != expectedLink(p.token)) {
      *why = "rank " + std::to_string(rank) + ": fd " + std::to_string(p.fd) + " of process " +
             std::to_string(p.pid) + " is not te4j segment " + tokenHex(p.token) +
             " (token mismatch: a stale or forged handle, or the pid was reused)";
      return kBadHandle;
    }
    return kOk;
  }

  int mapPeerSegment(int rank, size_t bytes, PeerMap* p, std::string* why) {
    const std::string r = "rank " + std::to_string(rank) + ": ";
    if (p->pid == static_cast<int32_t>(::getpid())) {
      // One of this transport's own segments: use the local mapping directly. A segment of
      // another transport in this process is mapped again below, like any peer's, so that
      // transport freeing it cannot leave this window dangling.
      for (const Segment& s : segments_) {
        if (s.token == p->token && s.fd == p->fd) {
          if (s.bytes != bytes) {
            *why = r + "own segment has " + std::to_string(s.bytes) + " bytes, expected " +
                   std::to_string(bytes);
            return kBadHandle;
          }
          p->base = s.base;
          p->mapped = false;
          return kOk;
        }
      }
    }
    return mapThroughProc(rank, bytes, p, why);
  }

  // Maps the peer's segment anew through /proc/<pid>/fd/<fd>, after checking that the fd is it.
  int mapThroughProc(int rank, size_t bytes, PeerMap* p, std::string* why) {
    const std::string r = "rank " + std::to_string(rank) + ": ";
    // Check before opening: opening an arbitrary file of the peer (a device, a FIFO) could have
    // side effects.
    if (int st = checkOwnerHolds(rank, *p, why)) return st;
    char path[64];
    std::snprintf(path, sizeof(path), "/proc/%d/fd/%d", p->pid, p->fd);
    const int fd = ::open(path, O_RDWR | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) return procFailure(rank, *p, path, "open", errno, why);
    // Check again what we actually opened: the owner may have reused the fd number in between.
    char self_path[64];
    std::snprintf(self_path, sizeof(self_path), "/proc/self/fd/%d", fd);
    std::string link;
    struct stat st;
    int status = kOk;
    if (readLink(self_path, &link) != 0 || link != expectedLink(p->token)) {
      *why = r + "fd " + std::to_string(p->fd) + " of process " + std::to_string(p->pid) +
             " changed between check and open; it is no longer te4j segment " + tokenHex(p->token);
      status = kBadHandle;
    } else if (::fstat(fd, &st) != 0) {
      *why = r + "fstat of the peer's segment failed: " + errnoText(errno);
      status = kSystemError;
    } else if (!S_ISREG(st.st_mode) ||
               static_cast<uint64_t>(st.st_size) != hostSegmentMapBytes(bytes)) {
      *why = r + "the peer's segment has " + std::to_string(st.st_size) +
             " bytes, the handle "
             "says " +
             std::to_string(bytes) + " (" + std::to_string(hostSegmentMapBytes(bytes)) +
             " with the control page)";
      status = kBadHandle;
    } else {
      const int seals = ::fcntl(fd, F_GET_SEALS);
      if (seals < 0 || (seals & F_SEAL_SHRINK) == 0) {
        *why = r + "the peer's segment is not sealed against shrinking; refusing to map it";
        status = kBadHandle;
      }
    }
    if (status == kOk) {
      const std::size_t map_bytes = hostSegmentMapBytes(bytes);
      void* base = ::mmap(nullptr, map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (base == MAP_FAILED) {
        const int err = errno;
        *why = r + "mmap of the peer's segment (" + std::to_string(bytes) +
               " bytes) failed: " + errnoText(err);
        status = err == ENOMEM ? kOutOfMemory : kSystemError;
      } else if (!registerMapping(base, bytes)) {
        ::munmap(base, map_bytes);
        *why = r + "out of memory for bookkeeping";
        status = kOutOfMemory;
      } else {
        p->base = base;
        p->mapped = true;
      }
    }
    ::close(fd);  // the mapping keeps the segment alive
    return status;
  }

  // Undoes one mapThroughProc: the registry entry first (an executor must not find a control
  // page that is about to go), then the whole mapping, control page included.
  static void unmapProcMapping(void* base, size_t bytes) {
    unregisterMapping(base);
    ::munmap(base, hostSegmentMapBytes(bytes));
  }

  std::vector<Segment> segments_;  // the buffers of allocateBuffer
};

}  // namespace

std::size_t hostSegmentMapBytes(std::size_t bytes) {
  const std::size_t page = pageBytes();
  return (bytes + page - 1) / page * page + page;
}

HostSegmentControl* hostSegmentControl(const void* addr, HostControlCache* cache) {
  ControlRegistry& r = registry();
  const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  const uint64_t gen = r.generation.load(std::memory_order_acquire);
  if (cache->generation == gen && a >= cache->begin && a < cache->end) return cache->control;
  std::lock_guard<std::mutex> lock(r.mu);
  for (const ControlRange& c : r.ranges) {
    if (a >= c.begin && a < c.end) {
      cache->generation = r.generation.load(std::memory_order_relaxed);
      cache->begin = c.begin;
      cache->end = c.end;
      cache->control = c.control;
      return c.control;
    }
  }
  return nullptr;
}

P2pTransport* createHostP2pTransport(int num_ranks) {
  return new (std::nothrow) HostP2pTransport(num_ranks);
}

}  // namespace te4j
