// control_buffer.cpp — see control_buffer.h.
#if defined(TE4J_HAVE_RDMA_CORE_HEADERS)

#include "control_buffer.h"

#include <cerrno>

#include "memory_registration.h"

namespace te4j {
namespace rdma {

bool ControlBuffer::allocate(MemoryPort* memory, const VerbsApi* api, ibv_context* ctx,
                             ibv_pd* pd, size_t bytes, std::string* why) {
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
  errno = 0;
  umem_ = api->devx_umem_reg(ctx, host_, bytes_, IBV_ACCESS_LOCAL_WRITE);
  if (umem_ == nullptr) {
    *why = "mlx5dv_devx_umem_reg of the control buffer (" + std::to_string(bytes) +
           " bytes) failed: " + registrationErrorText(errno != 0 ? errno : ENOMEM);
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
  if (umem_ != nullptr) api_->devx_umem_dereg(umem_);
  if (host_ != nullptr) memory_->freeControl(host_);
  mr_ = nullptr;
  umem_ = nullptr;
  host_ = device_ = nullptr;
  bytes_ = 0;
}

}  // namespace rdma
}  // namespace te4j

#endif  // TE4J_HAVE_RDMA_CORE_HEADERS
