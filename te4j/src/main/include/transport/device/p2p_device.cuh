// p2p_device.cuh — the P2P (NVLink / shared-memory) part of the device context.
#pragma once

#include <stdint.h>

#include "platform.cuh"

namespace mooncake {
namespace device {

/// Tables built by P2pTransport::importPeerHandles, in platform memory.
///   available[r]  1 when rank r's buffer is mapped here (own rank included), else 0
///   peer_ptrs[r]  the local address of rank r's symmetric buffer (own rank: local_base)
///   local_base    this rank's symmetric buffer; recv_ptr - local_base is the symmetric offset
struct P2PContext {
  int* available;
  void** peer_ptrs;
  void* local_base;
};

MC_DEVICE_INLINE bool mc_p2p_available(const P2PContext& p2p, int rank) {
  return p2p.available != nullptr && p2p.available[rank] != 0;
}

/// The peer-mapped address of `local_ptr` (an address inside local_base's buffer) on `rank`.
MC_DEVICE_INLINE void* mc_p2p_peer_ptr(const P2PContext& p2p, int rank, const void* local_ptr) {
  const uintptr_t offset = (uintptr_t)local_ptr - (uintptr_t)p2p.local_base;
  return (void*)((uintptr_t)p2p.peer_ptrs[rank] + offset);
}

}  // namespace device
}  // namespace mooncake
