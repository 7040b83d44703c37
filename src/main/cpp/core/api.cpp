// api.cpp — the free functions of te4j/api.h (P2pTransport's factory is p2p/p2p_transport.cpp:
// core/ includes nothing of the layers above it). CUDA work goes through cuda_bridge.h (the CUDA
// build's cuda_runtime_api.cu, or cuda_bridge_nocuda.cpp without nvcc).
#include "te4j/api.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>

#include "transport/device/comm_device.cuh"
#include "core/build_features.h"
#include "core/cuda_bridge.h"

namespace te4j {
namespace {

thread_local std::string t_last_error;

int threadFail(int status, const std::string& message) {
  t_last_error = message;
  return status;
}

// A real probe of what the host platform needs: an anonymous memfd, sealed and mapped shared.
std::string hostProbe() {
  const int fd = ::memfd_create("te4j-probe", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return std::string("memfd_create failed: ") + std::strerror(errno);
  std::string why;
  if (::ftruncate(fd, 4096) != 0) {
    why = std::string("ftruncate failed: ") + std::strerror(errno);
  } else if (::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) != 0) {
    why = std::string("memfd sealing failed: ") + std::strerror(errno);
  } else {
    void* p = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      why = std::string("mmap failed: ") + std::strerror(errno);
    } else {
      ::munmap(p, 4096);
    }
  }
  ::close(fd);
  return why;
}

}  // namespace

std::string availabilityReport() {
  std::string report;
  try {
    const std::string host_why = hostProbe();
    if (host_why.empty()) {
      report += "host.available=true\n";
    } else {
      report += "host.available=false\nhost.unavailable=" + host_why + "\n";
    }
    report += cuda_bridge::built() ? "cuda.built=true\n" : "cuda.built=false\n";
    cuda_bridge::appendAvailability(&report);
    report += kBuiltWithRdmaCore ? "rdma.mlx5.built=true\n" : "rdma.mlx5.built=false\n";
  } catch (...) {
    // Only std::bad_alloc can get here; the contract says this never fails.
    report = "host.available=false\ncuda.built=false\n";
  }
  return report;
}

const char* lastThreadError() { return t_last_error.c_str(); }

void setLastThreadError(const std::string& message) { t_last_error = message; }

std::size_t releaseCachedMemory() {
  return cuda_bridge::releaseIdleStreamWords() + cuda_bridge::releaseIdleBatchResources();
}

int cudaDeviceCount() {
  std::string why;
  const int n = cuda_bridge::deviceCount(&why);
  if (n < 0) return threadFail(n, why);
  t_last_error.clear();
  return n;
}

int cudaCanAccessPeer(int device, int peer_device) {
  std::string why;
  const int r = cuda_bridge::canAccessPeer(device, peer_device, &why);
  if (r < 0) return threadFail(r, why);
  t_last_error.clear();
  return r;
}

int copyMemory(int platform, int device, void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return kOk;
  if (dst == nullptr || src == nullptr) {
    return threadFail(kInvalidArgument, "copyMemory: dst or src is null");
  }
  if (platform == kPlatformHost) {
    std::memmove(dst, src, bytes);
    return kOk;
  }
  if (platform != kPlatformCuda) {
    return threadFail(kInvalidArgument, "copyMemory: unknown platform " + std::to_string(platform));
  }
  std::string why;
  const int st = cuda_bridge::copy(device, dst, src, bytes, &why);
  return st < 0 ? threadFail(st, why) : kOk;
}

int fillMemory(int platform, int device, void* dst, int byte_value, std::size_t bytes) {
  if (bytes == 0) return kOk;
  if (dst == nullptr) return threadFail(kInvalidArgument, "fillMemory: dst is null");
  if (platform == kPlatformHost) {
    std::memset(dst, byte_value, bytes);
    return kOk;
  }
  if (platform != kPlatformCuda) {
    return threadFail(kInvalidArgument, "fillMemory: unknown platform " + std::to_string(platform));
  }
  std::string why;
  const int st = cuda_bridge::fill(device, dst, byte_value, bytes, &why);
  return st < 0 ? threadFail(st, why) : kOk;
}

int memoryKind(const void* ptr, std::size_t bytes, int* device) {
  if (ptr == nullptr || device == nullptr || bytes == 0) {
    return threadFail(kInvalidArgument, "memoryKind: null address, null output or empty range");
  }
  std::string why;
  const int kind = cuda_bridge::pointerKind(ptr, device, &why);
  if (kind < 0) return threadFail(kind, why);
  if (kind == kMemoryPageableHost) {
    // Memory CUDA does not know is this process's virtual memory: msync(MS_ASYNC) checks that
    // every page of the range is mapped (ENOMEM otherwise) without touching it.
    const std::uintptr_t page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    const std::uintptr_t first = reinterpret_cast<std::uintptr_t>(ptr) & ~(page - 1);
    const std::uintptr_t end = reinterpret_cast<std::uintptr_t>(ptr) + bytes;
    if (end < first || ::msync(reinterpret_cast<void*>(first), end - first, MS_ASYNC) != 0) {
      const int err = end < first ? EINVAL : errno;
      char where[64];
      std::snprintf(where, sizeof(where), "%p (+%zu B)", ptr, bytes);
      return threadFail(kInvalidArgument, std::string("memory at ") + where +
                                              " is not mapped in this process (msync: " +
                                              std::strerror(err) + "): a copy into it would crash");
    }
  }
  t_last_error.clear();
  return kind;
}

mooncake::device::CommCtx* newCommCtx() {
  mooncake::device::CommCtx* ctx = new (std::nothrow) mooncake::device::CommCtx;
  if (ctx != nullptr) std::memset(ctx, 0, sizeof(*ctx));
  return ctx;
}

void deleteCommCtx(mooncake::device::CommCtx* ctx) { delete ctx; }

uint64_t commCtxRdmaRanks(const mooncake::device::CommCtx* ctx) {
  uint64_t ranks = 0;
  if (ctx == nullptr) return ranks;
  for (int r = 0; r < mooncake::device::kMcMaxRanks; ++r) {
    if (mooncake::device::mc_decided_route(*ctx, r) == mooncake::device::kMcRankRouteRdma) {
      ranks |= uint64_t(1) << r;
    }
  }
  return ranks;
}

}  // namespace te4j
