// control_buffer.cpp — see control_buffer.h.
#if defined(TE4J_HAVE_RDMA_CORE_HEADERS)

#include "rdma/mlx5/control_buffer.h"

#include <cerrno>

#include "rdma/mlx5/memory_registration.h"

namespace te4j {
namespace rdma {

namespace {
constexpr uint64_t k4KiBPages = 1ull << 12;  // pgsz_bitmap: bit n allows 2^n-byte pages
}  // namespace

bool ControlBuffer::registerWholeBuffer(ibv_context* ctx, std::string* why) {
  mlx5dv_devx_umem_in in{};
  in.addr = host_;
  in.size = bytes_;
  in.access = IBV_ACCESS_LOCAL_WRITE;
  in.pgsz_bitmap = k4KiBPages;
  errno = 0;
  mlx5dv_devx_umem* umem = api_->devx_umem_reg_ex(ctx, &in);
  if (umem == nullptr) {
    *why = "mlx5dv_devx_umem_reg_ex (4 KiB pages) of the control buffer (" +
           std::to_string(bytes_) +
           " bytes) failed: " + registrationErrorText(errno != 0 ? errno : ENOMEM);
    return false;
  }
  umems_.push_back(Part{0, bytes_, umem});
  return true;
}

bool ControlBuffer::registerParts(ibv_context* ctx, const std::vector<size_t>& parts,
                                  std::string* why) {
  for (size_t i = 0; i < parts.size(); ++i) {
    const size_t end = i + 1 < parts.size() ? parts[i + 1] : bytes_;
    if (parts[i] >= end || end > bytes_) {
      *why = "control buffer parts are not ascending inside the buffer";
      deregisterUmems();
      return false;
    }
    errno = 0;
    mlx5dv_devx_umem* umem =
        api_->devx_umem_reg(ctx, host_ + parts[i], end - parts[i], IBV_ACCESS_LOCAL_WRITE);
    if (umem == nullptr) {
      *why = "mlx5dv_devx_umem_reg of control buffer part " + std::to_string(i) + " (" +
             std::to_string(end - parts[i]) +
             " bytes) failed: " + registrationErrorText(errno != 0 ? errno : ENOMEM);
      deregisterUmems();
      return false;
    }
    umems_.push_back(Part{parts[i], end - parts[i], umem});
  }
  return true;
}

void ControlBuffer::deregisterUmems() {
  for (Part& p : umems_) api_->devx_umem_dereg(p.umem);
  umems_.clear();
}

UmemRef ControlBuffer::umemAt(size_t offset) const {
  for (const Part& p : umems_) {
    if (offset >= p.start && offset < p.start + p.bytes)
      return UmemRef{p.umem->umem_id, offset - p.start};
  }
  return UmemRef{};
}

bool ControlBuffer::allocate(MemoryPort* memory, const VerbsApi* api, ibv_context* ctx, ibv_pd* pd,
                             size_t bytes, const std::vector<size_t>& parts, std::string* why) {
  release();
  memory_ = memory;
  api_ = api;
  void* host = nullptr;
  void* dev = nullptr;
  std::string err;
  if (memory->allocControl(bytes, &host, &dev, &err) != 0) {
    *why = "control buffer of " + std::to_string(bytes) + " bytes: " + err;
    return false;
  }
  host_ = (uint8_t*)host;
  device_ = (uint8_t*)dev;
  bytes_ = bytes;
  std::string whole;
  const bool registered = (api->devx_umem_reg_ex != nullptr && registerWholeBuffer(ctx, &whole)) ||
                          registerParts(ctx, parts, why);
  if (!registered) {
    if (!whole.empty()) *why = whole + "; then " + *why;
    release();
    return false;
  }
  errno = 0;
  mr_ = api->reg_mr(pd, host_, bytes_, IBV_ACCESS_LOCAL_WRITE);
  if (mr_ == nullptr) {
    *why = "ibv_reg_mr of the control buffer failed: " +
           registrationErrorText(errno != 0 ? errno : ENOMEM);
    release();
    return false;
  }
  return true;
}

void ControlBuffer::release() {
  if (mr_ != nullptr) api_->dereg_mr(mr_);
  if (api_ != nullptr) deregisterUmems();
  if (host_ != nullptr) memory_->freeControl(host_);
  mr_ = nullptr;
  host_ = device_ = nullptr;
  bytes_ = 0;
}

}  // namespace rdma
}  // namespace te4j

#endif  // TE4J_HAVE_RDMA_CORE_HEADERS
