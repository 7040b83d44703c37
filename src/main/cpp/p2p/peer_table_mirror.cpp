// peer_table_mirror.cpp — see peer_table_mirror.h.
#include "p2p/peer_table_mirror.h"

#include <cstdint>
#include <mutex>
#include <unordered_map>

namespace te4j {
namespace peer_tables {
namespace {

struct Entry {
  uintptr_t local_base = 0;
  std::size_t bytes = 0;
  std::vector<int> available;
  std::vector<void*> peer_ptrs;
};

std::mutex g_mu;
std::unordered_map<const void*, Entry>& entries() {
  static auto* map = new std::unordered_map<const void*, Entry>();  // outlives static teardown
  return *map;
}

}  // namespace

void publish(const void* device_peer_ptrs, const void* local_base, std::size_t window_bytes,
             const std::vector<int>& available, const std::vector<void*>& peer_ptrs) {
  if (device_peer_ptrs == nullptr) return;
  Entry e;
  e.local_base = reinterpret_cast<uintptr_t>(local_base);
  e.bytes = window_bytes;
  e.available = available;
  e.peer_ptrs = peer_ptrs;
  std::lock_guard<std::mutex> lock(g_mu);
  entries()[device_peer_ptrs] = std::move(e);
}

void withdraw(const void* device_peer_ptrs) {
  std::lock_guard<std::mutex> lock(g_mu);
  entries().erase(device_peer_ptrs);
}

bool translate(const void* device_peer_ptrs, int rank, const void* local_ptr, std::size_t nbytes,
               void** mapped) {
  std::lock_guard<std::mutex> lock(g_mu);
  const auto it = entries().find(device_peer_ptrs);
  if (it == entries().end()) return false;
  const Entry& e = it->second;
  if (rank < 0 || (std::size_t)rank >= e.available.size() || e.available[rank] == 0) return false;
  const uintptr_t p = reinterpret_cast<uintptr_t>(local_ptr);
  if (p < e.local_base) return false;
  const std::size_t offset = p - e.local_base;
  if (offset > e.bytes || nbytes > e.bytes - offset) return false;
  *mapped = static_cast<char*>(e.peer_ptrs[rank]) + offset;
  return true;
}

}  // namespace peer_tables
}  // namespace te4j
