// fuzz_support.h — what the fuzz targets and the seed generator share: registered memory at
// fixed addresses behind guard pages, its region table, and the fixed key and nonce of the
// handshake target.
//
// Why fixed addresses: a frame or WQE names memory by absolute address. At an address that
// changes with every run (ASLR) the fuzzer could never learn a valid one, and a seed would stop
// being valid the next run; at a fixed one both reach the code that touches the memory.
// Why guard pages: ASan does not watch mmap'd memory, so an access one byte past a region must
// fault on its own (PROT_NONE), which libFuzzer reports as a crash with the input.
#pragma once

#include <sys/mman.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "rdma/region_table.h"

namespace te4j {
namespace fuzz {

constexpr uint64_t kPage = 4096;
// Application memory under ASan on x86-64, clear of its allocator (which sits at 0x6000...).
constexpr uint64_t kArenaBase = 0x500000000000ull;
// Region A: one whole page, every access; region B: the last 64 bytes of another page, remote
// write only (an atomic or a gather there must be refused).
constexpr uint64_t kRegionA = kArenaBase + 1 * kPage;
constexpr uint64_t kRegionABytes = kPage;
constexpr uint64_t kRegionB = kArenaBase + 4 * kPage - 64;
constexpr uint64_t kRegionBBytes = 64;
constexpr uint64_t kArenaBytes = 5 * kPage;  // guard, A, guard, B's page, guard

// The handshake target's listening-NIC key and challenge nonce.
constexpr uint8_t kKey[32] = {0x74, 0x65, 0x34, 0x6a, 0x2d, 0x66, 0x75, 0x7a, 0x7a, 0x2d, 0x6b,
                              0x65, 0x79, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
                              0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12};
constexpr uint8_t kNonce[16] = {0x6e, 0x6f, 0x6e, 0x63, 0x65, 0x21, 0x22, 0x23,
                                0x24, 0x25, 0x26, 0x27, 0x28, 0x29, 0x2a, 0x2b};

struct Arena {
  rdma::RegionTable regions;
  uint32_t key_a = 0;
  uint32_t key_b = 0;
};

/// Maps the arena once per process and registers A and B (keys are the table's first two).
inline Arena& arena() {
  static Arena* a = [] {
    void* p = mmap((void*)(uintptr_t)kArenaBase, kArenaBytes, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (p != (void*)(uintptr_t)kArenaBase) {
      std::fprintf(stderr, "fuzz arena: cannot map %#llx\n", (unsigned long long)kArenaBase);
      std::abort();
    }
    mprotect((void*)(uintptr_t)kRegionA, kRegionABytes, PROT_READ | PROT_WRITE);
    mprotect((void*)(uintptr_t)(kArenaBase + 3 * kPage), kPage, PROT_READ | PROT_WRITE);
    Arena* arena = new Arena();
    arena->key_a = arena->regions.add(kRegionA, kRegionABytes, rdma::kAccessAll);
    arena->key_b = arena->regions.add(kRegionB, kRegionBBytes, rdma::kAccessRemoteWrite);
    return arena;
  }();
  return *a;
}

// Input reader: takes bytes from the front, zeros once the input is used up, so every input
// decodes to some parameters.
struct Bytes {
  const uint8_t* p;
  size_t n;
  uint8_t u8() {
    if (n == 0) return 0;
    --n;
    return *p++;
  }
  uint32_t u32() {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= (uint32_t)u8() << (8 * i);
    return v;
  }
  uint64_t u64() { return (uint64_t)u32() | ((uint64_t)u32() << 32); }
};

}  // namespace fuzz
}  // namespace te4j

// A broken invariant of a decoder: a crash to libFuzzer, which keeps the input.
#define FUZZ_ASSERT(cond)                                                                     \
  do {                                                                                        \
    if (!(cond)) {                                                                            \
      std::fprintf(stderr, "fuzz invariant failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
      std::abort();                                                                           \
    }                                                                                         \
  } while (0)
