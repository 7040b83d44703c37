// host_memory_port.cpp — MemoryPort of the host platform: direct access and GCC atomics.
#include <cstdlib>
#include <cstring>

#include "rdma/memory_port.h"
#include "rdma/soft/doorbell_hint.h"

namespace te4j {
namespace rdma {

namespace {

class HostMemoryPort final : public MemoryPort {
 public:
  bool direct() const override { return true; }

  int allocControl(size_t bytes, void** host, void** dev, std::string* err) override {
    void* p = nullptr;
    // Page alignment keeps rings, CQs and UAR words on their own cache lines.
    if (posix_memalign(&p, 4096, bytes) != 0) {
      *err = "out of memory allocating " + std::to_string(bytes) + " bytes of NIC control memory";
      return -1;
    }
    std::memset(p, 0, bytes);
    *host = *dev = p;
    return 0;
  }
  void freeControl(void* host) override { std::free(host); }

  int allocTable(size_t bytes, void** dev, std::string* err) override {
    void* unused = nullptr;
    return allocControl(bytes, dev, &unused, err);
  }
  void freeTable(void* dev) override { std::free(dev); }
  int toTable(void* dev, const void* src, size_t bytes, std::string*) override {
    std::memcpy(dev, src, bytes);
    return 0;
  }
  int fromTable(void* dst, const void* dev, size_t bytes, std::string*) override {
    std::memcpy(dst, dev, bytes);
    return 0;
  }

  int read(void* dst, uint64_t src, size_t bytes, std::string*) override {
    std::memcpy(dst, (const void*)(uintptr_t)src, bytes);
    return 0;
  }
  int write(uint64_t dst, const void* src, size_t bytes, std::string*) override {
    std::memcpy((void*)(uintptr_t)dst, src, bytes);
    // Orders the data before a later atomic (the signal) that readers acquire.
    __atomic_thread_fence(__ATOMIC_RELEASE);
    return 0;
  }

  int fetchAddMasked32(uint64_t addr, uint32_t add, uint32_t field_boundary, uint32_t* old,
                       std::string* err) override {
    uint32_t* word = (uint32_t*)(uintptr_t)addr;
    if (field_boundary == 0) {
      *old = __atomic_fetch_add(word, add, __ATOMIC_SEQ_CST);
      // A waitSignal parked on the word (any process) wakes now instead of at its next poll.
      wakeWordWaiters(word);
      return 0;
    }
    uint32_t seen = __atomic_load_n(word, __ATOMIC_RELAXED);
    // Lock-free CAS loop; bounded so a pathological writer cannot hold the NIC forever.
    for (int attempt = 0; attempt < (1 << 20); ++attempt) {
      const uint32_t next = maskedAdd32(seen, add, field_boundary);
      if (__atomic_compare_exchange_n(word, &seen, next, false, __ATOMIC_SEQ_CST,
                                      __ATOMIC_RELAXED)) {
        *old = seen;
        wakeWordWaiters(word);
        return 0;
      }
    }
    *err = "masked fetch-and-add did not win its compare-and-swap within 2^20 attempts";
    return -1;
  }
};

}  // namespace

std::unique_ptr<MemoryPort> makeHostMemoryPort() { return std::make_unique<HostMemoryPort>(); }

}  // namespace rdma
}  // namespace te4j
