// staged_host_memory_port.cpp — host memory reached the way the CUDA port reaches GPU memory:
// not direct, every WRITE through the placement and gather arenas, so the software NIC's
// pipelined staging path runs (and is tested, under the sanitizers too) on machines without a
// GPU. Selected with TE4J_SOFTNIC_MEMORY=staged on the host platform (soft_rdma_transport.cpp).
//
// Queued copies are deferred like a GPU stream's: a placement or gather is only a record until
// its ticket is awaited (or a later synchronous access of the same queue runs), so a NIC path
// that sends or answers before awaiting its copies sends stale bytes and fails the byte-for-byte
// checks of the tests instead of passing by luck.
#include <cstring>
#include <mutex>
#include <vector>

#include "rdma/memory_port.h"

namespace te4j {
namespace rdma {

namespace {

constexpr size_t kStagedArenaBytes = 1u << 20;

// A queue of deferred copies with tickets, one per copy.
class DeferredCopies {
 public:
  struct Copy {
    void* dst;
    const void* src;
    size_t bytes;
  };
  void push(void* dst, const void* src, size_t bytes) { queued_.push_back(Copy{dst, src, bytes}); }
  uint64_t ticket() const { return done_ + queued_.size(); }
  /// Runs the copies up to ticket t (all of them for t = ~0).
  void runUpTo(uint64_t t) {
    size_t n = 0;
    while (n < queued_.size() && done_ + n < t) {
      std::memcpy(queued_[n].dst, queued_[n].src, queued_[n].bytes);
      ++n;
    }
    queued_.erase(queued_.begin(), queued_.begin() + (long)n);
    done_ += n;
    __atomic_thread_fence(__ATOMIC_RELEASE);
  }

 private:
  std::vector<Copy> queued_;
  uint64_t done_ = 0;  // copies run so far; ticket t is done once done_ >= t
};

class StagedHostMemoryPort final : public MemoryPort {
 public:
  StagedHostMemoryPort()
      : direct_(makeHostMemoryPort()), placement_(kStagedArenaBytes), gather_(kStagedArenaBytes) {}

  bool direct() const override { return false; }

  int allocControl(size_t bytes, void** host, void** dev, std::string* err) override {
    return direct_->allocControl(bytes, host, dev, err);
  }
  void freeControl(void* host) override { direct_->freeControl(host); }
  int allocTable(size_t bytes, void** dev, std::string* err) override {
    return direct_->allocTable(bytes, dev, err);
  }
  void freeTable(void* dev) override { direct_->freeTable(dev); }
  int toTable(void* dev, const void* src, size_t bytes, std::string* err) override {
    return direct_->toTable(dev, src, bytes, err);
  }
  int fromTable(void* dst, const void* dev, size_t bytes, std::string* err) override {
    return direct_->fromTable(dst, dev, bytes, err);
  }

  // The synchronous accesses follow the placements queued before them (one ordered queue).
  int read(void* dst, uint64_t src, size_t bytes, std::string* err) override {
    std::lock_guard<std::mutex> lock(mu_);
    placements_.runUpTo(~0ull);
    return direct_->read(dst, src, bytes, err);
  }
  int write(uint64_t dst, const void* src, size_t bytes, std::string* err) override {
    std::lock_guard<std::mutex> lock(mu_);
    placements_.runUpTo(~0ull);
    return direct_->write(dst, src, bytes, err);
  }
  int fetchAddMasked32(uint64_t addr, uint32_t add, uint32_t field_boundary, uint32_t* old,
                       std::string* err) override {
    std::lock_guard<std::mutex> lock(mu_);
    placements_.runUpTo(~0ull);
    return direct_->fetchAddMasked32(addr, add, field_boundary, old, err);
  }

  uint8_t* placementArena() override { return placement_.data(); }
  size_t placementArenaBytes() const override { return placement_.size(); }
  int placeAsync(uint64_t dst, size_t offset, size_t bytes, std::string* err) override {
    if (offset > placement_.size() || bytes > placement_.size() - offset) {
      *err = "placeAsync: arena range out of bounds";
      return -1;
    }
    std::lock_guard<std::mutex> lock(mu_);
    placements_.push((void*)(uintptr_t)dst, placement_.data() + offset, bytes);
    return 0;
  }
  uint64_t placementTicket(std::string*) override {
    std::lock_guard<std::mutex> lock(mu_);
    return placements_.ticket() + 1;  // tickets start at 1; +1 keeps "none queued" non-zero
  }
  int awaitPlacement(uint64_t ticket, std::string*) override {
    std::lock_guard<std::mutex> lock(mu_);
    placements_.runUpTo(ticket == 0 ? 0 : ticket - 1);
    return 0;
  }

  uint8_t* gatherArena() override { return gather_.data(); }
  size_t gatherArenaBytes() const override { return gather_.size(); }
  int gatherAsync(size_t offset, uint64_t src, size_t bytes, std::string* err) override {
    if (offset > gather_.size() || bytes > gather_.size() - offset) {
      *err = "gatherAsync: arena range out of bounds";
      return -1;
    }
    std::lock_guard<std::mutex> lock(gather_mu_);
    gathers_.push(gather_.data() + offset, (const void*)(uintptr_t)src, bytes);
    return 0;
  }
  uint64_t gatherTicket(std::string*) override {
    std::lock_guard<std::mutex> lock(gather_mu_);
    return gathers_.ticket() + 1;
  }
  int awaitGather(uint64_t ticket, std::string*) override {
    std::lock_guard<std::mutex> lock(gather_mu_);
    gathers_.runUpTo(ticket == 0 ? 0 : ticket - 1);
    return 0;
  }

 private:
  std::unique_ptr<MemoryPort> direct_;  // tables, control memory and atomics as on the host
  std::mutex mu_;                       // the placement queue and the synchronous accesses
  DeferredCopies placements_;
  std::vector<uint8_t> placement_;
  std::mutex gather_mu_;
  DeferredCopies gathers_;
  std::vector<uint8_t> gather_;
};

}  // namespace

std::unique_ptr<MemoryPort> makeStagedHostMemoryPort() {
  return std::make_unique<StagedHostMemoryPort>();
}

}  // namespace rdma
}  // namespace te4j
