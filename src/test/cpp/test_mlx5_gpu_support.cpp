// test_mlx5_gpu_support.cpp — the GPU half of the mlx5 backend on a real GPU: a dma-buf fd
// exported for te4j-allocated device memory (what ibv_reg_dmabuf_mr gets), for a buffer start,
// an inner range and a sub-page range; the GPU's PCI bus id in sysfs form; and the connect-time
// doorbell probe kernel (a GPU-rung zero-length WRITE) against the software NIC, which watches
// the words device code rings as a ConnectX watches its UAR. Needs no NIC. Skips (exit 0, with the
// reason) where no CUDA device exists; a CUDA build on a GPU host must export it.
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "rdma/mlx5/gpu_support.h"
#include "te4j/api.h"
#include "te4j/rdma_api.h"
#include "transport/device/ibgda/status.cuh"

static int g_failures = 0;
#define EXPECT(cond, ...)                                               \
  do {                                                                  \
    if (!(cond)) {                                                      \
      fprintf(stderr, "FAILED %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                     \
      fprintf(stderr, "\n");                                            \
      ++g_failures;                                                     \
    }                                                                   \
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
  struct Range {
    size_t at, len;
    const char* what;
  };
  const Range ranges[] = {{0, bytes, "whole buffer"},
                          {1u << 20, 2u << 20, "inner 2 MiB"},
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

  std::string why;
  const std::string bus_id = te4j::rdma::gpuPciBusId(0, &why);
  struct stat st;
  EXPECT(!bus_id.empty() && stat(("/sys/bus/pci/devices/" + bus_id).c_str(), &st) == 0,
         "GPU 0's bus id '%s' (%s) names no /sys/bus/pci/devices entry", bus_id.c_str(),
         why.c_str());
  printf("  GPU 0 is PCI function %s\n", bus_id.c_str());

  // One rank, its own loopback QP on the software NIC; the probe posts and rings from the GPU.
  std::unique_ptr<te4j::RdmaTransport> nic(
      te4j::RdmaTransport::create(te4j::kPlatformCuda, 0, te4j::kRdmaBackendSoft));
  EXPECT(nic && nic->status() == te4j::kOk, "soft NIC: %s", nic ? nic->lastError() : "null");
  if (nic && nic->status() == te4j::kOk) {
    EXPECT(nic->initialize("soft@127.0.0.1", 1, 1) == 0, "initialize: %s", nic->lastError());
    EXPECT(nic->registerMemory(buf, bytes) == 0, "registerMemory: %s", nic->lastError());
    EXPECT(nic->createQueuePairs(nullptr) == 0, "createQueuePairs: %s", nic->lastError());
    int64_t md[64];
    const int n = nic->localMetadata(md, 64);
    EXPECT(n > 0, "localMetadata: %s", nic->lastError());
    uint64_t addr = (uint64_t)md[5], prefix = (uint64_t)md[7], ifid = (uint64_t)md[8];
    uint32_t key = (uint32_t)md[6], lid = (uint32_t)md[9],
             qpn = (uint32_t)md[te4j::kRdmaMetadataHeader];
    // The software NIC authenticates every connection, its own loopback one included.
    uint8_t auth[32];
    EXPECT(nic->authKey(auth, 32) == 32 && nic->setPeerKeys(auth, 32) == 0, "own key: %s",
           nic->lastError());
    EXPECT(n > 0 && nic->connectPeers(0, true, &addr, &key, &qpn, &lid, &prefix, &ifid, 1) == 0,
           "connectPeers: %s", nic->lastError());
    const int probe =
        te4j::rdma::gpuDoorbellProbe(0, nic->qpDevCtxsPtr(), addr, key, 2000000000ull, &why);
    EXPECT(probe == mooncake::device::kMcRdmaOk, "doorbell probe: status %d (%s)", probe,
           why.c_str());
    int64_t err[8];
    EXPECT(nic->queryQpError(0, err, 8) == 8 && err[6] == 1 && err[7] == 1 && err[0] == 0,
           "after the probe: posted %lld, completed %lld, errors %lld", (long long)err[6],
           (long long)err[7], (long long)err[0]);
    printf("  doorbell probe: a GPU-rung zero-length WRITE completed (status %d)\n", probe);
  }
  nic.reset();
  p2p->freeBuffer(buf);
  if (g_failures == 0) printf("test_mlx5_gpu_support: OK\n");
  return g_failures == 0 ? 0 : 1;
}
