// mlx5_probe.cpp — see mlx5_probe.h.
#include "rdma/mlx5_probe.h"

#if defined(TE4J_HAVE_RDMA_CORE_HEADERS)
#include "rdma/mlx5/device_select.h"
#include "rdma/mlx5/verbs_api.h"
#endif

namespace te4j {
namespace rdma {

std::vector<std::string> listMlx5Devices(std::string* why) {
#if defined(TE4J_HAVE_RDMA_CORE_HEADERS)
  const VerbsApi* api = loadVerbsApi(why);
  if (api == nullptr) return {};
  return listMlx5Devices(*api, why);
#else
  *why = kBuiltWithoutRdmaCore;
  return {};
#endif
}

bool probeMlx5(std::string* why) { return !listMlx5Devices(why).empty(); }

}  // namespace rdma
}  // namespace te4j
