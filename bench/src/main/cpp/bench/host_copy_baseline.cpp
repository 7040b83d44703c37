// bench/host_copy_baseline.cpp — te4j::bench::CopyBaseline on the host platform: single-thread
// memcpy between the same shared-memory mappings that te4j's puts use.
#include <string.h>

#include <chrono>
#include <new>
#include <string>

#include "te4j/bench_api.h"

namespace te4j {
namespace bench {
namespace {

class HostCopyBaseline final : public CopyBaseline {
 public:
  int copyEngine(void* dst, const void* src, std::size_t bytes, int count, int64_t /*timeout_ns*/,
                 int64_t* elapsed_ns) override {
    if (dst == nullptr || src == nullptr || elapsed_ns == nullptr) {
      return fail(kInvalidArgument, "memcpy baseline: null pointer");
    }
    if (bytes == 0 || count <= 0) {
      return fail(kInvalidArgument, "memcpy baseline: bytes and count must be positive");
    }
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < count; ++i) {
      memcpy(dst, src, bytes);
      // Keeps the compiler from merging the identical copies: each one really runs.
      asm volatile("" : : "r"(dst) : "memory");
    }
    const auto t1 = std::chrono::steady_clock::now();
    *elapsed_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count();
    return ok();
  }

  int copyBlocks(int how, const uint64_t* dst, const uint64_t* src, const uint64_t* bytes,
                 int count, int64_t /*timeout_ns*/, int64_t* elapsed_ns) override {
    if (dst == nullptr || src == nullptr || bytes == nullptr || elapsed_ns == nullptr ||
        count <= 0) {
      return fail(kInvalidArgument, "memcpy blocks baseline: null array or no blocks");
    }
    if (how == kBlocksBatchAsync) return fail(kUnavailable, "cudaMemcpyBatchAsync is CUDA only");
    uint64_t total = 0;
    for (int i = 0; i < count; ++i) total += bytes[i];
    const auto t0 = std::chrono::steady_clock::now();
    if (how == kBlocksContiguous) {
      memcpy((void*)(uintptr_t)dst[0], (const void*)(uintptr_t)src[0], total);
    } else {
      for (int i = 0; i < count; ++i)
        memcpy((void*)(uintptr_t)dst[i], (const void*)(uintptr_t)src[i], bytes[i]);
    }
    asm volatile("" : : : "memory");
    const auto t1 = std::chrono::steady_clock::now();
    *elapsed_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count();
    return ok();
  }

  int smCopy(void*, const void*, std::size_t, int, int, int, int64_t, int64_t*) override {
    return fail(kUnavailable, "the SM copy kernel baseline is CUDA only");
  }
};

}  // namespace
}  // namespace bench
}  // namespace te4j

te4j::bench::CopyBaseline* te4j_bench_new_host_copy() {
  return new (std::nothrow) te4j::bench::HostCopyBaseline();
}
