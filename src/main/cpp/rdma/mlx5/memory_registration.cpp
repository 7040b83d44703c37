// memory_registration.cpp — see memory_registration.h.
#if defined(TE4J_HAVE_RDMA_CORE_HEADERS)

#include "rdma/mlx5/memory_registration.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace te4j {
namespace rdma {

int windowAccessFlags() {
  return IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
         IBV_ACCESS_REMOTE_ATOMIC;
}

std::string registrationErrorText(int err) {
  std::string text = std::string(std::strerror(err)) + " (errno " + std::to_string(err) + ")";
  if (err == ENOMEM || err == EPERM || err == EAGAIN)
    text +=
        "; fix: raise the locked-memory limit (ulimit -l unlimited, or LimitMEMLOCK=infinity "
        "for a service; containers: --ulimit memlock=-1)";
  return text;
}

int registerRegion(const VerbsApi& api, ibv_pd* pd, void* ptr, size_t bytes,
                   DmabufSource gpu_dmabuf, int device, Registration* out, std::string* why) {
  const int access = windowAccessFlags();
  *out = Registration();
  std::string dmabuf_cause;
  if (gpu_dmabuf != nullptr) {
    if (api.reg_dmabuf_mr == nullptr) {
      dmabuf_cause = "libibverbs lacks ibv_reg_dmabuf_mr (rdma-core older than 34)";
    } else {
      uint64_t offset = 0;
      const int fd = gpu_dmabuf(device, ptr, bytes, &offset, &dmabuf_cause);
      if (fd >= 0) {
        ibv_mr* mr = api.reg_dmabuf_mr(pd, offset, bytes, (uint64_t)(uintptr_t)ptr, fd, access);
        const int err = errno;
        close(fd);  // the MR holds its own reference to the dma-buf
        if (mr != nullptr) {
          out->mr = mr;
          out->dmabuf = true;
          return 0;
        }
        dmabuf_cause = "ibv_reg_dmabuf_mr failed: " + std::string(std::strerror(err));
      }
    }
    out->note = dmabuf_cause;
  }
  ibv_mr* mr = api.reg_mr(pd, ptr, bytes, access);
  if (mr != nullptr) {
    out->mr = mr;
    return 0;
  }
  const int err = errno;
  if (gpu_dmabuf != nullptr) {
    *why = "cannot register GPU memory with the NIC: no dma-buf or peer-memory support (dma-buf: " +
           dmabuf_cause + "; ibv_reg_mr of the device pointer: " + std::strerror(err) +
           "); fix: load nvidia-peermem (modprobe nvidia-peermem), or use the open GPU kernel "
           "module (nvidia-open) on Linux >= 5.12 for dma-buf";
  } else {
    *why =
        "ibv_reg_mr of " + std::to_string(bytes) + " bytes failed: " + registrationErrorText(err);
  }
  return -1;
}

}  // namespace rdma
}  // namespace te4j

#endif  // TE4J_HAVE_RDMA_CORE_HEADERS
