// host_p2p_transport.h — factory of the host-platform P2pTransport (memfd shared memory).
// Private to libte4j.
#pragma once

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

}  // namespace te4j
