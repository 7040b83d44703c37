// cuda_memory_port_nocuda.cpp — makeCudaMemoryPort for builds without CUDA: CMake takes this file
// instead of the folder's .cu
#include "rdma/memory_port.h"

namespace te4j {
namespace rdma {

std::unique_ptr<MemoryPort> makeCudaMemoryPort(int, std::string* err) {
  *err =
      "this te4j build has no CUDA support (built without nvcc): the software NIC cannot "
      "reach GPU memory";
  return nullptr;
}

}  // namespace rdma
}  // namespace te4j
