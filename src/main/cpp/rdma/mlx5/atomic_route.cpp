// atomic_route.cpp — see atomic_route.h.
#include "rdma/mlx5/atomic_route.h"

#include <cstring>

#include "transport/device/ibgda_device.cuh"

namespace te4j {
namespace rdma {

bool readAtomicRoute(EnvLookup env, uint32_t* flags, std::string* why) {
  const char* v = env("TE4J_RDMA_ATOMICS");
  if (v == nullptr || *v == '\0' || std::strcmp(v, "nic") == 0) {
    *flags = mooncake::device::kIbgdaAtomicsViaNic;
    return true;
  }
  if (std::strcmp(v, "local") == 0) {
    *flags = 0;
    return true;
  }
  *why = std::string("TE4J_RDMA_ATOMICS='") + v +
         "' is neither 'nic' (every add through the NIC, the default) nor 'local' (self/P2P "
         "adds as GPU atomics: only for words written over one transport)";
  return false;
}

}  // namespace rdma
}  // namespace te4j
