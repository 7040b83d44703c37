// cuda_memory_port_stub.cpp — makeCudaMemoryPort for builds without CUDA (TE4J_WITH_CUDA unset);
// the CUDA build defines it in src/main/cuda/rdma/.
#include "memory_port.h"

#if !defined(TE4J_WITH_CUDA)
namespace te4j {
namespace rdma {

std::unique_ptr<MemoryPort> makeCudaMemoryPort(int, std::string* err) {
  *err = "this te4j build has no CUDA support (built without nvcc): the software NIC cannot "
         "reach GPU memory";
  return nullptr;
}

}  // namespace rdma
}  // namespace te4j
#endif
