// control_buffer.h — the memory the NIC and device code share: send rings, CQs, doorbell
// records, fetch scratch (layout: control_layout.h).
//
// Host platform: page-aligned ordinary memory. CUDA: pinned host memory mapped into the GPU
// (MemoryPort::allocControl): kernels write WQEs and poll CQEs there, the NIC reads and writes
// it over PCIe. Registered twice: as a DevX umem (CREATE_CQ / CREATE_QP buffers) and as an MR
// (the fetch scratch's lkey).
#pragma once

#if defined(TE4J_HAVE_RDMA_CORE_HEADERS)

#include <cstddef>
#include <cstdint>
#include <string>

#include "rdma/memory_port.h"
#include "verbs_api.h"

namespace te4j {
namespace rdma {

class ControlBuffer {
 public:
  ~ControlBuffer() { release(); }

  /// Allocates and registers `bytes`; false with *why (nothing left allocated).
  bool allocate(MemoryPort* memory, const VerbsApi* api, ibv_context* ctx, ibv_pd* pd,
                size_t bytes, std::string* why);
  /// Deregisters and frees (idempotent).
  void release();

  bool allocated() const { return host_ != nullptr; }
  uint8_t* host() const { return host_; }      // the NIC's and the proxy's view
  uint8_t* device() const { return device_; }  // device code's view (equal on the host platform)
  size_t bytes() const { return bytes_; }
  uint32_t umemId() const { return umem_ != nullptr ? umem_->umem_id : 0; }
  uint32_t lkey() const { return mr_ != nullptr ? mr_->lkey : 0; }

 private:
  MemoryPort* memory_ = nullptr;
  const VerbsApi* api_ = nullptr;
  uint8_t* host_ = nullptr;
  uint8_t* device_ = nullptr;
  size_t bytes_ = 0;
  mlx5dv_devx_umem* umem_ = nullptr;
  ibv_mr* mr_ = nullptr;
};

}  // namespace rdma
}  // namespace te4j

#endif  // TE4J_HAVE_RDMA_CORE_HEADERS
