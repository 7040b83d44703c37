// doorbell_path.cpp — see doorbell_path.h.
#if defined(TE4J_HAVE_RDMA_CORE_HEADERS)

#include "rdma/mlx5/doorbell_path.h"

#include <cstdlib>
#include <cstring>

#include "te4j/api.h"
#include "rdma/mlx5/gpu_support.h"
#include "transport/device/ibgda/status.cuh"

namespace te4j {
namespace rdma {

namespace {

// A BlueFlame register is two halves used alternately; its size is the device's
// log_bf_reg_size (512 bytes on every ConnectX so far, but read rather than assumed).
uint32_t bfSizeOf(const Mlx5Device& device) {
  return device.uarIsBlueFlame() ? device.blueFlameHalf() : 0;
}

// Bytes of MMIO the GPU must reach: both BlueFlame halves, or the one 8-byte doorbell.
size_t mappedBytes(const Mlx5Device& device) {
  return device.uarIsBlueFlame() ? 2 * (size_t)device.blueFlameHalf() : 8;
}

}  // namespace

DoorbellPath chooseDoorbellPath(Mlx5Device* device, int platform, int cuda_device) {
  DoorbellPath path;
  path.bf_size = bfSizeOf(*device);
  if (platform != kPlatformCuda) return path;  // executor threads: the proxy rings
  const char* forced = std::getenv("TE4J_RDMA_DOORBELL");
  if (forced != nullptr && std::strcmp(forced, "proxy") == 0) {
    path.note = "doorbells rung by the host proxy thread (TE4J_RDMA_DOORBELL=proxy)";
    return path;
  }
  std::string why;
  void* reg = device->uar()->reg_addr;
  void* gpu = mapUarForGpu(cuda_device, reg, mappedBytes(*device), &why);
  if (gpu == nullptr && !device->uarIsBlueFlame()) {
    std::string bf_why;
    if (device->switchToBlueFlameUar(&bf_why)) {
      reg = device->uar()->reg_addr;
      std::string again;
      gpu = mapUarForGpu(cuda_device, reg, mappedBytes(*device), &again);
      if (gpu == nullptr) why += "; BlueFlame UAR: " + again;
    } else {
      why += "; " + bf_why;
    }
    path.bf_size = bfSizeOf(*device);
  }
  if (gpu == nullptr) {
    path.note = "doorbells rung by the host proxy thread: the GPU cannot map the UAR (" + why +
                "); fix for GPU-side doorbells: a driver that allows cudaHostRegisterIoMemory "
                "(not under a restrictive IOMMU / vGPU)";
    return path;
  }
  path.gpu_reg = (uint64_t*)gpu;
  path.mapped = reg;
  return path;
}

DoorbellVerdict doorbellVerdict(int gpu_status, bool proxy_completed) {
  if (gpu_status == mooncake::device::kMcRdmaOk) return DoorbellVerdict::kGpu;
  if (gpu_status > 0) return DoorbellVerdict::kUnverified;
  if (gpu_status == mooncake::device::kMcRdmaTimeout)
    return proxy_completed ? DoorbellVerdict::kProxy : DoorbellVerdict::kBroken;
  return DoorbellVerdict::kBroken;  // an error CQE or a fatal CQE: not a doorbell question
}

const char* doorbellVerdictText(DoorbellVerdict verdict) {
  switch (verdict) {
    case DoorbellVerdict::kGpu: return "GPU-rung doorbells verified by a loopback WRITE";
    case DoorbellVerdict::kProxy:
      return "the GPU's UAR writes do not reach the NIC (a loopback WRITE completed only once the "
             "host rang it): doorbells rung by the host proxy thread; fix for GPU-side doorbells: "
             "a NIC under the GPU's PCIe switch (the transport's device filter), ACS/IOMMU "
             "settings that allow peer-to-peer writes";
    case DoorbellVerdict::kBroken:
      return "the loopback QP did not complete a zero-length WRITE, whoever rang it";
    case DoorbellVerdict::kUnverified: return "GPU-rung doorbells kept without a loopback check";
  }
  return "?";
}

void releaseDoorbellPath(int cuda_device, DoorbellPath* path) {
  if (path->mapped != nullptr) unmapUarForGpu(cuda_device, path->mapped);
  *path = DoorbellPath();
}

}  // namespace rdma
}  // namespace te4j

#endif  // TE4J_HAVE_RDMA_CORE_HEADERS
