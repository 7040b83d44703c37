// roce_mac.cpp — see roce_mac.h.
#if defined(TE4J_HAVE_RDMA_CORE_HEADERS)

#include "rdma/mlx5/roce_mac.h"

#include <arpa/inet.h>

#include <cerrno>
#include <cstring>

namespace te4j {
namespace rdma {

namespace {

std::string gidText(const uint8_t gid[16]) {
  char text[INET6_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET6, gid, text, sizeof(text));
  return text;
}

}  // namespace

bool resolveRoceMac(const VerbsApi& api, ibv_pd* pd, uint8_t port, int sgid_index,
                    const uint8_t rgid[16], uint8_t mac[6], std::string* why) {
  ibv_ah_attr attr;
  std::memset(&attr, 0, sizeof(attr));
  attr.is_global = 1;
  attr.port_num = port;
  attr.grh.sgid_index = (uint8_t)sgid_index;
  attr.grh.hop_limit = 64;
  std::memcpy(attr.grh.dgid.raw, rgid, 16);
  errno = 0;
  ibv_ah* ah = api.create_ah(pd, &attr);
  if (ah == nullptr) {
    const int err = errno != 0 ? errno : EHOSTUNREACH;
    *why = "cannot resolve the MAC address of " + gidText(rgid) +
           " (ibv_create_ah: " + std::strerror(err) +
           "); fix: the peer's address must be reachable from this port's "
           "netdev (check with ping / ip neigh)";
    return false;
  }
  mlx5dv_ah dv_ah{};
  mlx5dv_obj obj{};
  obj.ah.in = ah;
  obj.ah.out = &dv_ah;
  const int rc = api.dv_init_obj(&obj, MLX5DV_OBJ_AH);
  if (rc == 0 && dv_ah.av != nullptr) std::memcpy(mac, dv_ah.av->rmac, 6);
  api.destroy_ah(ah);
  if (rc != 0 || dv_ah.av == nullptr) {
    *why = "mlx5dv_init_obj(AH) failed for " + gidText(rgid);
    return false;
  }
  return true;
}

}  // namespace rdma
}  // namespace te4j

#endif  // TE4J_HAVE_RDMA_CORE_HEADERS
