// queue_pair.cpp — see queue_pair.h.
#if defined(TE4J_HAVE_RDMA_CORE_HEADERS)

#include "rdma/mlx5/queue_pair.h"

#include "rdma/mlx5/devx_calls.h"

namespace te4j {
namespace rdma {

const char* qpStateName(QpState state) {
  switch (state) {
    case QpState::kReset: return "RESET";
    case QpState::kInit: return "INIT";
    case QpState::kRtr: return "RTR";
    case QpState::kRts: return "RTS";
  }
  return "?";
}

bool createHwQp(const Mlx5Device& device, const ControlBuffer& control, const ControlLayout& layout,
                int index, HwQp* out, std::string* why) {
  const VerbsApi& api = device.api();
  *out = HwQp();
  devx::CqConfig cq;
  cq.log_cq_size = log2Of(layout.ring);
  cq.uar_page = device.uar()->page_id;
  cq.eqn = device.eqn();
  const UmemRef cq_buf = control.umemAt(layout.cqOffset(index));
  const UmemRef cq_dbr = control.umemAt(layout.cqDbrOffset(index));
  cq.cq_umem_id = cq_buf.id;
  cq.cq_umem_offset = cq_buf.offset;
  cq.dbr_umem_id = cq_dbr.id;
  cq.dbr_offset = cq_dbr.offset;
  devx::Mailbox reply;
  out->cq = devxCreate(api, device.context(), "CREATE_CQ", devx::createCqIn(cq),
                       devx::createCqOutBytes(), &reply, why);
  if (out->cq == nullptr) return false;
  out->cqn = devx::createCqOutCqn(reply);

  devx::QpConfig qp;
  qp.pdn = device.pdn();
  qp.uar_page = device.uar()->page_id;
  qp.log_sq_size = log2Of(layout.ring);
  qp.cqn = out->cqn;
  const UmemRef wq = control.umemAt(layout.sqOffset(index));
  const UmemRef dbr = control.umemAt(layout.dbrOffset(index));
  qp.wq_umem_id = wq.id;
  qp.wq_umem_offset = wq.offset;
  qp.dbr_umem_id = dbr.id;
  qp.dbr_offset = dbr.offset;
  qp.ts_format = device.qpTsFormat();
  out->qp = devxCreate(api, device.context(), "CREATE_QP", devx::createQpIn(qp),
                       devx::createQpOutBytes(), &reply, why);
  if (out->qp == nullptr) {
    destroyHwQp(api, out);
    return false;
  }
  out->qpn = devx::createQpOutQpn(reply);
  out->state = QpState::kReset;
  return true;
}

void destroyHwQp(const VerbsApi& api, HwQp* qp) {
  if (qp->qp != nullptr) api.devx_obj_destroy(qp->qp);
  if (qp->cq != nullptr) api.devx_obj_destroy(qp->cq);
  *qp = HwQp();
}

bool resetHwQp(const VerbsApi& api, HwQp* qp, std::string* why) {
  if (qp->state == QpState::kReset) return true;
  if (!devxModify(api, qp->qp, "2RST_QP", devx::qp2rstIn(qp->qpn), devx::modifyQpOutBytes(), why))
    return false;
  qp->state = QpState::kReset;
  return true;
}

bool connectHwQp(const Mlx5Device& device, HwQp* qp, uint32_t remote_qpn,
                 const devx::AddressPath& path, const QpTuning& tuning, std::string* why) {
  const VerbsApi& api = device.api();
  if (!resetHwQp(api, qp, why)) return false;
  devx::InitConfig init;
  init.qpn = qp->qpn;
  init.port = device.port().number;
  init.atomic_mode = device.atomicMode();
  if (!devxModify(api, qp->qp, "RST2INIT_QP", devx::rst2initIn(init), devx::modifyQpOutBytes(),
                  why))
    return false;
  qp->state = QpState::kInit;
  devx::RtrConfig rtr;
  rtr.qpn = qp->qpn;
  rtr.remote_qpn = remote_qpn;
  rtr.mtu = device.port().active_mtu;
  rtr.path = path;
  const devx::GeneralCaps& caps = device.caps();
  if (caps.log_max_msg != 0 && caps.log_max_msg < rtr.log_msg_max)
    rtr.log_msg_max = (uint8_t)caps.log_max_msg;
  if (caps.log_max_ra_res_qp < rtr.log_rra_max) rtr.log_rra_max = (uint8_t)caps.log_max_ra_res_qp;
  if (!devxModify(api, qp->qp, "INIT2RTR_QP", devx::init2rtrIn(rtr), devx::modifyQpOutBytes(), why))
    return false;
  qp->state = QpState::kRtr;
  devx::RtsConfig rts;
  rts.qpn = qp->qpn;
  rts.ack_timeout = tuning.ack_timeout;
  rts.retry_count = tuning.retry_count;
  rts.rnr_retry = tuning.rnr_retry;
  rts.port = path.port;
  if (caps.log_max_ra_req_qp < rts.log_sra_max) rts.log_sra_max = (uint8_t)caps.log_max_ra_req_qp;
  if (!devxModify(api, qp->qp, "RTR2RTS_QP", devx::rtr2rtsIn(rts), devx::modifyQpOutBytes(), why))
    return false;
  qp->state = QpState::kRts;
  return true;
}

bool queryHwQp(const VerbsApi& api, const HwQp& qp, devx::QpQuery* out, std::string* why) {
  if (qp.qp == nullptr || api.devx_obj_query == nullptr) {
    *why =
        qp.qp == nullptr ? "no QP object" : "mlx5dv_devx_obj_query is missing (rdma-core too old)";
    return false;
  }
  devx::Mailbox reply;
  if (!devxQuery(api, qp.qp, "QUERY_QP", devx::queryQpIn(qp.qpn), devx::queryQpOutBytes(), &reply,
                 why))
    return false;
  *out = devx::parseQueryQp(reply);
  return true;
}

}  // namespace rdma
}  // namespace te4j

#endif  // TE4J_HAVE_RDMA_CORE_HEADERS
