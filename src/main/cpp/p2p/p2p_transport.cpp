// p2p_transport.cpp — P2pTransport's factory (platform choice): the host transport, the CUDA one
// through cuda_bridge.h, or a null object that says why neither can exist.
#include <string>

#include "core/cuda_bridge.h"
#include "core/unavailable.h"
#include "p2p/host_p2p_transport.h"
#include "te4j/api.h"
#include "te4j/tuning.h"

namespace te4j {

P2pTransport* P2pTransport::create(int platform, int device, int num_ranks) {
  try {
    if (const char* why = tuning::environmentError()) {
      return newUnavailableP2pTransport(platform, kInvalidArgument, why);
    }
    if (platform == kPlatformHost) return createHostP2pTransport(num_ranks);
    if (platform == kPlatformCuda) return te4j_create_cuda_p2p_transport(device, num_ranks);
    return newUnavailableP2pTransport(platform, kInvalidArgument,
                                      "P2pTransport.create: unknown platform " +
                                          std::to_string(platform) + " (0 = host, 1 = cuda)");
  } catch (...) {
    return nullptr;  // std::bad_alloc from a message string: the documented nullptr case
  }
}

}  // namespace te4j
