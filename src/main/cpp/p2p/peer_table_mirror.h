// peer_table_mirror.h — host copies of the CUDA windows' peer tables, keyed by the device table
// pointer a CommCtx carries, so that host-side code (the op stream's copy-engine put) can find a
// rank's mapped address without reading device memory.
//
// CudaP2pTransport publishes a window's tables when it uploads them and withdraws them before
// freeing them; a lookup under the registry's lock therefore sees either the live tables or
// nothing (then the caller falls back to a kernel, which resolves the route on the device).
// The rank's route is not here: it is the context's (McRankRoute,
// transport/device/comm_device.cuh), and this mirror only gives the address a route to a mapped
// rank needs on the host.
#pragma once

#include <cstddef>
#include <vector>

namespace te4j {
namespace peer_tables {

/// Publishes the tables whose device copy is `device_peer_ptrs` (replaces an earlier entry).
void publish(const void* device_peer_ptrs, const void* local_base, std::size_t window_bytes,
             const std::vector<int>& available, const std::vector<void*>& peer_ptrs);
/// Withdraws them (before the device copy is freed).
void withdraw(const void* device_peer_ptrs);
/// The address, mapped in this process, of [local_ptr, local_ptr + nbytes) of the window on
/// `rank`: true with *mapped set, or false when the tables are unknown, the rank is not mapped
/// here, or the range is not inside the window.
bool translate(const void* device_peer_ptrs, int rank, const void* local_ptr, std::size_t nbytes,
               void** mapped);

}  // namespace peer_tables
}  // namespace te4j
