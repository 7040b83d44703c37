// comm_device.cuh — the communication context handed to kernels by value, and the routing
// primitives built on it (mc_route_put, mc_signal, mc_red_add, the LL put). Single source: g++
// and nvcc.
#pragma once

#include <stdint.h>

#include "platform.cuh"
#include "device_ops.cuh"
#include "p2p_device.cuh"
#include "ibgda_device.cuh"

namespace mooncake {
namespace device {

/// Everything a kernel needs to reach every rank: P2P tables, RDMA tables, own rank.
/// Passed to kernels by value (it lives in the kernel's parameter space).
struct CommCtx {
  P2PContext p2p;
  IbgdaContext ibgda;
  int rank;
};

MC_HOST_DEVICE inline CommCtx make_comm_ctx(const P2PContext& p2p, const IbgdaContext& ibgda,
                                            int rank) {
  CommCtx ctx;
  ctx.p2p = p2p;
  ctx.ibgda = ibgda;
  ctx.rank = rank;
  return ctx;
}

}  // namespace device
}  // namespace mooncake

// The routing primitives (mc_route_put, mc_signal, mc_red_add) follow in detail/routing.cuh,
// written against the structs above; the LL put (mc_ll_put, mc_ll_wait) builds on them.
#include "transport/device/detail/routing.cuh"
#include "ll_put.cuh"
