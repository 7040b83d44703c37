// body_path.cpp — see body_path.h.
#include "stream/body_path.h"

#include <algorithm>
#include <cstdint>

#include "transport/device/comm_device.cuh"

namespace te4j {
namespace body_path {

Knobs Knobs::now() {
  Knobs k;
  k.put = tuning::get(tuning::kPut);
  const long long same_device = tuning::sameDeviceCopyEngineBytes();
  if (same_device >= 0) k.same_device_ce_bytes = static_cast<std::size_t>(same_device);
  return k;
}

std::size_t copyEngineFrom(int route, const Knobs& knobs) {
  switch (route) {
    case mooncake::device::kMcRankRouteSameDevice: return knobs.same_device_ce_bytes;
    case mooncake::device::kMcRankRoutePeerDevice: return kPeerDeviceCopyEngineBytes;
    default: return SIZE_MAX;
  }
}

bool mayLeaveKernel(std::size_t nbytes, const Knobs& knobs) {
  switch (knobs.put) {
    case tuning::kPutCopyEngine:
    case tuning::kPutCopyEngineSm: return true;
    case tuning::kPutAuto:
      return nbytes >= std::min(copyEngineFrom(mooncake::device::kMcRankRouteSameDevice, knobs),
                                copyEngineFrom(mooncake::device::kMcRankRoutePeerDevice, knobs));
    default: return false;
  }
}

Path choose(int route, std::size_t nbytes, const Knobs& knobs) {
  if (!mooncake::device::mc_route_is_mapped(route)) return kKernel;
  switch (knobs.put) {
    case tuning::kPutCopyEngine: return kCopyEngine;
    case tuning::kPutCopyEngineSm: return kCopyEngineAndKernel;
    case tuning::kPutAuto: return nbytes >= copyEngineFrom(route, knobs) ? kCopyEngine : kKernel;
    default: return kKernel;  // put=base: the RDMA-capable kernels
  }
}

}  // namespace body_path
}  // namespace te4j
