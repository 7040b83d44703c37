// cuda_bridge_nocuda.cpp — cuda_bridge.h for a build without nvcc: no device, and every CUDA
// request is refused with the reason and the fix.
#include <string>

#include "core/cuda_bridge.h"
#include "core/unavailable.h"

namespace {
const char kNoCuda[] =
    "te4j was built without CUDA (nvcc was not found at build time); fix: build te4j on a "
    "machine with the CUDA toolkit (nvcc on PATH) or use the te4j-platform jars";
}

te4j::P2pTransport* te4j_create_cuda_p2p_transport(int, int) {
  return te4j::newUnavailableP2pTransport(te4j::kPlatformCuda, te4j::kUnavailable, kNoCuda);
}

te4j::OpStream* te4j_create_cuda_op_stream(int, void*, bool) {
  return te4j::newUnavailableOpStream(te4j::kPlatformCuda, te4j::kUnavailable, kNoCuda);
}

namespace te4j {
namespace cuda_bridge {

bool built() { return false; }

int deviceCount(std::string*) { return 0; }

int currentDevice(std::string* error) {
  *error = kNoCuda;
  return kUnavailable;
}

int canAccessPeer(int, int, std::string* error) {
  *error = kNoCuda;
  return kUnavailable;
}

int copy(int, void*, const void*, std::size_t, std::string* error) {
  *error = kNoCuda;
  return kUnavailable;
}

int fill(int, void*, int, std::size_t, std::string* error) {
  *error = kNoCuda;
  return kUnavailable;
}

// Without the CUDA platform no CUDA memory is made here: everything is plain host memory.
int pointerKind(const void*, int* device, std::string*) {
  *device = -1;
  return kMemoryPageableHost;
}

std::size_t releaseIdleStreamWords() { return 0; }
std::size_t releaseIdleBatchResources() { return 0; }

void appendAvailability(std::string* report) {
  *report += "cuda.unavailable=";
  *report += kNoCuda;
  *report += "\n";
}

}  // namespace cuda_bridge
}  // namespace te4j
