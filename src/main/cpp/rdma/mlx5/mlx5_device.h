// mlx5_device.h — one opened ConnectX device: DevX context, port, GID, PD, UAR, capabilities.
//
// What the transport's queues need from the device and nothing else; the queues, memory
// registrations and control memory belong to the transport (mlx5_rdma_transport.cpp).
#pragma once

#if defined(TE4J_HAVE_RDMA_CORE_HEADERS)

#include <cstdint>
#include <string>

#include "rdma/mlx5/devx_commands.h"
#include "rdma/mlx5/verbs_api.h"

namespace te4j {
namespace rdma {

struct PortInfo {
  uint8_t number = 1;
  bool is_roce = false;    // Ethernet link layer (RoCE v2); else InfiniBand
  uint16_t lid = 0;        // InfiniBand only
  uint8_t active_mtu = 0;  // ibverbs/PRM encoding 1=256 .. 5=4096
  int gid_index = 0;       // RoCE: the chosen RoCE v2 entry; InfiniBand: 0
  ibv_gid gid{};
};

class Mlx5Device {
 public:
  explicit Mlx5Device(const VerbsApi* api) : api_(api) {}
  ~Mlx5Device() { close(); }
  Mlx5Device(const Mlx5Device&) = delete;
  Mlx5Device& operator=(const Mlx5Device&) = delete;

  /// Opens an mlx5 device matching `filter` (see findMlx5Device) with DevX, queries port 1
  /// and the capabilities, allocates the PD and a UAR (non-cached, else BlueFlame). Devices
  /// are tried nearest to the PCI function `gpu_bus_id` first ("" for ibverbs' order); one
  /// whose port is not usable (down, no LID, no RoCE v2 GID) is skipped for the next.
  /// Returns kOk or a te4j::Status with the cause and its fix in *why (every device tried, when
  /// none was usable); on failure everything acquired so far is released again.
  int open(const std::string& filter, const std::string& gpu_bus_id, std::string* why);
  /// Releases in reverse order (idempotent).
  void close();

  /// Replaces the UAR by a BlueFlame one (for a GPU mapping the non-cached page refused).
  /// False, with *why, when none can be allocated (the old UAR is then kept).
  bool switchToBlueFlameUar(std::string* why);

  const VerbsApi& api() const { return *api_; }
  ibv_context* context() const { return ctx_; }
  ibv_pd* pd() const { return pd_; }
  uint32_t pdn() const { return pdn_; }
  mlx5dv_devx_uar* uar() const { return uar_; }
  bool uarIsBlueFlame() const { return uar_blueflame_; }
  uint32_t eqn() const { return eqn_; }
  const PortInfo& port() const { return port_; }
  const devx::GeneralCaps& caps() const { return caps_; }
  /// qpc.ts_format for CREATE_QP: from the RoCE capabilities on RoCE, else the general ones.
  uint8_t qpTsFormat() const { return ts_format_; }
  /// Bytes between the BlueFlame register's halves (from log_bf_reg_size).
  uint32_t blueFlameHalf() const { return devx::blueFlameHalf(caps_); }
  /// PCIe hops between the GPU and this NIC (-1: unknown or no GPU).
  int pciDistance() const { return pci_distance_; }
  /// Devices skipped before this one, with why ("" when the first one was used).
  const std::string& skipped() const { return skipped_; }
  /// qpc.atomic_mode for RST2INIT (the kernel's rule over the atomic capabilities).
  uint8_t atomicMode() const { return atomic_mode_; }
  const std::string& name() const { return name_; }

 private:
  int openContext(ibv_device* device, std::string* why);
  int queryPort(std::string* why);
  int queryCaps(std::string* why);
  int allocate(std::string* why);

  const VerbsApi* api_;
  std::string name_;
  ibv_context* ctx_ = nullptr;
  ibv_pd* pd_ = nullptr;
  uint32_t pdn_ = 0;
  mlx5dv_devx_uar* uar_ = nullptr;
  bool uar_blueflame_ = false;
  uint32_t eqn_ = 0;
  PortInfo port_;
  devx::GeneralCaps caps_;
  uint8_t atomic_mode_ = 0;
  uint8_t ts_format_ = 0;
  int pci_distance_ = -1;
  std::string skipped_;
};

}  // namespace rdma
}  // namespace te4j

#endif  // TE4J_HAVE_RDMA_CORE_HEADERS
