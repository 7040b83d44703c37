// doorbell_path.h — who rings the NIC: the GPU itself or the host proxy thread.
//
// CUDA platform: the UAR register is mapped into the GPU (gpu_support.h) so device code rings
// it directly (IbgdaQp::bf_reg). A non-cached UAR page the driver refuses to map is swapped for
// a BlueFlame one and tried again. When no mapping works (or TE4J_RDMA_DOORBELL=proxy), or on
// the host platform, bf_reg stays nullptr and DoorbellProxy rings for the device code.
#pragma once

#if defined(TE4J_HAVE_RDMA_CORE_HEADERS)

#include <cstdint>
#include <string>

#include "rdma/mlx5/mlx5_device.h"

namespace te4j {
namespace rdma {

struct DoorbellPath {
  uint64_t* gpu_reg = nullptr;  // the register's device address, or nullptr: the proxy rings
  void* mapped = nullptr;       // host address mapped into the GPU (to unmap)
  uint32_t bf_size = 0;         // BlueFlame half the doorbells alternate; 0: non-cached
  std::string note;             // why the proxy rings on the CUDA platform ("" otherwise)
};

/// Chooses the path for `device` (a CUDA ordinal on kPlatformCuda). Never fails: the proxy is
/// the fallback.
DoorbellPath chooseDoorbellPath(Mlx5Device* device, int platform, int cuda_device);
/// Undoes the GPU mapping (before the UAR is freed).
void releaseDoorbellPath(int cuda_device, DoorbellPath* path);

/// What the connect-time loopback probe (gpuDoorbellProbe on the own rank's QP) says about
/// GPU-rung doorbells. A mapping that cudaHostRegister accepted may still not deliver: posted
/// peer-to-peer writes from a GPU to a NIC behind another root complex can be dropped, and then
/// nothing ever completes. The probe's WQE is already announced in the doorbell record, so the
/// proxy can ring it again: if it then completes, the GPU's write is what got lost.
enum class DoorbellVerdict {
  kGpu,         // the probe completed: device code rings the UAR itself
  kProxy,       // no completion until the proxy rang: device code leaves the UAR to the proxy
  kBroken,      // no completion either way, or an error CQE: the loopback QP itself is broken
  kUnverified,  // the probe could not run (CUDA error): GPU doorbells kept, unproven
};
/// gpu_status: gpuDoorbellProbe's result (0 completed, kMcRdmaTimeout, other negative kMcRdma*
/// codes, or 1: did not run); proxy_completed: after a timeout, whether the proxy's doorbell
/// completed the WQE.
DoorbellVerdict doorbellVerdict(int gpu_status, bool proxy_completed);
const char* doorbellVerdictText(DoorbellVerdict verdict);

}  // namespace rdma
}  // namespace te4j

#endif  // TE4J_HAVE_RDMA_CORE_HEADERS
