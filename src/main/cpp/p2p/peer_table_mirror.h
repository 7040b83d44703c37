// peer_table_mirror.h — host copies of the CUDA windows' peer tables, keyed by the device table
// pointer a CommCtx carries, so that host-side code (the op stream's copy-engine put) can find a
// rank's mapped address without reading device memory.
//
// CudaP2pTransport publishes a window's tables when it uploads them and withdraws them before
// freeing them; a lookup under the registry's lock therefore sees either the live tables or
// nothing (then the caller falls back to a kernel, which resolves the route on the device).
// With the tables it publishes each mapped rank's route, decided once when the window is
// connected: the op stream picks a put's body path by it (stream/body_path.h).
#pragma once

#include <cstddef>
#include <vector>

namespace te4j {
namespace peer_tables {

/// How this process reaches a rank's window through the tables.
enum Route : int {
  kRouteUnmapped = 0,    // not through them (RDMA, or no mapping)
  kRouteSameDevice = 1,  // memory of the own device (the own rank, or a rank sharing the GPU)
  kRoutePeerDevice = 2,  // memory of another GPU, through peer access (NVLink or PCIe)
};

/// Publishes the tables whose device copy is `device_peer_ptrs` (replaces an earlier entry);
/// routes[r] is rank r's Route (ranks beyond routes.size() are kRoutePeerDevice when mapped).
void publish(const void* device_peer_ptrs, const void* local_base, std::size_t window_bytes,
             const std::vector<int>& available, const std::vector<void*>& peer_ptrs,
             const std::vector<int>& routes);
/// Withdraws them (before the device copy is freed).
void withdraw(const void* device_peer_ptrs);
/// The address, mapped in this process, of [local_ptr, local_ptr + nbytes) of the window on
/// `rank`: true with *mapped set, or false when the tables are unknown, the rank is not mapped
/// here, or the range is not inside the window. With `route`, also the rank's Route.
bool translate(const void* device_peer_ptrs, int rank, const void* local_ptr, std::size_t nbytes,
               void** mapped, Route* route = nullptr);

}  // namespace peer_tables
}  // namespace te4j
