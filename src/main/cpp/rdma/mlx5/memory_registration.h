// memory_registration.h — registering the symmetric buffer with the NIC (an MR: lkey, rkey).
//
// Host memory: ibv_reg_mr. GPU memory: first a dma-buf of the range (ibv_reg_dmabuf_mr, the
// upstream path: open GPU kernel module, no extra module), then a plain ibv_reg_mr of the
// device pointer, which only works with the nvidia-peermem module loaded.
#pragma once

#if defined(TE4J_HAVE_RDMA_CORE_HEADERS)

#include <cstddef>
#include <cstdint>
#include <string>

#include "rdma/mlx5/verbs_api.h"

namespace te4j {
namespace rdma {

/// Local write, remote write / read / atomic: what te4j's WQEs and their peers need.
int windowAccessFlags();

/// Where a GPU range's dma-buf comes from (gpuDmabufFd in the library; tests pass fakes).
using DmabufSource = int (*)(int device, void* ptr, size_t bytes, uint64_t* offset,
                             std::string* why);

struct Registration {
  ibv_mr* mr = nullptr;
  bool dmabuf = false;  // registered through a dma-buf (else ibv_reg_mr)
  std::string note;     // why the dma-buf path was not taken (GPU memory only)
};

/// Registers [ptr, ptr + bytes). gpu_dmabuf: nullptr for host memory, else the dma-buf source
/// of device `device`. Returns 0, or -1 with the cause and its fix in *why.
int registerRegion(const VerbsApi& api, ibv_pd* pd, void* ptr, size_t bytes,
                   DmabufSource gpu_dmabuf, int device, Registration* out, std::string* why);

/// The errno of a failed registration, with the usual fix (locked-memory limit...).
std::string registrationErrorText(int err);

}  // namespace rdma
}  // namespace te4j

#endif  // TE4J_HAVE_RDMA_CORE_HEADERS
