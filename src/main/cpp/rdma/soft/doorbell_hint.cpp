// doorbell_hint.cpp — see doorbell_hint.h.
#include "rdma/soft/doorbell_hint.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <climits>

namespace te4j {
namespace rdma {

namespace {

std::atomic<uint32_t> g_hints{0};
std::atomic<int> g_sleepers{0};

long futexCall(const void* addr, int op, uint32_t value, const timespec* timeout) {
  return syscall(SYS_futex, addr, op, value, timeout, nullptr, 0);
}

timespec spanOf(int64_t ns) {
  timespec t;
  t.tv_sec = (time_t)(ns / 1000000000);
  t.tv_nsec = (long)(ns % 1000000000);
  return t;
}

}  // namespace

void wakeProgressThreads() {
  // seq_cst on both sides: either the sleeper's futex sees the new count, or this sees it asleep.
  g_hints.fetch_add(1, std::memory_order_seq_cst);
  if (g_sleepers.load(std::memory_order_seq_cst) > 0)
    futexCall(&g_hints, FUTEX_WAKE_PRIVATE, INT_MAX, nullptr);
}

uint32_t softNicHintCount() { return g_hints.load(std::memory_order_seq_cst); }

void softNicAwaitHint(uint32_t seen, int timeout_us) {
  g_sleepers.fetch_add(1, std::memory_order_seq_cst);
  if (g_hints.load(std::memory_order_seq_cst) == seen) {
    const timespec t = spanOf((int64_t)timeout_us * 1000);
    futexCall(&g_hints, FUTEX_WAIT_PRIVATE, seen, &t);
  }
  g_sleepers.fetch_sub(1, std::memory_order_seq_cst);
}

void wakeWordWaiters(const void* addr) {
  // Not the private variant: the waiter is another process mapping the same segment.
  futexCall(addr, FUTEX_WAKE, INT_MAX, nullptr);
}

void waitWordChange(const void* addr, uint32_t seen, int64_t timeout_ns) {
  if (timeout_ns <= 0) return;
  const timespec t = spanOf(timeout_ns);
  futexCall(addr, FUTEX_WAIT, seen, &t);
}

}  // namespace rdma
}  // namespace te4j
