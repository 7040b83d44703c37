// mlx5_probe.cpp — see mlx5_probe.h. Only the three ibverbs entry points needed for discovery
// are resolved; their C signatures are restated here (opaque struct pointers) so that no
// rdma-core header is needed to build te4j.
#include "mlx5_probe.h"

#include <dlfcn.h>

#include <cerrno>
#include <cstring>

namespace te4j {
namespace rdma {

namespace {

struct IbvDevice;  // struct ibv_device, opaque here
using GetDeviceList = IbvDevice** (*)(int*);
using FreeDeviceList = void (*)(IbvDevice**);
using GetDeviceName = const char* (*)(IbvDevice*);

}  // namespace

std::vector<std::string> listMlx5Devices(std::string* why) {
  std::vector<std::string> names;
  void* verbs = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
  if (verbs == nullptr) {
    *why = std::string("libibverbs.so.1 not found (") + dlerror() +
           "); fix: install rdma-core (Debian/Ubuntu: ibverbs-providers libibverbs1)";
    return names;
  }
  void* mlx5 = dlopen("libmlx5.so.1", RTLD_NOW | RTLD_LOCAL);
  if (mlx5 == nullptr) {
    *why = std::string("libmlx5.so.1 not found (") + dlerror() +
           "); fix: install rdma-core's mlx5 provider (ibverbs-providers)";
    dlclose(verbs);
    return names;
  }
  auto get_list = (GetDeviceList)dlsym(verbs, "ibv_get_device_list");
  auto free_list = (FreeDeviceList)dlsym(verbs, "ibv_free_device_list");
  auto get_name = (GetDeviceName)dlsym(verbs, "ibv_get_device_name");
  if (!get_list || !free_list || !get_name) {
    *why = "libibverbs.so.1 lacks ibv_get_device_list/ibv_get_device_name (too old rdma-core)";
  } else {
    int n = 0;
    IbvDevice** list = get_list(&n);
    if (list == nullptr) {
      *why = std::string("ibv_get_device_list failed: ") + std::strerror(errno) +
             " (fix: load the mlx5_ib kernel module, check /dev/infiniband permissions)";
    } else {
      for (int i = 0; i < n; ++i) {
        const char* name = get_name(list[i]);
        if (name != nullptr && std::strncmp(name, "mlx5", 4) == 0) names.emplace_back(name);
      }
      free_list(list);
      if (names.empty())
        *why = "no mlx5 device (ibverbs lists " + std::to_string(n) +
               " device(s), none mlx5); the software NIC backend works without one";
    }
  }
  // Discovery only: the libraries are unloaded again; the DevX backend keeps its own handles.
  dlclose(mlx5);
  dlclose(verbs);
  return names;
}

bool probeMlx5(std::string* why) { return !listMlx5Devices(why).empty(); }

}  // namespace rdma
}  // namespace te4j
