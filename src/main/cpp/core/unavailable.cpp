// unavailable.cpp — the objects that stand in for a transport or stream that cannot exist here
// (no CUDA in this build, an unknown platform): status() says why and every call repeats it,
// so Java gets a reason instead of a null.
#include "core/unavailable.h"

#include <new>
#include <string>

namespace te4j {
namespace {

// Stands in for a transport that cannot exist here: every call reports why.
class UnavailableP2pTransport final : public P2pTransport {
 public:
  UnavailableP2pTransport(int platform, int status, const std::string& why)
      : platform_(platform), why_(why) {
    init_status_ = status;
    last_error_ = why;
  }
  int platform() const override { return platform_; }
  int device() const override { return -1; }
  int allocateBuffer(std::size_t, void** out) override {
    if (out != nullptr) *out = nullptr;
    return refuse();
  }
  int freeBuffer(void*) override { return refuse(); }
  int registerBuffer(void*, std::size_t) override { return refuse(); }
  int exportIpcHandle(void*, int32_t*, int) override { return refuse(); }
  int handleInts() const override { return 0; }
  int importPeerHandles(void*, int, int, const int32_t*, uint64_t) override { return refuse(); }
  int closeWindow(int) override { return refuse(); }
  void* availableTablePtr(int) override { return nullptr; }
  void* peerPtrsTablePtr(int) override { return nullptr; }
  bool allPeersAccessible(int) override { return false; }
  int verifyPeerAccess(int) override { return refuse(); }
  int makeCommCtx(int, mooncake::device::CommCtx*) override { return refuse(); }

 private:
  int refuse() { return fail(init_status_, why_); }
  const int platform_;
  const std::string why_;
};

// A stream that cannot run anything: carries the reason in status() and every lastError().
class UnusableOpStream final : public OpStream {
 public:
  UnusableOpStream(int platform, int status, const std::string& reason)
      : platform_(platform), reason_(reason) {
    init_status_ = status;
    last_error_ = reason;
  }

  int platform() const override { return platform_; }
  void* nativeHandle() const override { return nullptr; }
  int put(const mooncake::device::CommCtx*, int, void*, const void*, std::size_t, int,
          int) override {
    return refuse();
  }
  int putWithSignal(const mooncake::device::CommCtx*, int, void*, const void*, std::size_t,
                    uint32_t*, uint32_t, int, int) override {
    return refuse();
  }
  int signal(const mooncake::device::CommCtx*, int, uint32_t*, uint32_t) override {
    return refuse();
  }
  int redAdd(const mooncake::device::CommCtx*, int, uint32_t*, uint32_t) override {
    return refuse();
  }
  int waitSignal(uint32_t*, uint32_t, int64_t) override { return refuse(); }
  int synchronize(int64_t) override { return refuse(); }
  int beginCapture() override { return refuse(); }
  int endCapture(void** graph_exec) override {
    if (graph_exec != nullptr) *graph_exec = nullptr;
    return refuse();
  }
  int launchGraph(void*) override { return refuse(); }
  int destroyGraph(void*) override { return refuse(); }

 private:
  int refuse() { return fail(init_status_, reason_); }
  int platform_;
  std::string reason_;
};

}  // namespace

P2pTransport* newUnavailableP2pTransport(int platform, int status, const std::string& why) {
  return new (std::nothrow) UnavailableP2pTransport(platform, status, why);
}

OpStream* newUnavailableOpStream(int platform, int status, const std::string& why) {
  return new (std::nothrow) UnusableOpStream(platform, status, why);
}

}  // namespace te4j
