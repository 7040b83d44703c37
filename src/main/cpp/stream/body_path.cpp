// body_path.cpp — see body_path.h.
#include "stream/body_path.h"

#include <algorithm>
#include <cstdint>

#include "te4j/tuning.h"

namespace te4j {
namespace body_path {

std::size_t copyEngineFrom(peer_tables::Route route) {
  switch (route) {
    case peer_tables::kRouteSameDevice: {
      const long long knob = tuning::sameDeviceCopyEngineBytes();
      return knob >= 0 ? static_cast<std::size_t>(knob) : kSameDeviceCopyEngineBytes;
    }
    case peer_tables::kRoutePeerDevice: return kPeerDeviceCopyEngineBytes;
    default: return SIZE_MAX;
  }
}

bool mayLeaveKernel(std::size_t nbytes) {
  switch (tuning::get(tuning::kPut)) {
    case tuning::kPutCopyEngine:
    case tuning::kPutCopyEngineSm: return true;
    case tuning::kPutAuto:
      return nbytes >= std::min(copyEngineFrom(peer_tables::kRouteSameDevice),
                                copyEngineFrom(peer_tables::kRoutePeerDevice));
    default: return false;
  }
}

Path choose(peer_tables::Route route, std::size_t nbytes) {
  if (route == peer_tables::kRouteUnmapped) return kKernel;
  switch (tuning::get(tuning::kPut)) {
    case tuning::kPutCopyEngine: return kCopyEngine;
    case tuning::kPutCopyEngineSm: return kCopyEngineAndKernel;
    case tuning::kPutAuto: return nbytes >= copyEngineFrom(route) ? kCopyEngine : kKernel;
    default: return kKernel;  // put=base and the experiment variants are kernels
  }
}

}  // namespace body_path
}  // namespace te4j
