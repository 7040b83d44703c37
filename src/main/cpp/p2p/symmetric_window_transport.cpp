// symmetric_window_transport.cpp — the order and checks of the window and segment calls shared
// by every platform (see the header); the platform parts are its hooks.
#include "p2p/symmetric_window_transport.h"

#include <cstring>
#include <new>
#include <utility>

#include "p2p/handle_blob.h"
#include "transport/device/comm_device.cuh"

namespace te4j {

SymmetricWindowTransport::SymmetricWindowTransport(int num_ranks) : num_ranks_(num_ranks) {
  if (num_ranks < 1 || num_ranks > blob::kMaxRanks) {
    init_status_ = kInvalidArgument;
    init_error_ = "num_ranks " + std::to_string(num_ranks) + " is outside 1.." +
                  std::to_string(blob::kMaxRanks);
    last_error_ = init_error_;
  }
}

SymmetricWindowTransport::PlatformScope::PlatformScope(SymmetricWindowTransport* t) : t_(t) {
  status_ = t->checkInit();
  if (status_ != kOk) return;
  std::string why;
  entered_ = true;  // leavePlatform undoes a half-done enter too (the caller's device)
  status_ = t->enterPlatform(&why);
  if (status_ != kOk) status_ = t->fail(status_, why);
}

SymmetricWindowTransport::PlatformScope::~PlatformScope() {
  if (entered_) t_->leavePlatform();
}

SymmetricWindow* SymmetricWindowTransport::findWindow(int window) {
  if (window == -1) {
    for (std::size_t i = windows_.size(); i > 0; --i) {
      if (windows_[i - 1]->open) return windows_[i - 1].get();
    }
    return nullptr;
  }
  if (window < 0 || static_cast<std::size_t>(window) >= windows_.size()) return nullptr;
  SymmetricWindow* w = windows_[static_cast<std::size_t>(window)].get();
  return w->open ? w : nullptr;
}

SymmetricWindow* SymmetricWindowTransport::openWindow(const char* op, int window) {
  SymmetricWindow* w = findWindow(window);
  if (w == nullptr)
    fail(kInvalidArgument, std::string(op) + ": window " + std::to_string(window) + " is not open");
  return w;
}

int SymmetricWindowTransport::refuseIfInUse(const void* start) {
  for (std::size_t i = 0; i < windows_.size(); ++i) {
    if (windows_[i]->open && windowUses(*windows_[i], start)) {
      return fail(kIllegalState, "freeBuffer: the buffer is used by open window " +
                                     std::to_string(i) + "; close the window first");
    }
  }
  return kOk;
}

void SymmetricWindowTransport::releaseAll() {
  std::string ignored;
  for (auto& w : windows_) {
    if (w->open) releaseWindow(w.get(), &ignored);
    w->open = false;
  }
  for (const SegmentMapping& m : segment_maps_) closeSegment(m, &ignored);
  segment_maps_.clear();
}

int SymmetricWindowTransport::exportIpcHandle(void* ptr, int32_t* out, int capacity) {
  std::lock_guard<std::mutex> lock(mu_);
  PlatformScope scope(this);
  if (scope.status() != kOk) return scope.status();
  const int ints = handleInts();
  if (out == nullptr || capacity < ints) {
    return fail(kInvalidArgument, "exportIpcHandle: blob is null or capacity " +
                                      std::to_string(capacity) + " < " + std::to_string(ints) +
                                      " ints");
  }
  void* start = nullptr;
  std::size_t bytes = 0;
  if (!findBuffer(ptr, &start, &bytes)) {
    return fail(kInvalidArgument,
                "exportIpcHandle: pointer is not inside a buffer of this "
                "transport");
  }
  std::string why;
  if (int st = writeHandle(start, out, &why)) return fail(st, "exportIpcHandle: " + why);
  blob::writeHeader(out, platform(), bytes);
  ok();
  return ints;
}

int SymmetricWindowTransport::importPeerHandles(void* local_ptr, int rank, int num_ranks,
                                                const int32_t* remote_handles,
                                                uint64_t active_ranks_mask) {
  std::lock_guard<std::mutex> lock(mu_);
  PlatformScope scope(this);
  if (scope.status() != kOk) return scope.status();
  std::string why;
  if (int st = blob::checkImportArgs(rank, num_ranks, num_ranks_, remote_handles, active_ranks_mask,
                                     &why)) {
    return fail(st, "importPeerHandles: " + why);
  }
  void* local = nullptr;
  std::size_t bytes = 0;
  const bool found = findBuffer(local_ptr, &local, &bytes);
  if (!found || local != local_ptr) {
    return fail(kInvalidArgument, !found ? "importPeerHandles: local_ptr is not a buffer of this "
                                           "transport"
                                         : "importPeerHandles: local_ptr must be the start of its "
                                           "buffer, not an address inside it");
  }
  // Check every blob before mapping anything: a bad handle costs no mapping to undo.
  const std::size_t ints = static_cast<std::size_t>(handleInts());
  for (int r = 0; r < num_ranks; ++r) {
    if (r == rank || !blob::isActive(active_ranks_mask, r)) continue;
    const int32_t* b = remote_handles + static_cast<std::size_t>(r) * ints;
    if (int st = blob::checkHeader(b, platform(), r, bytes, &why)) {
      return fail(st, "importPeerHandles: " + why);
    }
    if (int st = checkPlatformFields(r, b, bytes, &why)) {
      return fail(st, "importPeerHandles: " + why);
    }
  }
  std::unique_ptr<SymmetricWindow> w = newWindow();
  if (w == nullptr) return fail(kOutOfMemory, "importPeerHandles: out of memory");
  const std::size_t n = static_cast<std::size_t>(num_ranks);
  try {
    w->available.assign(n, 0);
    w->peer_ptrs.assign(n, nullptr);
    w->routes.assign(n, mooncake::device::kMcRankRouteNone);
    sizePeerState(w.get(), n);
    windows_.reserve(windows_.size() + 1);
  } catch (const std::bad_alloc&) {
    return fail(kOutOfMemory, "importPeerHandles: out of memory for the peer tables");
  }
  w->local_base = local;
  w->bytes = bytes;
  w->rank = rank;
  w->available[static_cast<std::size_t>(rank)] = 1;
  w->peer_ptrs[static_cast<std::size_t>(rank)] = local;
  w->routes[static_cast<std::size_t>(rank)] = mooncake::device::kMcRankRouteSameDevice;
  adoptLocal(w.get());
  int st = kOk;
  for (int r = 0; r < num_ranks && st == kOk; ++r) {
    if (r == rank || !blob::isActive(active_ranks_mask, r)) continue;
    void* peer = nullptr;
    st = mapPeer(w.get(), r, remote_handles + static_cast<std::size_t>(r) * ints, &peer, &why);
    if (st == kOk) {
      w->available[static_cast<std::size_t>(r)] = 1;
      w->peer_ptrs[static_cast<std::size_t>(r)] = peer;
    }
  }
  if (st == kOk) st = publishTables(w.get(), &why);
  if (st != kOk) {
    std::string ignored;
    releaseWindow(w.get(), &ignored);
    return fail(st, "importPeerHandles: " + why);
  }
  windows_.push_back(std::move(w));
  ok();
  return static_cast<int>(windows_.size() - 1);
}

int SymmetricWindowTransport::closeWindow(int window) {
  std::lock_guard<std::mutex> lock(mu_);
  PlatformScope scope(this);
  if (scope.status() != kOk) return scope.status();
  SymmetricWindow* w = openWindow("closeWindow", window);
  if (w == nullptr) return kInvalidArgument;
  std::string why;
  const int st = releaseWindow(w, &why);
  w->open = false;
  std::vector<int>().swap(w->available);
  std::vector<void*>().swap(w->peer_ptrs);
  std::vector<int>().swap(w->routes);
  return st == kOk ? ok() : fail(st, "closeWindow: " + why);
}

void* SymmetricWindowTransport::availableTablePtr(int window) {
  std::lock_guard<std::mutex> lock(mu_);
  SymmetricWindow* w = openWindow("availableTablePtr", window);
  return w == nullptr ? nullptr : availableTable(w);
}

void* SymmetricWindowTransport::peerPtrsTablePtr(int window) {
  std::lock_guard<std::mutex> lock(mu_);
  SymmetricWindow* w = openWindow("peerPtrsTablePtr", window);
  return w == nullptr ? nullptr : peerPtrsTable(w);
}

bool SymmetricWindowTransport::allPeersAccessible(int window) {
  std::lock_guard<std::mutex> lock(mu_);
  SymmetricWindow* w = findWindow(window);
  if (w == nullptr) return false;
  for (int a : w->available) {
    if (a == 0) return false;
  }
  return true;
}

int SymmetricWindowTransport::verifyPeerAccess(int window) {
  std::lock_guard<std::mutex> lock(mu_);
  PlatformScope scope(this);
  if (scope.status() != kOk) return scope.status();
  SymmetricWindow* w = openWindow("verifyPeerAccess", window);
  if (w == nullptr) return kInvalidArgument;
  std::string why;
  if (int st = probeWindow(w, &why)) return fail(st, "verifyPeerAccess: " + why);
  return ok();
}

int SymmetricWindowTransport::makeCommCtx(int window, mooncake::device::CommCtx* ctx) {
  std::lock_guard<std::mutex> lock(mu_);
  if (int st = checkInit()) return st;
  if (ctx == nullptr) return fail(kInvalidArgument, "makeCommCtx: ctx is null");
  SymmetricWindow* w = openWindow("makeCommCtx", window);
  if (w == nullptr) return kInvalidArgument;
  mooncake::device::P2PContext p2p;
  p2p.available = static_cast<int*>(availableTable(w));
  p2p.peer_ptrs = static_cast<void**>(peerPtrsTable(w));
  p2p.local_base = w->local_base;
  mooncake::device::IbgdaContext ibgda;
  std::memset(&ibgda, 0, sizeof(ibgda));
  *ctx = mooncake::device::make_comm_ctx(p2p, ibgda, w->rank);
  // Each rank's route, as the window decided it; ranks past the window's reach nothing.
  for (int r = 0; r < mooncake::device::kMcMaxRanks; ++r) {
    const bool known = static_cast<std::size_t>(r) < w->routes.size();
    mooncake::device::mc_set_decided_route(
        ctx, r,
        known ? w->routes[static_cast<std::size_t>(r)] : mooncake::device::kMcRankRouteNone);
  }
  return ok();
}

int SymmetricWindowTransport::mapSegment(const int32_t* b, int ints, void** base, uint64_t* bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  PlatformScope scope(this);
  if (scope.status() != kOk) return scope.status();
  if (b == nullptr || base == nullptr || bytes == nullptr) {
    return fail(kInvalidArgument, "mapSegment: null argument");
  }
  if (ints != handleInts()) {
    return fail(kBadHandle, std::string("mapSegment: a ") + handleKind() + " handle has " +
                                std::to_string(handleInts()) + " ints, got " +
                                std::to_string(ints));
  }
  const uint64_t size = blob::sizeOf(b);
  std::string why;
  if (int st = blob::checkHeader(b, platform(), 0, size, &why)) {
    return fail(st, "mapSegment: " + why);
  }
  if (int st = checkSegmentFields(b, size, &why)) return fail(st, "mapSegment: " + why);
  try {
    segment_maps_.reserve(segment_maps_.size() + 1);
  } catch (const std::bad_alloc&) {
    return fail(kOutOfMemory, "mapSegment: out of memory");
  }
  SegmentMapping m;
  if (int st = openSegment(b, size, &m, &why)) return fail(st, "mapSegment: " + why);
  segment_maps_.push_back(m);
  *base = m.base;
  *bytes = size;
  return ok();
}

int SymmetricWindowTransport::unmapSegment(void* base) {
  std::lock_guard<std::mutex> lock(mu_);
  PlatformScope scope(this);
  if (scope.status() != kOk) return scope.status();
  for (auto it = segment_maps_.begin(); it != segment_maps_.end(); ++it) {
    if (it->base != base) continue;
    const SegmentMapping m = *it;
    segment_maps_.erase(it);
    std::string why;
    if (int st = closeSegment(m, &why)) return fail(st, "unmapSegment: " + why);
    return ok();
  }
  return fail(kInvalidArgument, "unmapSegment: no segment is mapped at that address");
}

}  // namespace te4j
