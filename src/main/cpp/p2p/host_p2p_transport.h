// host_p2p_transport.h — factory of the host-platform P2pTransport (memfd shared memory).
// Private to libte4j.
#pragma once

#include <stdint.h>

#include <cstddef>

#include "te4j/api.h"

namespace te4j {

/// Handle blob of the host platform, in int32 words after the common header (handle_blob.h):
///   10     fd       the owner's memfd descriptor number
///   11..14 token    128-bit random token; the memfd is named "te4j-<token as 32 hex digits>"
constexpr int kHostFdAt = 10;
constexpr int kHostTokenAt = 11;
constexpr int kHostHandleInts = 15;

/// Creates the host transport; nullptr only when memory is exhausted. num_ranks is 1..64,
/// otherwise status() is kInvalidArgument.
P2pTransport* createHostP2pTransport(int num_ranks);

/// The hidden page every host segment has after its user bytes (rounded up to a page), shared by
/// every process that maps the segment. It lets a writer in one process wake a waiter parked in
/// another: a waiter counts itself in `waiters` before it parks with FUTEX_WAIT on a word of the
/// segment; a writer that finds the count non-zero after its atomic add calls FUTEX_WAKE on that
/// word. Without waiters a signal costs one extra load of a line that stays shared in caches.
struct HostSegmentControl {
  uint32_t waiters;  // threads parked on any word of this segment (GCC atomics, seq_cst)
};

/// Bytes a host segment of `bytes` user bytes occupies: the user bytes rounded up to a page, and
/// the control page.
std::size_t hostSegmentMapBytes(std::size_t bytes);

/// One-entry lookup cache of hostSegmentControl, owned by one thread (an op stream's executor).
struct HostControlCache {
  uint64_t generation = 0;  // 0: empty
  uintptr_t begin = 0;
  uintptr_t end = 0;
  HostSegmentControl* control = nullptr;
};

/// The control page of the host segment mapping that holds `addr`: a segment of any host
/// transport of this process or a peer's segment mapped by one of their windows; nullptr for
/// any other address. Valid while that mapping stays (the callers' ops keep it alive). A hit in
/// `cache` costs one atomic load; a miss takes the registry's lock.
HostSegmentControl* hostSegmentControl(const void* addr, HostControlCache* cache);

}  // namespace te4j
