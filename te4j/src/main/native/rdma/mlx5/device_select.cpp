// device_select.cpp — see device_select.h.
#if defined(TE4J_HAVE_RDMA_CORE_HEADERS)

#include "device_select.h"

#include <cerrno>
#include <cstring>

namespace te4j {
namespace rdma {

std::string deviceListFailure(int err) {
  if (err == ENOSYS || err == ENOENT)
    return std::string("no mlx5 device (no RDMA device at all: ibv_get_device_list: ") +
           std::strerror(err) + "); the software NIC backend works without one";
  return std::string("ibv_get_device_list failed: ") + std::strerror(err) +
         " (fix: load the mlx5_ib kernel module, check /dev/infiniband permissions)";
}

bool isMlx5Device(const VerbsApi& api, ibv_device* device) {
  if (api.dv_is_supported != nullptr && api.dv_is_supported(device)) return true;
  const char* name = api.get_device_name(device);
  return name != nullptr && std::strncmp(name, "mlx5", 4) == 0;
}

std::vector<std::string> listMlx5Devices(const VerbsApi& api, std::string* why) {
  std::vector<std::string> names;
  int n = 0;
  ibv_device** list = api.get_device_list(&n);
  if (list == nullptr) {
    *why = deviceListFailure(errno);
    return names;
  }
  for (int i = 0; i < n; ++i) {
    if (!isMlx5Device(api, list[i])) continue;
    const char* name = api.get_device_name(list[i]);
    names.emplace_back(name != nullptr ? name : "?");
  }
  api.free_device_list(list);
  if (names.empty())
    *why = "no mlx5 device (ibverbs lists " + std::to_string(n) +
           " device(s), none mlx5); the software NIC backend works without one";
  return names;
}

ibv_device* findMlx5Device(const VerbsApi& api, ibv_device** list, int n,
                           const std::string& filter, std::string* why) {
  const bool any = filter.empty() || filter == "mlx5";
  std::string seen;
  for (int i = 0; i < n; ++i) {
    if (!isMlx5Device(api, list[i])) continue;
    const char* name = api.get_device_name(list[i]);
    const std::string s = name != nullptr ? name : "";
    if (any || s.compare(0, filter.size(), filter) == 0) return list[i];
    seen += (seen.empty() ? "" : ", ") + s;
  }
  if (seen.empty())
    *why = "no mlx5 device (ibverbs lists " + std::to_string(n) +
           " device(s), none mlx5); the software NIC backend works without one";
  else
    *why = "no mlx5 device matches '" + filter + "' (mlx5 devices here: " + seen +
           "; fix: pass one of those names or a prefix of it)";
  return nullptr;
}

}  // namespace rdma
}  // namespace te4j

#endif  // TE4J_HAVE_RDMA_CORE_HEADERS
