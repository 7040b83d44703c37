// region_table.cpp — see region_table.h.
#include "rdma/region_table.h"

namespace te4j {
namespace rdma {

uint32_t RegionTable::add(uint64_t base, uint64_t bytes, uint32_t access) {
  if (bytes == 0 || base + bytes < base) return 0;
  std::unique_lock<std::shared_mutex> lock(mutex_);
  size_t slot = 0;
  while (slot < regions_.size() && regions_[slot].key != 0) ++slot;
  if (slot == regions_.size()) {
    if (regions_.size() >= kMaxRegions) return 0;
    regions_.emplace_back();
  }
  // Tag 0 is skipped so that no key is 0 (0 means "no key" to callers).
  if (++next_tag_ == 0) next_tag_ = 1;
  const uint32_t key = ((uint32_t)slot << 8) | next_tag_;
  if (key == 0) return 0;
  regions_[slot] = Region{base, bytes, access, key};
  return key;
}

bool RegionTable::remove(uint32_t key) {
  std::unique_lock<std::shared_mutex> lock(mutex_);
  const size_t slot = key >> 8;
  if (key == 0 || slot >= regions_.size() || regions_[slot].key != key) return false;
  regions_[slot] = Region();
  return true;
}

uint32_t RegionTable::keyOf(uint64_t base) const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  for (const Region& r : regions_)
    if (r.key != 0 && r.base == base) return r.key;
  return 0;
}

bool RegionTable::check(uint32_t key, uint64_t addr, uint64_t len, uint32_t access) const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  return checkLocked(key, addr, len, access);
}

bool RegionTable::checkAndHold(uint32_t key, uint64_t addr, uint64_t len, uint32_t access,
                               std::shared_lock<std::shared_mutex>* hold) const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  if (!checkLocked(key, addr, len, access)) return false;
  *hold = std::move(lock);
  return true;
}

size_t RegionTable::removeOverlapping(uint64_t base, uint64_t bytes, uint32_t keep) {
  if (bytes == 0 || base + bytes < base) return 0;
  std::unique_lock<std::shared_mutex> lock(mutex_);
  size_t removed = 0;
  for (Region& r : regions_) {
    if (r.key == 0 || r.key == keep) continue;
    // add() refuses regions that wrap, so neither end overflows.
    if (r.base < base + bytes && base < r.base + r.bytes) {
      r = Region();
      ++removed;
    }
  }
  return removed;
}

bool RegionTable::checkLocked(uint32_t key, uint64_t addr, uint64_t len, uint32_t access) const {
  const size_t slot = key >> 8;
  if (key == 0 || slot >= regions_.size()) return false;
  const Region& r = regions_[slot];
  if (r.key != key || (r.access & access) != access) return false;
  // Written as differences so that no sum can overflow.
  if (addr < r.base) return false;
  const uint64_t offset = addr - r.base;
  return offset <= r.bytes && len <= r.bytes - offset;
}

void RegionTable::clear() {
  std::unique_lock<std::shared_mutex> lock(mutex_);
  regions_.clear();
}

}  // namespace rdma
}  // namespace te4j
