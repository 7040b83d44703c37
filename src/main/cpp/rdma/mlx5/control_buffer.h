// control_buffer.h — the memory the NIC and device code share: send rings, CQs, doorbell
// records, fetch scratch (layout: control_layout.h).
//
// Host platform: page-aligned ordinary memory. CUDA: pinned host memory mapped into the GPU
// (MemoryPort::allocControl): kernels write WQEs and poll CQEs there, the NIC reads and writes
// it over PCIe. Registered twice: as DevX umem (CREATE_CQ / CREATE_QP buffers) and as an MR
// (the fetch scratch's lkey).
//
// The mailboxes address a umem in 4 KiB pages (log_page_size 0) at 4 KiB-granular offsets, so
// the umem must be built of 4 KiB pages. The legacy mlx5dv_devx_umem_reg lets the kernel pick
// larger pages when the memory is contiguous (IOMMU-merged, or a 64 KiB-page host such as
// Grace), and an object at a non-zero offset then lands elsewhere. So: one umem for the whole
// buffer through mlx5dv_devx_umem_reg_ex with pgsz_bitmap = 4 KiB; where that call is missing
// or refused, one legacy umem per object part (ring, CQ, records page), each used at offset 0.
#pragma once

#if defined(TE4J_HAVE_RDMA_CORE_HEADERS)

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "rdma/memory_port.h"
#include "rdma/mlx5/verbs_api.h"

namespace te4j {
namespace rdma {

/// Where an object of the control buffer lies for the NIC: a umem and an offset inside it.
struct UmemRef {
  uint32_t id = 0;
  uint64_t offset = 0;
};

class ControlBuffer {
 public:
  ~ControlBuffer() { release(); }

  /// Allocates and registers `bytes`; `parts` are the page-aligned starts of the objects in
  /// it (ascending, the first 0), used when each needs its own umem. False with *why (nothing
  /// left allocated).
  bool allocate(MemoryPort* memory, const VerbsApi* api, ibv_context* ctx, ibv_pd* pd, size_t bytes,
                const std::vector<size_t>& parts, std::string* why);
  /// Deregisters and frees (idempotent).
  void release();

  bool allocated() const { return host_ != nullptr; }
  uint8_t* host() const { return host_; }      // the NIC's and the proxy's view
  uint8_t* device() const { return device_; }  // device code's view (equal on the host platform)
  size_t bytes() const { return bytes_; }
  /// The umem and offset of buffer offset `offset` ({0, 0} outside every umem).
  UmemRef umemAt(size_t offset) const;
  /// True when the legacy call registered one umem per part (no 4 KiB page bitmap).
  bool perPartUmems() const { return umems_.size() > 1; }
  uint32_t lkey() const { return mr_ != nullptr ? mr_->lkey : 0; }

 private:
  MemoryPort* memory_ = nullptr;
  const VerbsApi* api_ = nullptr;
  uint8_t* host_ = nullptr;
  uint8_t* device_ = nullptr;
  struct Part {
    size_t start = 0;
    size_t bytes = 0;
    mlx5dv_devx_umem* umem = nullptr;
  };
  bool registerWholeBuffer(ibv_context* ctx, std::string* why);
  bool registerParts(ibv_context* ctx, const std::vector<size_t>& parts, std::string* why);
  void deregisterUmems();

  size_t bytes_ = 0;
  std::vector<Part> umems_;
  ibv_mr* mr_ = nullptr;
};

}  // namespace rdma
}  // namespace te4j

#endif  // TE4J_HAVE_RDMA_CORE_HEADERS
