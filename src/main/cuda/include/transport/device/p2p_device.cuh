// p2p_device.cuh — the P2P (NVLink / shared-memory) part of the device context.
//
// Field names and types are upstream Mooncake's, so a context assembled field by field from
// P2pTransport's tables (upstream's way) is the same context te4j's makeCommCtx fills.
#pragma once

#include <stdint.h>

#include "platform.cuh"
#include "transport/device/device_ops.cuh"

namespace mooncake {
namespace device {

/// Tables built by P2pTransport::importPeerHandles, in platform memory.
///   available[r]  1 when rank r's buffer is mapped here (own rank included), else 0
///   peer_ptrs[r]  the local address of rank r's symmetric buffer (own rank: local_base)
///   local_base    this rank's symmetric buffer; recv_ptr - local_base is the symmetric offset
struct P2PContext {
  const int32_t* available;
  void* const* peer_ptrs;
  void* local_base;
};

/// Whether plain loads/stores reach rank's buffer: marked available and actually mapped (a
/// context without tables, all zero, reaches nobody this way).
MC_DEVICE_INLINE bool mc_p2p_available(const P2PContext& p2p, int rank) {
  return p2p.available != nullptr && p2p.available[rank] != 0 && p2p.peer_ptrs != nullptr &&
         p2p.peer_ptrs[rank] != nullptr;
}

/// The peer-mapped address of `local_ptr` (an address inside local_base's buffer) on `rank`.
MC_DEVICE_INLINE void* mc_p2p_peer_ptr(const P2PContext& p2p, int rank, const void* local_ptr) {
  const uintptr_t offset = (uintptr_t)local_ptr - (uintptr_t)p2p.local_base;
  return (void*)((uintptr_t)p2p.peer_ptrs[rank] + offset);
}

/// Upstream's P2P signal: a release STORE of val into rank's copy of local_sig_ptr (one writer
/// per word; te4j's counting signal is mc_signal on a uint32_t word, an add).
MC_DEVICE_INLINE void mc_p2p_signal(const P2PContext& p2p, int rank, const int* local_sig_ptr,
                                    int32_t val) {
  mc_st_release((const int*)mc_p2p_peer_ptr(p2p, rank, local_sig_ptr), val);
}

}  // namespace device
}  // namespace mooncake
