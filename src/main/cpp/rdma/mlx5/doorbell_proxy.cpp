// doorbell_proxy.cpp — see doorbell_proxy.h.
#include "rdma/mlx5/doorbell_proxy.h"

#include <chrono>

#include "transport/device/ibgda/mlx5_defs.cuh"

namespace te4j {
namespace rdma {

namespace mlx5 = mooncake::device::mlx5;

namespace {

// A read this many times in a row that does not carry the recorded WQE is reported and skipped.
constexpr uint32_t kMaxBadReads = 100000;
constexpr size_t kMaxDiagnostics = 32;

// Pushes the doorbell out of the CPU's write-combining buffer before the next one (as
// rdma-core's mmio_flush_writes); elsewhere a full fence.
inline void flushMmio() {
#if defined(__x86_64__) || defined(__i386__)
  __asm__ __volatile__("sfence" ::: "memory");
#elif defined(__aarch64__)
  __asm__ __volatile__("dsb st" ::: "memory");
#else
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

}  // namespace

void DoorbellProxy::start() {
  if (thread_.joinable()) return;
  stopping_.store(false, std::memory_order_release);
  thread_ = std::thread([this] { loop(); });
}

void DoorbellProxy::stop() {
  stopping_.store(true, std::memory_order_release);
  if (thread_.joinable()) thread_.join();
}

void DoorbellProxy::setQps(const std::vector<ProxyQp>& qps) {
  std::lock_guard<std::mutex> lock(mu_);
  qps_.clear();
  for (const ProxyQp& q : qps) {
    Watched w;
    w.qp = q;
    qps_.push_back(w);
  }
}

std::string DoorbellProxy::diagnostics() {
  std::lock_guard<std::mutex> lock(mu_);
  std::string all;
  for (const std::string& d : diagnostics_) all += d + "\n";
  return all;
}

void DoorbellProxy::loop() {
  uint32_t idle = 0;
  while (!stopping_.load(std::memory_order_acquire)) {
    if (scan()) {
      idle = 0;
    } else if (++idle < 256) {
      std::this_thread::yield();
    } else {
      // Idle: short sleeps keep a doorbell's delay small without burning a core.
      std::this_thread::sleep_for(std::chrono::microseconds(idle < 4096 ? 5 : 50));
    }
  }
}

bool DoorbellProxy::scan() {
  std::lock_guard<std::mutex> lock(mu_);
  bool worked = false;
  for (Watched& w : qps_) worked |= ring(&w);
  return worked;
}

bool DoorbellProxy::ring(Watched* w) {
  const uint32_t record = __atomic_load_n(&w->qp.dbrec[mlx5::kSndDbr], __ATOMIC_ACQUIRE);
  const uint16_t counter = (uint16_t)__builtin_bswap32(record);
  if (counter == w->rung) return false;
  const uint16_t last = (uint16_t)(counter - 1u);
  const uint64_t* slot =
      (const uint64_t*)(w->qp.ring + (size_t)(last & w->qp.sq_mask) * mlx5::kSendWqeBB);
  // Atomic: the slot may be rewritten concurrently (see the header); the record's acquire
  // orders this read after the WQE it announced.
  const uint64_t value = __atomic_load_n(slot, __ATOMIC_RELAXED);
  // The bytes as they lie in memory: big-endian opmod|index|opcode, then qpn|ds.
  const uint32_t w0 = __builtin_bswap32((uint32_t)value);
  const uint32_t w1 = __builtin_bswap32((uint32_t)(value >> 32));
  if ((uint16_t)(w0 >> 8) != last || (w1 >> 8) != w->qp.qpn) {
    // Not progress: the next scan (after a back-off) reads the record again.
    rereads_.fetch_add(1, std::memory_order_relaxed);
    if (++w->bad_reads < kMaxBadReads) return false;
    if (diagnostics_.size() < kMaxDiagnostics)
      diagnostics_.push_back("QP " + std::to_string(w->qp.qpn) + ": the WQE at index " +
                             std::to_string(last) +
                             " never carried that index and QP number; doorbell skipped");
    w->bad_reads = 0;
    w->rung = counter;
    return true;
  }
  uint64_t* reg = (uint64_t*)((uint8_t*)uar_reg_ + w->bf_offset);
  __atomic_store_n(reg, value, __ATOMIC_RELAXED);  // one 64-bit MMIO store, never split
  flushMmio();
  w->bf_offset ^= w->qp.bf_size;
  w->bad_reads = 0;
  w->rung = counter;
  doorbells_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

}  // namespace rdma
}  // namespace te4j
