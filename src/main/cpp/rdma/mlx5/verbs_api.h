// verbs_api.h — every libibverbs / libmlx5 entry point the mlx5 backend calls, as a table of
// function pointers filled by dlsym at run time (or by a test with fakes).
//
// The types come from rdma-core's headers at build time only (TE4J_HAVE_RDMA_CORE_HEADERS):
// libte4j never links rdma-core and loads on machines without it. Rule for the backend: call
// rdma-core only through this table, never through the headers' inline helpers (ibv_reg_mr and
// ibv_query_port are macros over inline functions that would reference exported symbols).
#pragma once

#if defined(TE4J_HAVE_RDMA_CORE_HEADERS)

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include <string>

namespace te4j {
namespace rdma {

// decltype(&name) names the exported function: a function-like macro (ibv_query_port,
// ibv_reg_mr) is not expanded when no '(' follows its name.
struct VerbsApi {
  // libibverbs
  decltype(&::ibv_get_device_list) get_device_list = nullptr;
  decltype(&::ibv_free_device_list) free_device_list = nullptr;
  decltype(&::ibv_get_device_name) get_device_name = nullptr;
  decltype(&::ibv_open_device) open_device = nullptr;  // only to tell DevX from device access
  decltype(&::ibv_close_device) close_device = nullptr;
  decltype(&::ibv_query_port) query_port = nullptr;  // takes a whole struct ibv_port_attr
  decltype(&::ibv_query_gid) query_gid = nullptr;
  decltype(&::ibv_alloc_pd) alloc_pd = nullptr;
  decltype(&::ibv_dealloc_pd) dealloc_pd = nullptr;
  decltype(&::ibv_reg_mr) reg_mr = nullptr;
  decltype(&::ibv_reg_dmabuf_mr) reg_dmabuf_mr = nullptr;  // optional: rdma-core >= 34
  decltype(&::ibv_dereg_mr) dereg_mr = nullptr;
  decltype(&::ibv_create_ah) create_ah = nullptr;  // RoCE: resolves the peer's MAC
  decltype(&::ibv_destroy_ah) destroy_ah = nullptr;
  // Optional: the device's async events (port down, QP fatal...), read when a wait timed out.
  decltype(&::ibv_get_async_event) get_async_event = nullptr;
  decltype(&::ibv_ack_async_event) ack_async_event = nullptr;
  // libmlx5
  decltype(&::mlx5dv_is_supported) dv_is_supported = nullptr;  // optional
  decltype(&::mlx5dv_open_device) dv_open_device = nullptr;
  decltype(&::mlx5dv_init_obj) dv_init_obj = nullptr;
  decltype(&::mlx5dv_devx_umem_reg) devx_umem_reg = nullptr;
  decltype(&::mlx5dv_devx_umem_reg_ex) devx_umem_reg_ex = nullptr;  // optional: rdma-core >= 35
  decltype(&::mlx5dv_devx_umem_dereg) devx_umem_dereg = nullptr;
  decltype(&::mlx5dv_devx_alloc_uar) devx_alloc_uar = nullptr;
  decltype(&::mlx5dv_devx_free_uar) devx_free_uar = nullptr;
  decltype(&::mlx5dv_devx_query_eqn) devx_query_eqn = nullptr;
  decltype(&::mlx5dv_devx_obj_create) devx_obj_create = nullptr;
  decltype(&::mlx5dv_devx_obj_modify) devx_obj_modify = nullptr;
  decltype(&::mlx5dv_devx_obj_destroy) devx_obj_destroy = nullptr;
  decltype(&::mlx5dv_devx_obj_query) devx_obj_query = nullptr;  // optional: QUERY_QP
  decltype(&::mlx5dv_devx_general_cmd) devx_general_cmd = nullptr;

  /// Where the GID types are read (<root>/<device>/ports/<port>/gid_attrs/types/<index>);
  /// tests point it at a directory of their own.
  std::string sysfs_root = "/sys/class/infiniband";
  /// Where PCI functions are listed by bus id (<root>/0000:3b:00.0 links to the function's
  /// place in the PCIe tree); with sysfs_root's <device>/device links this gives the distance
  /// between a GPU and each NIC.
  std::string pci_devices_root = "/sys/bus/pci/devices";
};

/// The real libraries' table, loaded once per process and kept loaded (providers must not be
/// unloaded under open contexts). nullptr, with the cause and its fix in *why, when libibverbs
/// or libmlx5 is missing or lacks an entry point. Returns the injected table when one is set.
const VerbsApi* loadVerbsApi(std::string* why);

/// Test hook: loadVerbsApi returns `api` from now on (nullptr: the real libraries again). The
/// table must outlive every transport made while it is injected.
void injectVerbsApi(const VerbsApi* api);

}  // namespace rdma
}  // namespace te4j

#endif  // TE4J_HAVE_RDMA_CORE_HEADERS
