// device_select.h — which ibverbs devices are mlx5 ones, and which of them a filter names.
#pragma once

#if defined(TE4J_HAVE_RDMA_CORE_HEADERS)

#include <string>
#include <vector>

#include "verbs_api.h"

namespace te4j {
namespace rdma {

/// Whether `device` is driven by libmlx5: mlx5dv_is_supported when the library has it, else
/// the kernel's default name "mlx5_<n>" (udev may rename devices, e.g. rocep1s0f0).
bool isMlx5Device(const VerbsApi& api, ibv_device* device);

/// Why ibv_get_device_list returned nothing (errno err). ENOSYS means the kernel has no RDMA
/// devices at all (no infiniband_verbs class): reported as "no mlx5 device".
std::string deviceListFailure(int err);

/// Names of the mlx5 devices (empty, with *why naming the cause, when none).
std::vector<std::string> listMlx5Devices(const VerbsApi& api, std::string* why);

/// The first mlx5 device of `list` (n entries) whose name starts with `filter`; "" and "mlx5"
/// match any mlx5 device. nullptr, with *why listing what exists, when none matches.
ibv_device* findMlx5Device(const VerbsApi& api, ibv_device** list, int n,
                           const std::string& filter, std::string* why);

}  // namespace rdma
}  // namespace te4j

#endif  // TE4J_HAVE_RDMA_CORE_HEADERS
