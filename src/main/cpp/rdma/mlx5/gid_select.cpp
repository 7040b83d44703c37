// gid_select.cpp — see gid_select.h.
#if defined(TE4J_HAVE_RDMA_CORE_HEADERS)

#include "rdma/mlx5/gid_select.h"

#include <cstdlib>
#include <cstring>
#include <fstream>

namespace te4j {
namespace rdma {

namespace {

bool isZero(const ibv_gid& g) {
  for (uint8_t b : g.raw)
    if (b != 0) return false;
  return true;
}

// ::ffff:a.b.c.d
bool isIpv4Mapped(const ibv_gid& g) {
  for (int i = 0; i < 10; ++i)
    if (g.raw[i] != 0) return false;
  return g.raw[10] == 0xff && g.raw[11] == 0xff;
}

// fe80::/10 reaches only the local link: not usable across routers.
bool isLinkLocal(const ibv_gid& g) { return g.raw[0] == 0xfe && (g.raw[1] & 0xc0) == 0x80; }

// The kernel's text for the entry's type ("IB/RoCE v1" or "RoCE v2"); "" when unreadable
// (an empty entry reads as EINVAL).
std::string gidType(const std::string& root, const std::string& dev, int port, int index) {
  std::ifstream in(root + "/" + dev + "/ports/" + std::to_string(port) + "/gid_attrs/types/" +
                   std::to_string(index));
  std::string line;
  if (!in || !std::getline(in, line)) return "";
  return line;
}

}  // namespace

bool selectRoceGid(const VerbsApi& api, ibv_context* ctx, const std::string& device_name,
                   uint8_t port, int gid_table_len, int* index, ibv_gid* gid, std::string* why) {
  const std::string where = device_name + " port " + std::to_string(port);
  if (const char* forced = std::getenv("TE4J_RDMA_GID_INDEX")) {
    char* end = nullptr;
    const long i = std::strtol(forced, &end, 10);
    if (end == forced || *end != '\0' || i < 0 || i >= gid_table_len) {
      *why = std::string("TE4J_RDMA_GID_INDEX='") + forced + "' is not a GID index of " + where +
             " (0.." + std::to_string(gid_table_len - 1) + "; see `show_gids` or sysfs gid_attrs)";
      return false;
    }
    if (api.query_gid(ctx, port, (int)i, gid) != 0 || isZero(*gid)) {
      *why = "TE4J_RDMA_GID_INDEX=" + std::to_string(i) + " is an empty GID entry of " + where;
      return false;
    }
    *index = (int)i;
    return true;
  }
  int global_index = -1;
  ibv_gid global_gid{};
  int roce_v2_entries = 0;
  for (int i = 0; i < gid_table_len; ++i) {
    if (gidType(api.sysfs_root, device_name, port, i) != "RoCE v2") continue;
    ++roce_v2_entries;
    ibv_gid g{};
    if (api.query_gid(ctx, port, i, &g) != 0 || isZero(g)) continue;
    if (isIpv4Mapped(g)) {
      *index = i;
      *gid = g;
      return true;
    }
    if (global_index < 0 && !isLinkLocal(g)) {
      global_index = i;
      global_gid = g;
    }
  }
  if (global_index >= 0) {
    *index = global_index;
    *gid = global_gid;
    return true;
  }
  *why = "no RoCE v2 GID with an IPv4 or global IPv6 address on " + where + " (" +
         std::to_string(roce_v2_entries) + " RoCE v2 entries in " + api.sysfs_root + "/" +
         device_name + "/ports/" + std::to_string(port) +
         "/gid_attrs/types); fix: give the port's netdev an IP address, or set "
         "TE4J_RDMA_GID_INDEX to the entry to use";
  return false;
}

}  // namespace rdma
}  // namespace te4j

#endif  // TE4J_HAVE_RDMA_CORE_HEADERS
