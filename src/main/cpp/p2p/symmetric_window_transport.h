// symmetric_window_transport.h — the platform-neutral part of every te4j::P2pTransport: the
// symmetric windows (one buffer per rank, the same size everywhere), their peer tables, the
// segments mapped one at a time, and the order and checks of every call on them. A platform
// (host memfd segments, CUDA IPC) supplies its buffers and the hooks below; it never re-checks
// what this class already checked. Private to libte4j; plain C++ so nvcc and g++ both include it.
//
// Why one skeleton: both platforms must refuse the same bad arguments with the same messages,
// check every handle before mapping any, and tear down in the same order (tables withdrawn before
// the mappings they name go). Written twice, the copies drift.
//
// Threading: every public method takes mu_; the hooks run with it held.
#pragma once

#include <stdint.h>

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "te4j/api.h"

namespace te4j {

/// What every platform's window holds; a platform derives its own window from it.
struct SymmetricWindow {
  virtual ~SymmetricWindow() = default;
  bool open = true;
  void* local_base = nullptr;
  std::size_t bytes = 0;
  int rank = 0;
  std::vector<int> available;    // host copy of the device API's "available" table
  std::vector<void*> peer_ptrs;  // host copy of its peer base addresses
  // McRankRoute of each rank (transport/device/comm_device.cuh): decided here, once, when the
  // window is connected, and copied into every CommCtx of the window (makeCommCtx).
  std::vector<int> routes;
};

/// One mapSegment mapping: `base` as the caller got it, `bytes` its size, `opened` what the
/// platform must release (nullptr when nothing: e.g. a raw pointer of this process).
struct SegmentMapping {
  void* base = nullptr;
  std::size_t bytes = 0;
  void* opened = nullptr;
};

class SymmetricWindowTransport : public P2pTransport {
 public:
  int exportIpcHandle(void* ptr, int32_t* blob, int capacity) override;
  int importPeerHandles(void* local_ptr, int rank, int num_ranks, const int32_t* remote_handles,
                        uint64_t active_ranks_mask) override;
  int closeWindow(int window) override;
  void* availableTablePtr(int window) override;
  void* peerPtrsTablePtr(int window) override;
  bool allPeersAccessible(int window) override;
  int verifyPeerAccess(int window) override;
  int makeCommCtx(int window, mooncake::device::CommCtx* ctx) override;
  int mapSegment(const int32_t* blob, int ints, void** base, uint64_t* bytes) override;
  int unmapSegment(void* base) override;

 protected:
  /// Checks num_ranks (1..blob::kMaxRanks); a bad value makes the object unusable.
  explicit SymmetricWindowTransport(int num_ranks);

  // ---- Hooks: the platform's part. `why` receives a message without the method's name. ----

  /// Runs before any call that touches platform resources, after the init check; leavePlatform
  /// runs when that call returns (CUDA: make the transport's device current, then restore the
  /// caller's).
  virtual int enterPlatform(std::string* why) {
    (void)why;
    return kOk;
  }
  virtual void leavePlatform() {}
  /// "host" or "CUDA", for messages about a handle of the wrong kind.
  virtual const char* handleKind() const = 0;
  /// The start and size of this transport's buffer that holds p; false when none does.
  virtual bool findBuffer(const void* p, void** start, std::size_t* bytes) const = 0;
  /// Writes the handle of the buffer starting at `start` (whole blob, handleInts() ints).
  virtual int writeHandle(void* start, int32_t* blob, std::string* why) = 0;
  /// Checks the platform words of a peer's blob (its header is already checked) for a buffer of
  /// `bytes`; `rank` names the peer in the message.
  virtual int checkPlatformFields(int rank, const int32_t* blob, uint64_t bytes,
                                  std::string* why) = 0;
  /// A new, empty window of the platform's type; nullptr when memory is exhausted.
  virtual std::unique_ptr<SymmetricWindow> newWindow() = 0;
  /// Sizes the platform's per-rank state of w for n ranks (may throw std::bad_alloc).
  virtual void sizePeerState(SymmetricWindow* w, std::size_t n) {
    (void)w;
    (void)n;
  }
  /// Notes the own rank's entry (its tables are already set to the local buffer).
  virtual void adoptLocal(SymmetricWindow* w) { (void)w; }
  /// Maps rank r's buffer (its blob is checked) into w; *peer receives its address here, and
  /// w->routes[r] the route plain stores take to it (kMcRankRouteSameDevice or PeerDevice).
  virtual int mapPeer(SymmetricWindow* w, int r, const int32_t* blob, void** peer,
                      std::string* why) = 0;
  /// After every peer is mapped: makes the tables readable where kernels or executors read them.
  virtual int publishTables(SymmetricWindow* w, std::string* why) {
    (void)w;
    (void)why;
    return kOk;
  }
  /// Withdraws the tables and undoes every mapPeer; continues past failures, reports the first.
  /// Also runs for a window whose import failed half way.
  virtual int releaseWindow(SymmetricWindow* w, std::string* why) = 0;
  /// The tables as the device API reads them (platform memory).
  virtual void* availableTable(SymmetricWindow* w) { return w->available.data(); }
  virtual void* peerPtrsTable(SymmetricWindow* w) { return w->peer_ptrs.data(); }
  /// A real access to every available peer of w.
  virtual int probeWindow(SymmetricWindow* w, std::string* why) = 0;
  /// Checks the platform words of a segment's blob (header checked; size from the blob).
  virtual int checkSegmentFields(const int32_t* blob, uint64_t bytes, std::string* why) = 0;
  /// Maps one segment: fills m (base, bytes, opened).
  virtual int openSegment(const int32_t* blob, uint64_t bytes, SegmentMapping* m,
                          std::string* why) = 0;
  /// Undoes openSegment.
  virtual int closeSegment(const SegmentMapping& m, std::string* why) = 0;

  // ---- For the platforms. ----

  /// Whether an open window uses memory [start, start + bytes) of its own process directly (so
  /// freeing it would leave the window's tables dangling); the platform says what "uses" means.
  virtual bool windowUses(const SymmetricWindow& w, const void* start) const {
    return w.local_base == start;
  }
  /// kOk, or kIllegalState naming the open window that uses `start` (freeBuffer's check).
  int refuseIfInUse(const void* start);
  /// Releases every window and mapped segment (the platform's destructor calls it with mu_
  /// held, before it frees its buffers: the hooks need the platform alive).
  void releaseAll();
  /// init_status_ with its message, or kOk.
  int checkInit() { return init_status_ != kOk ? fail(init_status_, init_error_) : kOk; }
  /// The open window `window` (-1: the most recent open one), or nullptr.
  SymmetricWindow* findWindow(int window);
  /// findWindow, or nullptr after recording "<op>: window N is not open" (kInvalidArgument).
  SymmetricWindow* openWindow(const char* op, int window);

  std::mutex mu_;
  const int num_ranks_;
  std::string init_error_;

 private:
  // checkInit + enterPlatform, and leavePlatform on scope exit.
  class PlatformScope {
   public:
    explicit PlatformScope(SymmetricWindowTransport* t);
    ~PlatformScope();
    int status() const { return status_; }
    PlatformScope(const PlatformScope&) = delete;
    PlatformScope& operator=(const PlatformScope&) = delete;

   private:
    SymmetricWindowTransport* t_;
    int status_;
    bool entered_ = false;
  };

  std::vector<std::unique_ptr<SymmetricWindow>> windows_;  // index = id; closed ones stay empty
  std::vector<SegmentMapping> segment_maps_;               // mapSegment's mappings
};

}  // namespace te4j
