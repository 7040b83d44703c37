// cuda_memory_port.cu — the software NIC's access to GPU memory (CUDA build).
// Not implemented yet: the software NIC runs on the host platform only until this lands.
#include "../../cpp/src/rdma/memory_port.h"

namespace te4j {
namespace rdma {

std::unique_ptr<MemoryPort> makeCudaMemoryPort(int, std::string* err) {
  *err = "the software NIC cannot reach GPU memory yet (CUDA memory port not implemented): use the "
         "host platform for RDMA, or P2P between GPUs";
  return nullptr;
}

}  // namespace rdma
}  // namespace te4j
