// op_stream_factory.cpp — OpStream::create / wrapCuda: picks the platform's implementation.
// Without nvcc the CUDA one is core/cuda_bridge_nocuda.cpp's, a stream whose status() says why.
#include <string>

#include "core/cuda_bridge.h"
#include "core/unavailable.h"
#include "te4j/api.h"
#include "te4j/tuning.h"

te4j::OpStream* te4j_create_host_op_stream();  // host_op_stream.cpp

namespace te4j {

OpStream* OpStream::create(int platform, int device) {
  if (const char* why = tuning::environmentError()) {
    return newUnavailableOpStream(platform, kInvalidArgument, why);
  }
  switch (platform) {
    case kPlatformHost: return te4j_create_host_op_stream();
    case kPlatformCuda: return te4j_create_cuda_op_stream(device, nullptr, true);
    default:
      return newUnavailableOpStream(platform, kInvalidArgument,
                                    "OpStream::create: unknown platform " +
                                        std::to_string(platform) +
                                        " (expected 0 = host or 1 = CUDA)");
  }
}

OpStream* OpStream::wrapCuda(int device, void* cuda_stream) {
  if (const char* why = tuning::environmentError()) {
    return newUnavailableOpStream(kPlatformCuda, kInvalidArgument, why);
  }
  return te4j_create_cuda_op_stream(device, cuda_stream, false);
}

}  // namespace te4j
