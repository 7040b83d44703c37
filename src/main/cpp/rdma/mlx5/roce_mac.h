// roce_mac.h — the Ethernet address a RoCE QP sends to.
//
// A DevX INIT2RTR carries the destination MAC in the address path: the firmware does not
// resolve it. The kernel does, when an address handle is created for the destination GID
// (neighbour lookup through the port's netdev); mlx5dv_init_obj(AH) exposes the result.
#pragma once

#if defined(TE4J_HAVE_RDMA_CORE_HEADERS)

#include <cstdint>
#include <string>

#include "rdma/mlx5/verbs_api.h"

namespace te4j {
namespace rdma {

/// Fills mac[6] for destination GID rgid reached from (port, sgid_index); false with *why.
bool resolveRoceMac(const VerbsApi& api, ibv_pd* pd, uint8_t port, int sgid_index,
                    const uint8_t rgid[16], uint8_t mac[6], std::string* why);

}  // namespace rdma
}  // namespace te4j

#endif  // TE4J_HAVE_RDMA_CORE_HEADERS
