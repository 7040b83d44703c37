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

/// Upstream Mooncake's constructor from a kernel's raw arguments: the P2P tables of
/// P2pTransport (availableTablePtr, peerPtrsTablePtr) and the RDMA tables of RdmaTransport
/// (raddrsPtr, rkeysPtr, qpDevCtxsPtr; nullptr for P2P only). num_ranks bounds dst_rank;
/// num_qps is not used (upstream's kernels pass a fixed maximum there, not the table's size).
/// te4j's other fields stay 0 and are derived where used (ibgda_device.cuh, routing.cuh), and
/// the error record is absent (error_record.cuh says what that means).
MC_HOST_DEVICE inline CommCtx make_comm_ctx(void* gdr_buffer, const int32_t* nvlink_available,
                                            void* const* ipc_peer_ptrs, void* raddrs, void* rkeys,
                                            void* qp_devctxs, const void* rdma_send_signal_buffer,
                                            const void* rdma_recv_signal_buffer, int rank,
                                            int num_ranks, int num_qps) {
  (void)num_qps;
  CommCtx ctx{};
  ctx.rank = rank;
  ctx.p2p.available = nvlink_available;
  ctx.p2p.peer_ptrs = ipc_peer_ptrs;
  ctx.p2p.local_base = gdr_buffer;
  ctx.ibgda.qp_devctxs = (mlx5gda_qp_devctx*)qp_devctxs;
  ctx.ibgda.raddrs = (const uint64_t*)raddrs;
  ctx.ibgda.rkeys = (const uint32_t*)rkeys;
  ctx.ibgda.local_atomic_base = rdma_send_signal_buffer;
  ctx.ibgda.remote_atomic_base = rdma_recv_signal_buffer;
  ctx.ibgda.num_ranks = num_ranks > 0 ? num_ranks : 0;
  return ctx;
}

}  // namespace device
}  // namespace mooncake

// The routing primitives (mc_route_put, mc_signal, mc_red_add) follow in detail/routing.cuh,
// written against the structs above; the LL put (mc_ll_put, mc_ll_wait) builds on them.
#include "transport/device/detail/routing.cuh"
#include "ll_put.cuh"
