// mlx5_probe.h — is there a usable ConnectX (mlx5) device? Loads rdma-core with dlopen (through
// mlx5/verbs_api.h, so a test's injected table is seen too): libte4j neither links nor needs it.
#pragma once

#include <string>
#include <vector>

namespace te4j {
namespace rdma {

/// Why the mlx5 backend is missing from a build without rdma-core's headers.
constexpr const char* kBuiltWithoutRdmaCore =
    "te4j was built without rdma-core headers (libibverbs-dev); rebuild with them";

/// True when libibverbs and libmlx5 load and at least one mlx5 device is listed; otherwise
/// *why names the cause and its fix.
bool probeMlx5(std::string* why);
/// Names of the mlx5 devices (empty, with *why, when none).
std::vector<std::string> listMlx5Devices(std::string* why);

}  // namespace rdma
}  // namespace te4j
