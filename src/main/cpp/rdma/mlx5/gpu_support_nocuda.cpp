// gpu_support_nocuda.cpp — gpu_support.h for builds without CUDA: CMake takes this file instead of
// the folder's .cu
#include "rdma/mlx5/gpu_support.h"

namespace te4j {
namespace rdma {

namespace {
constexpr const char* kNoCuda = "this te4j build has no CUDA support (built without nvcc)";
}

int gpuDmabufFd(int, void*, size_t, uint64_t*, std::string* why) {
  *why = kNoCuda;
  return -1;
}

void* mapUarForGpu(int, void*, size_t, std::string* why) {
  *why = kNoCuda;
  return nullptr;
}

void unmapUarForGpu(int, void*) {}

int gpuDoorbellProbe(int, void*, uint64_t, uint32_t, uint64_t, std::string* why) {
  *why = kNoCuda;
  return 1;
}

std::string gpuPciBusId(int, std::string* why) {
  *why = kNoCuda;
  return "";
}

}  // namespace rdma
}  // namespace te4j
