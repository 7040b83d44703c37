// mlx5_device.cpp — see mlx5_device.h.
#if defined(TE4J_HAVE_RDMA_CORE_HEADERS)

#include "rdma/mlx5/mlx5_device.h"

#include <cerrno>
#include <cstring>

#include "te4j/api.h"
#include "rdma/mlx5/devx_calls.h"
#include "rdma/mlx5/device_select.h"
#include "rdma/mlx5/gid_select.h"

namespace te4j {
namespace rdma {

namespace {

constexpr uint8_t kPort = 1;  // every ConnectX PF/VF exposes its link as port 1 of its own device

const char* portStateName(int state) {
  switch (state) {
    case IBV_PORT_DOWN: return "DOWN";
    case IBV_PORT_INIT: return "INIT";
    case IBV_PORT_ARMED: return "ARMED";
    case IBV_PORT_ACTIVE: return "ACTIVE";
    case IBV_PORT_ACTIVE_DEFER: return "ACTIVE_DEFER";
    default: return "NOP";
  }
}

std::string devxHex(uint32_t v) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  do {
    s.insert(s.begin(), digits[v & 0xf]);
    v >>= 4;
  } while (v != 0);
  return s;
}

std::string errnoText(int err) {
  return std::string(std::strerror(err)) + " (errno " + std::to_string(err) + ")";
}

}  // namespace

int Mlx5Device::open(const std::string& filter, const std::string& gpu_bus_id, std::string* why) {
  if (ctx_ != nullptr) {
    *why = "the device is already open";
    return kIllegalState;
  }
  int n = 0;
  ibv_device** list = api_->get_device_list(&n);
  if (list == nullptr) {
    *why = deviceListFailure(errno);
    return kUnavailable;
  }
  const std::vector<Mlx5Candidate> candidates =
      mlx5Candidates(*api_, list, n, filter, gpu_bus_id, why);
  int status = kUnavailable;
  bool usable_port = false;
  skipped_.clear();
  for (const Mlx5Candidate& c : candidates) {
    std::string cause;
    status = openContext(c.device, &cause);
    if (status == kOk) status = queryPort(&cause);
    if (status == kOk) {
      usable_port = true;
      pci_distance_ = c.distance;
      status = queryCaps(&cause);
      if (status == kOk) status = allocate(&cause);
      if (status != kOk) *why = cause;
      break;  // a usable port: its failures are this device's, not a reason to move on
    }
    close();
    skipped_ += (skipped_.empty() ? "" : "; ") + cause;
  }
  if (status != kOk && !usable_port && !skipped_.empty())
    *why = candidates.size() == 1 ? skipped_ : "no usable mlx5 device: " + skipped_;
  api_->free_device_list(list);  // an open context keeps its device
  if (status != kOk) close();
  return status;
}

void Mlx5Device::close() {
  if (uar_ != nullptr) api_->devx_free_uar(uar_);
  if (pd_ != nullptr) api_->dealloc_pd(pd_);
  if (ctx_ != nullptr) api_->close_device(ctx_);
  uar_ = nullptr;
  pd_ = nullptr;
  ctx_ = nullptr;
}

int Mlx5Device::openContext(ibv_device* device, std::string* why) {
  const char* name = api_->get_device_name(device);
  name_ = name != nullptr ? name : "?";
  mlx5dv_context_attr attr{};
  attr.flags = MLX5DV_CONTEXT_FLAGS_DEVX;
  errno = 0;
  ctx_ = api_->dv_open_device(device, &attr);
  const int err = errno != 0 ? errno : EIO;
  int status = kOk;
  if (ctx_ == nullptr) {
    status = kUnavailable;
    // Tell "DevX refused" apart from "the device cannot be opened at all".
    ibv_context* plain = api_->open_device(device);
    if (plain != nullptr) {
      api_->close_device(plain);
      *why = "DevX not permitted on " + name_ + ": mlx5dv_open_device(DEVX) failed with " +
             errnoText(err) +
             " although the device opens without DevX; fix: Linux >= 5.1 with mlx5_ib DevX "
             "support and firmware that allows DevX user contexts (ConnectX-5 or newer; a VF "
             "may need its trust mode / DevX enabled by the admin), in containers grant "
             "CAP_NET_RAW and pass /dev/infiniband; or use the software NIC (backend soft)";
    } else {
      *why = "cannot open " + name_ + ": " + errnoText(err) +
             "; fix: read/write access to /dev/infiniband/uverbs* (group rdma, or the "
             "container's device list)";
    }
  }
  return status;
}

int Mlx5Device::queryPort(std::string* why) {
  ibv_port_attr attr;
  std::memset(&attr, 0, sizeof(attr));
  // The exported ibv_query_port takes the legacy struct type; a whole ibv_port_attr is larger,
  // which is what rdma-core's own inline wrapper passes to it too.
  const int rc = api_->query_port(ctx_, kPort, reinterpret_cast<_compat_ibv_port_attr*>(&attr));
  if (rc != 0) {
    *why = "ibv_query_port(" + name_ + ", 1) failed: " + errnoText(rc);
    return kSystemError;
  }
  const std::string where = name_ + " port " + std::to_string(kPort);
  if (attr.state != IBV_PORT_ACTIVE) {
    *why = where + " is " + portStateName(attr.state) +
           ", not ACTIVE; fix: bring the link up (cable, switch port; InfiniBand also needs a "
           "subnet manager such as opensm), check with `ibv_devinfo`";
    return kUnavailable;
  }
  port_.number = kPort;
  port_.is_roce = attr.link_layer == IBV_LINK_LAYER_ETHERNET;
  port_.active_mtu = (uint8_t)attr.active_mtu;
  if (!port_.is_roce) {
    if (attr.lid == 0) {
      *why = where + " is InfiniBand without a LID; fix: run a subnet manager (opensm)";
      return kUnavailable;
    }
    port_.lid = attr.lid;
    port_.gid_index = 0;
    if (api_->query_gid(ctx_, kPort, 0, &port_.gid) != 0)
      std::memset(&port_.gid, 0, sizeof(port_.gid));
    return kOk;
  }
  if (!selectRoceGid(*api_, ctx_, name_, kPort, attr.gid_tbl_len, &port_.gid_index, &port_.gid,
                     why))
    return kUnavailable;
  return kOk;
}

int Mlx5Device::queryCaps(std::string* why) {
  devx::Mailbox out(devx::queryHcaCapOutBytes(), 0);
  std::string cause;
  if (!devxGeneral(*api_, ctx_, "QUERY_HCA_CAP(general)", devx::queryHcaCapGeneralIn(), &out,
                   &cause)) {
    *why = name_ + ": " + cause + " (DevX general commands refused)";
    return kSystemError;
  }
  caps_ = devx::parseGeneralCaps(out);
  if (!caps_.atomic) {
    *why = name_ + " reports no RDMA atomics; te4j's signals are masked fetch-and-add";
    return kUnavailable;
  }
  devx::Mailbox atomic_out(devx::queryHcaCapOutBytes(), 0);
  if (!devxGeneral(*api_, ctx_, "QUERY_HCA_CAP(atomic)", devx::queryHcaCapAtomicIn(), &atomic_out,
                   &cause)) {
    *why = name_ + ": " + cause;
    return kSystemError;
  }
  // te4j's signal is an extended (masked) fetch-and-add on 4 bytes.
  const devx::AtomicCaps atomic = devx::parseAtomicCaps(atomic_out);
  constexpr uint32_t kExtendedFetchAdd = 1u << 3;
  constexpr uint32_t kFourBytes = 1u << 2;
  if ((atomic.atomic_operations & kExtendedFetchAdd) == 0 ||
      (atomic.atomic_size_qp & kFourBytes) == 0) {
    *why = name_ + " lacks 4-byte masked fetch-and-add on RC QPs (atomic operations 0x" +
           devxHex(atomic.atomic_operations) + ", sizes 0x" + devxHex(atomic.atomic_size_qp) +
           "); te4j's signals need it (ConnectX-5 or newer)";
    return kUnavailable;
  }
  atomic_mode_ = devx::qpAtomicMode(caps_, atomic);
  ts_format_ = devx::qpTsFormat(caps_);
  if (port_.is_roce) {
    // The kernel's rule: with RoCE enabled, the RoCE capabilities say which clocks a QP may use.
    devx::Mailbox roce_out(devx::queryHcaCapOutBytes(), 0);
    if (!devxGeneral(*api_, ctx_, "QUERY_HCA_CAP(RoCE)", devx::queryHcaCapRoceIn(), &roce_out,
                     &cause)) {
      *why = name_ + ": " + cause;
      return kSystemError;
    }
    ts_format_ = devx::qpTsFormatRoce(devx::parseRoceQpTsFormat(roce_out));
  }
  return kOk;
}

int Mlx5Device::allocate(std::string* why) {
  errno = 0;
  pd_ = api_->alloc_pd(ctx_);
  if (pd_ == nullptr) {
    *why = "ibv_alloc_pd(" + name_ + ") failed: " + errnoText(errno != 0 ? errno : ENOMEM);
    return kSystemError;
  }
  mlx5dv_pd dv_pd{};
  mlx5dv_obj obj{};
  obj.pd.in = pd_;
  obj.pd.out = &dv_pd;
  const int rc = api_->dv_init_obj(&obj, MLX5DV_OBJ_PD);
  if (rc != 0) {
    *why = "mlx5dv_init_obj(PD) on " + name_ + " failed: " + errnoText(rc > 0 ? rc : EINVAL);
    return kSystemError;
  }
  pdn_ = dv_pd.pdn;
  // Non-cached first: a doorbell is one 8-byte store, nothing to gain from write combining.
  errno = 0;
  uar_ = api_->devx_alloc_uar(ctx_, MLX5DV_UAR_ALLOC_TYPE_NC);
  uar_blueflame_ = false;
  if (uar_ == nullptr) {
    uar_ = api_->devx_alloc_uar(ctx_, MLX5DV_UAR_ALLOC_TYPE_BF);
    uar_blueflame_ = true;
  }
  if (uar_ == nullptr) {
    *why = "mlx5dv_devx_alloc_uar(" + name_ +
           ", NC and BF) failed: " + errnoText(errno != 0 ? errno : ENOMEM) +
           "; fix: close other processes holding UARs";
    return kSystemError;
  }
  const int eq = api_->devx_query_eqn(ctx_, 0, &eqn_);
  if (eq != 0) {
    *why = "mlx5dv_devx_query_eqn(" + name_ + ", 0) failed: " + errnoText(eq > 0 ? eq : EINVAL);
    return kSystemError;
  }
  return kOk;
}

bool Mlx5Device::switchToBlueFlameUar(std::string* why) {
  if (uar_blueflame_) return true;
  errno = 0;
  mlx5dv_devx_uar* bf = api_->devx_alloc_uar(ctx_, MLX5DV_UAR_ALLOC_TYPE_BF);
  if (bf == nullptr) {
    *why = "mlx5dv_devx_alloc_uar(BF) failed: " + errnoText(errno != 0 ? errno : ENOMEM);
    return false;
  }
  api_->devx_free_uar(uar_);
  uar_ = bf;
  uar_blueflame_ = true;
  return true;
}

}  // namespace rdma
}  // namespace te4j

#endif  // TE4J_HAVE_RDMA_CORE_HEADERS
