// gid_select.h — the local GID a RoCE QP sends from.
//
// RoCE v2 (UDP/IP) is routable and is what ConnectX uses by default; its GID table holds one
// entry per IP address of the port's netdev, per RoCE version. te4j picks the first RoCE v2
// entry whose GID is an IPv4-mapped address, else the first with a global IPv6 address; the
// type of each entry is read from sysfs (<root>/<dev>/ports/<port>/gid_attrs/types/<index>).
// TE4J_RDMA_GID_INDEX=<n> overrides the choice (e.g. to pick one of several addresses).
#pragma once

#if defined(TE4J_HAVE_RDMA_CORE_HEADERS)

#include <string>

#include "rdma/mlx5/verbs_api.h"

namespace te4j {
namespace rdma {

/// Fills *index and *gid; false with the cause and its fix in *why.
bool selectRoceGid(const VerbsApi& api, ibv_context* ctx, const std::string& device_name,
                   uint8_t port, int gid_table_len, int* index, ibv_gid* gid, std::string* why);

}  // namespace rdma
}  // namespace te4j

#endif  // TE4J_HAVE_RDMA_CORE_HEADERS
