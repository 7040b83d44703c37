// mlx5_probe.h — is there a usable ConnectX (mlx5) device? Loads rdma-core with dlopen, so
// libte4j neither links nor needs it.
#pragma once

#include <string>
#include <vector>

namespace te4j {
namespace rdma {

/// True when libibverbs and libmlx5 load and at least one mlx5 device is listed; otherwise
/// *why names the cause and its fix.
bool probeMlx5(std::string* why);
/// Names of the mlx5 devices (empty, with *why, when none).
std::vector<std::string> listMlx5Devices(std::string* why);

}  // namespace rdma
}  // namespace te4j
