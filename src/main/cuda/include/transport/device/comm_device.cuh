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

/// Ranks a context can describe (te4j's windows hold at most this many: p2p/handle_blob.h).
constexpr int kMcMaxRanks = 64;

/// How this process reaches a rank's window: decided once per rank when the context is
/// connected (P2pTransport::makeCommCtx from the window's mappings, RdmaTransport::fillCommCtx
/// for the ranks no mapping reaches) and read by every op: the Java checks, the host executor,
/// the CUDA stream and the kernels. kMcRankRouteUnknown (0) marks a context built the upstream
/// way, whose routes mc_rank_route derives from the tables instead.
enum McRankRoute : uint8_t {
  kMcRankRouteUnknown = 0,
  kMcRankRouteSameDevice = 1,  // plain stores to memory of the own device (the own rank, a rank
                               // sharing the GPU; every mapped rank on the host platform)
  kMcRankRoutePeerDevice = 2,  // plain stores to another GPU's memory (NVLink or PCIe)
  kMcRankRouteRdma = 3,        // WQEs on the rank's QP
  kMcRankRouteNone = 4,        // nothing reaches the rank (ops record "no route")
};

/// Everything a kernel needs to reach every rank: P2P tables, RDMA tables, own rank, and each
/// rank's route. Passed to kernels by value (it lives in the kernel's parameter space, so a
/// route costs no memory load). The routes take 2 bits a rank (16 bytes for kMcMaxRanks): the
/// context is copied per op (kernel parameters, the host executor's queue), so it stays small.
struct CommCtx {
  P2PContext p2p;
  IbgdaContext ibgda;
  int rank;
  uint32_t routes_decided;  // 1: route_bits hold the routes; 0: built the upstream way
  uint64_t route_bits[2];   // rank r: bits 2(r%32).. of word r/32; 0 None, else the McRankRoute
};

/// The route to dst_rank decided when the context was connected, or kMcRankRouteUnknown (a
/// context built the upstream way, a rank outside the table). Reads only the context itself:
/// safe on the host for a context whose tables are in device memory.
MC_HOST_DEVICE inline int mc_decided_route(const CommCtx& ctx, int dst_rank) {
  if (ctx.routes_decided == 0 || dst_rank < 0 || dst_rank >= kMcMaxRanks) {
    return kMcRankRouteUnknown;
  }
  const int code = (int)((ctx.route_bits[dst_rank >> 5] >> (2 * (dst_rank & 31))) & 3u);
  return code == 0 ? (int)kMcRankRouteNone : code;
}

/// Records rank's route in ctx (host side, when the context is connected) and marks the
/// context's routes decided. A rank outside the table is ignored.
MC_HOST_DEVICE inline void mc_set_decided_route(CommCtx* ctx, int rank, int route) {
  if (rank < 0 || rank >= kMcMaxRanks) return;
  const uint64_t code =
      route == kMcRankRouteNone || route == kMcRankRouteUnknown ? 0u : (uint64_t)(route & 3);
  const int shift = 2 * (rank & 31);
  ctx->route_bits[rank >> 5] = (ctx->route_bits[rank >> 5] & ~(3ull << shift)) | (code << shift);
  ctx->routes_decided = 1;
}

/// The route to dst_rank: the decided one, else (a context built the upstream way) derived
/// from the tables as upstream does: the own rank, a P2P mapping, else RDMA when the context
/// has RDMA tables. The derivation reads the tables, so only code that may read them calls it.
MC_DEVICE_INLINE int mc_rank_route(const CommCtx& ctx, int dst_rank) {
  const int decided = mc_decided_route(ctx, dst_rank);
  if (decided != kMcRankRouteUnknown) return decided;
  if (dst_rank == ctx.rank) return kMcRankRouteSameDevice;
  if (mc_p2p_available(ctx.p2p, dst_rank)) return kMcRankRoutePeerDevice;
  return mc_rdma_available(ctx.ibgda) ? kMcRankRouteRdma : kMcRankRouteNone;
}

/// Whether plain stores reach dst_rank on this route.
MC_HOST_DEVICE inline bool mc_route_is_mapped(int route) {
  return route == kMcRankRouteSameDevice || route == kMcRankRoutePeerDevice;
}

MC_HOST_DEVICE inline CommCtx make_comm_ctx(const P2PContext& p2p, const IbgdaContext& ibgda,
                                            int rank) {
  CommCtx ctx{};
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
