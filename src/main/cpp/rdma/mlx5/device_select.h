// device_select.h — which ibverbs devices are mlx5 ones, which of them a filter names, and in
// which order to try them: nearest to the GPU in the PCIe tree first.
//
// On a node with one NIC per GPU (or per pair), the NIC behind the GPU's own PCIe switch is the
// one to use: its traffic does not cross the CPU's root complexes, and neither do the GPU's
// doorbell writes to its UAR (posted peer-to-peer writes across root complexes may be dropped
// or slow). sysfs gives both places: /sys/class/infiniband/<nic>/device and
// /sys/bus/pci/devices/<gpu bus id> link into /sys/devices/pci<domain>:<bus>/..., and the
// number of hops to their common ancestor is their distance.
#pragma once

#if defined(TE4J_HAVE_RDMA_CORE_HEADERS)

#include <string>
#include <vector>

#include "rdma/mlx5/verbs_api.h"

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
ibv_device* findMlx5Device(const VerbsApi& api, ibv_device** list, int n, const std::string& filter,
                           std::string* why);

/// Hops between two sysfs paths through their deepest common directory (each path's depth
/// below it, summed); -1 when either is empty.
int sysfsDistance(const std::string& a, const std::string& b);

/// Where `nic` sits in the PCIe tree (the resolved <sysfs_root>/<nic>/device link), or "".
std::string nicPciPath(const VerbsApi& api, const std::string& nic);
/// Where PCI function `bus_id` ("0000:3b:00.0") sits (the resolved <pci_devices_root>/<id>).
std::string pciFunctionPath(const VerbsApi& api, const std::string& bus_id);

/// One device to try, with its PCIe distance from the GPU (-1: unknown).
struct Mlx5Candidate {
  ibv_device* device = nullptr;
  std::string name;
  int distance = -1;
};

/// Every mlx5 device of `list` matching `filter`, the nearest to the PCI function `gpu_bus_id`
/// first (unknown distances last; ties keep ibverbs' order). gpu_bus_id "" keeps ibverbs'
/// order. Empty, with *why as findMlx5Device says it, when none matches.
std::vector<Mlx5Candidate> mlx5Candidates(const VerbsApi& api, ibv_device** list, int n,
                                          const std::string& filter, const std::string& gpu_bus_id,
                                          std::string* why);

}  // namespace rdma
}  // namespace te4j

#endif  // TE4J_HAVE_RDMA_CORE_HEADERS
