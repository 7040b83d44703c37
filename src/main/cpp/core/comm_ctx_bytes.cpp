// comm_ctx_bytes.cpp — CommCtx as bytes for users' own kernels (te4j/module_api.h). The kernel
// parameter is the struct itself, copied with the size libte4j was built with, so Java never
// keeps a second description of the layout that could drift from the header.
#include <cstddef>
#include <cstring>
#include <string>

#include "te4j/module_api.h"
#include "transport/device/comm_device.cuh"

namespace te4j {

int64_t commCtxSize() { return static_cast<int64_t>(sizeof(mooncake::device::CommCtx)); }

std::string commCtxLayout() {
  using mooncake::device::CommCtx;
  return "size=" + std::to_string(sizeof(CommCtx)) + " align=" + std::to_string(alignof(CommCtx)) +
         " p2p=" + std::to_string(offsetof(CommCtx, p2p)) +
         " ibgda=" + std::to_string(offsetof(CommCtx, ibgda)) +
         " rank=" + std::to_string(offsetof(CommCtx, rank)) +
         " p2p.size=" + std::to_string(sizeof(mooncake::device::P2PContext)) +
         " ibgda.size=" + std::to_string(sizeof(mooncake::device::IbgdaContext));
}

int copyCommCtx(const mooncake::device::CommCtx* ctx, void* dst, int64_t capacity) {
  if (ctx == nullptr || dst == nullptr || capacity < commCtxSize()) return kInvalidArgument;
  std::memcpy(dst, ctx, sizeof(*ctx));
  return static_cast<int>(sizeof(*ctx));
}

}  // namespace te4j
