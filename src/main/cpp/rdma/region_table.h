// region_table.h — the registered memory regions of one software NIC and their keys.
//
// Every address a WQE or a request frame names is checked here before anything touches it:
// the key must name a live region, the region must allow the access, and [addr, addr + len)
// must lie inside it (overflow-safe). Keys are mlx5-style mkeys: index << 8 | an 8-bit tag that
// changes on every registration, so a stale key of a re-used slot does not match.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <shared_mutex>
#include <vector>

namespace te4j {
namespace rdma {

enum Access : uint32_t {
  kAccessLocalRead = 1,   // source of a WRITE (gather)
  kAccessLocalWrite = 2,  // destination of an atomic's fetched value
  kAccessRemoteWrite = 4,
  kAccessRemoteAtomic = 8,
  kAccessRemoteRead = 16,  // source of a peer's READ
  kAccessAll = 31,
};

class RegionTable {
 public:
  /// Registers [base, base + bytes); returns the key (lkey == rkey), or 0 when full / empty.
  uint32_t add(uint64_t base, uint64_t bytes, uint32_t access);
  /// Forgets the region of `key`; false when there is none.
  bool remove(uint32_t key);
  /// The key of the region starting at base (0 if none).
  uint32_t keyOf(uint64_t base) const;
  /// Whether [addr, addr + len) lies inside the live region of `key` allowing `access`.
  bool check(uint32_t key, uint64_t addr, uint64_t len, uint32_t access) const;
  /// check() that, when it passes, leaves the table's shared lock in *hold for as long as the
  /// caller touches the memory: remove() waits for it, so a region deregistered before its
  /// memory is freed is never accessed after the free.
  bool checkAndHold(uint32_t key, uint64_t addr, uint64_t len, uint32_t access,
                    std::shared_lock<std::shared_mutex>* hold) const;
  /// Removes every region but `keep` that shares a byte with [base, base + bytes) (memory about
  /// to be freed); returns how many. Waits for accesses in flight (checkAndHold).
  size_t removeOverlapping(uint64_t base, uint64_t bytes, uint32_t keep);
  void clear();

 private:
  bool checkLocked(uint32_t key, uint64_t addr, uint64_t len, uint32_t access) const;
  struct Region {
    uint64_t base = 0;
    uint64_t bytes = 0;
    uint32_t access = 0;
    uint32_t key = 0;  // 0 = free slot
  };
  static constexpr size_t kMaxRegions = 1u << 16;
  mutable std::shared_mutex mutex_;
  std::vector<Region> regions_;
  uint8_t next_tag_ = 0x5a;
};

}  // namespace rdma
}  // namespace te4j
