// test_mlx5_gpu_support.cpp — the GPU half of the mlx5 backend's memory registration on a real
// GPU: a dma-buf fd exported for te4j-allocated device memory (what ibv_reg_dmabuf_mr gets), for
// a buffer start, an inner range and a sub-page range. Needs no NIC. Skips (exit 0, with the
// reason) where no CUDA device exists; a CUDA build on a GPU host must export it.
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "rdma/mlx5/gpu_support.h"
#include "te4j/api.h"

static int g_failures = 0;
#define EXPECT(cond, ...)                                   \
  do {                                                      \
    if (!(cond)) {                                          \
      fprintf(stderr, "FAILED %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                         \
      fprintf(stderr, "\n");                                \
      ++g_failures;                                         \
    }                                                       \
  } while (0)

int main() {
  if (te4j::cudaDeviceCount() <= 0) {
    printf("test_mlx5_gpu_support: SKIP (no CUDA device here)\n");
    return 0;
  }
  std::unique_ptr<te4j::P2pTransport> p2p(te4j::P2pTransport::create(te4j::kPlatformCuda, 0, 1));
  if (!p2p || p2p->status() != te4j::kOk) {
    fprintf(stderr, "FAILED: CUDA P2pTransport: %s\n", p2p ? p2p->lastError() : "out of memory");
    return 1;
  }
  const size_t bytes = 8u << 20;
  void* buf = nullptr;
  if (p2p->allocateBuffer(bytes, &buf) != te4j::kOk) {
    fprintf(stderr, "FAILED: allocateBuffer: %s\n", p2p->lastError());
    return 1;
  }
  struct Range { size_t at, len; const char* what; };
  const Range ranges[] = {{0, bytes, "whole buffer"}, {1u << 20, 2u << 20, "inner 2 MiB"},
                          {4096 + 100, 1000, "sub-page range"}};
  for (const Range& r : ranges) {
    uint64_t offset = ~0ull;
    std::string why;
    const int fd = te4j::rdma::gpuDmabufFd(0, (char*)buf + r.at, r.len, &offset, &why);
    EXPECT(fd >= 0, "%s: no dma-buf: %s", r.what, why.c_str());
    if (fd < 0) continue;
    struct stat st;
    EXPECT(fstat(fd, &st) == 0, "%s: fstat of the dma-buf fd", r.what);
    // The fd covers whole host pages around the range; offset locates the range inside it.
    EXPECT(offset < 65536 && (((uintptr_t)buf + r.at - offset) % 4096) == 0,
           "%s: offset %llu does not align the range start down to a page", r.what,
           (unsigned long long)offset);
    printf("  %s: dma-buf fd %d, offset %llu\n", r.what, fd, (unsigned long long)offset);
    close(fd);
  }
  p2p->freeBuffer(buf);
  if (g_failures == 0) printf("test_mlx5_gpu_support: OK\n");
  return g_failures == 0 ? 0 : 1;
}
