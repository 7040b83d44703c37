// queue_pair.h — one hardware RC QP (send queue only) and its CQ, as DevX objects whose
// buffers live in te4j's control buffer (control_layout.h), and its state transitions.
#pragma once

#if defined(TE4J_HAVE_RDMA_CORE_HEADERS)

#include <cstdint>
#include <string>

#include "rdma/mlx5/control_buffer.h"
#include "rdma/mlx5/control_layout.h"
#include "rdma/mlx5/devx_commands.h"
#include "rdma/mlx5/mlx5_device.h"
#include "rdma/mlx5/qp_tuning.h"

namespace te4j {
namespace rdma {

enum class QpState { kReset, kInit, kRtr, kRts };
const char* qpStateName(QpState state);

struct HwQp {
  mlx5dv_devx_obj* cq = nullptr;
  mlx5dv_devx_obj* qp = nullptr;
  uint32_t cqn = 0;
  uint32_t qpn = 0;
  QpState state = QpState::kReset;
};

/// Creates QP `index`'s CQ, then its QP (in RESET), on the umem(s) of `control`; false with
/// *why (and nothing left allocated).
bool createHwQp(const Mlx5Device& device, const ControlBuffer& control, const ControlLayout& layout,
                int index, HwQp* out, std::string* why);
/// Destroys the QP, then its CQ (idempotent).
void destroyHwQp(const VerbsApi& api, HwQp* qp);
/// Moves a QP back to RESET (no-op when it is there); false with *why.
bool resetHwQp(const VerbsApi& api, HwQp* qp, std::string* why);
/// RESET → INIT → RTR → RTS towards remote_qpn over `path`, with the fabric's ack timeout and
/// retry counts from `tuning`; false with *why (the QP is then left in the last state it
/// reached).
bool connectHwQp(const Mlx5Device& device, HwQp* qp, uint32_t remote_qpn,
                 const devx::AddressPath& path, const QpTuning& tuning, std::string* why);
/// QUERY_QP: the firmware's view of the QP (state, WQEBBs fetched); false with *why.
bool queryHwQp(const VerbsApi& api, const HwQp& qp, devx::QpQuery* out, std::string* why);

}  // namespace rdma
}  // namespace te4j

#endif  // TE4J_HAVE_RDMA_CORE_HEADERS
