// device_select.cpp — see device_select.h.
#if defined(TE4J_HAVE_RDMA_CORE_HEADERS)

#include "rdma/mlx5/device_select.h"

#include <climits>
#include <cstdlib>
#include <cerrno>
#include <cstring>
#include <algorithm>

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

ibv_device* findMlx5Device(const VerbsApi& api, ibv_device** list, int n, const std::string& filter,
                           std::string* why) {
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

namespace {

std::vector<std::string> components(const std::string& path) {
  std::vector<std::string> parts;
  size_t i = 0;
  while (i < path.size()) {
    const size_t j = path.find('/', i);
    const size_t end = j == std::string::npos ? path.size() : j;
    if (end > i) parts.push_back(path.substr(i, end - i));
    i = end + 1;
  }
  return parts;
}

std::string resolved(const std::string& link) {
  char buf[PATH_MAX];
  return realpath(link.c_str(), buf) != nullptr ? std::string(buf) : std::string();
}

}  // namespace

int sysfsDistance(const std::string& a, const std::string& b) {
  if (a.empty() || b.empty()) return -1;
  const std::vector<std::string> x = components(a), y = components(b);
  size_t common = 0;
  while (common < x.size() && common < y.size() && x[common] == y[common]) ++common;
  return (int)(x.size() - common + y.size() - common);
}

std::string nicPciPath(const VerbsApi& api, const std::string& nic) {
  return resolved(api.sysfs_root + "/" + nic + "/device");
}

std::string pciFunctionPath(const VerbsApi& api, const std::string& bus_id) {
  return bus_id.empty() ? std::string() : resolved(api.pci_devices_root + "/" + bus_id);
}

std::vector<Mlx5Candidate> mlx5Candidates(const VerbsApi& api, ibv_device** list, int n,
                                          const std::string& filter, const std::string& gpu_bus_id,
                                          std::string* why) {
  std::vector<Mlx5Candidate> found;
  const bool any = filter.empty() || filter == "mlx5";
  for (int i = 0; i < n; ++i) {
    if (!isMlx5Device(api, list[i])) continue;
    const char* name = api.get_device_name(list[i]);
    const std::string s = name != nullptr ? name : "";
    if (!any && s.compare(0, filter.size(), filter) != 0) continue;
    found.push_back(Mlx5Candidate{list[i], s, -1});
  }
  if (found.empty()) {
    findMlx5Device(api, list, n, filter, why);  // the same message as a single lookup
    return found;
  }
  const std::string gpu = pciFunctionPath(api, gpu_bus_id);
  for (Mlx5Candidate& c : found) c.distance = sysfsDistance(gpu, nicPciPath(api, c.name));
  std::stable_sort(found.begin(), found.end(), [](const Mlx5Candidate& a, const Mlx5Candidate& b) {
    const unsigned da = a.distance < 0 ? UINT_MAX : (unsigned)a.distance;
    const unsigned db = b.distance < 0 ? UINT_MAX : (unsigned)b.distance;
    return da < db;
  });
  return found;
}

}  // namespace rdma
}  // namespace te4j

#endif  // TE4J_HAVE_RDMA_CORE_HEADERS
