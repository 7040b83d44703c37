// mlx5_rdma_transport.cpp — RdmaTransport over a ConnectX NIC through DevX.
//
// Same contract and metadata as the software NIC (rdma_api.h); here the send rings, CQs and
// doorbell records are read and written by the NIC itself. Pieces, each in its own file:
//   mlx5_device       DevX context, port/GID, PD, UAR, capabilities (initialize)
//   memory_registration  the symmetric buffer's MR (dma-buf for GPU memory, else ibv_reg_mr)
//   control_buffer    rings / CQs / records: one umem + one MR (allocateControlBuffer)
//   queue_pair        CREATE_CQ / CREATE_QP and the RST→INIT→RTR→RTS transitions
//   doorbell_path / doorbell_proxy   who rings the UAR: the GPU, or a host thread
// Every step that fails releases what it acquired; close releases in reverse order.
#if defined(TE4J_HAVE_RDMA_CORE_HEADERS)

#include "rdma/mlx5/mlx5_rdma_transport.h"

#include <poll.h>

#include <chrono>
#include <thread>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <mutex>
#include <string>
#include <vector>

#include "transport/device/ibgda_device.cuh"
#include "transport/device/ibgda/cqe.cuh"
#include "rdma/device_tables.h"
#include "rdma/memory_port.h"
#include "rdma/mlx5/atomic_route.h"
#include "rdma/mlx5/control_buffer.h"
#include "rdma/mlx5/control_layout.h"
#include "rdma/mlx5/doorbell_path.h"
#include "rdma/mlx5/doorbell_proxy.h"
#include "rdma/mlx5/gpu_support.h"
#include "rdma/mlx5/memory_registration.h"
#include "rdma/mlx5/mlx5_device.h"
#include "rdma/mlx5/device_select.h"
#include "rdma/mlx5/devx_layout.h"
#include "rdma/mlx5/qp_tuning.h"
#include "rdma/mlx5/queue_pair.h"
#include "rdma/mlx5/roce_mac.h"

namespace te4j {
namespace rdma {

namespace dev = mooncake::device;
namespace mlx5 = mooncake::device::mlx5;

namespace {

uint64_t bigEndian64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | p[i];
  return v;
}

void putBigEndian64(uint64_t v, uint8_t* p) {
  for (int i = 7; i >= 0; --i, v >>= 8) p[i] = (uint8_t)v;
}

class Mlx5RdmaTransport final : public TableRdmaTransport {
 public:
  Mlx5RdmaTransport(int platform, int device, const VerbsApi* api)
      : TableRdmaTransport(platform, device), api_(api) {}
  ~Mlx5RdmaTransport() override { release(); }

  int backend() const override { return kRdmaBackendMlx5; }

  int openNic(const char* device_name) override {
    std::string why;
    memory_ =
        platform_ == kPlatformHost ? makeHostMemoryPort() : makeCudaMemoryPort(cuda_device_, &why);
    if (!memory_) return fail(kUnavailable, "initialize(mlx5): " + why);
    // The NIC nearest the GPU in the PCIe tree first (the host platform has no GPU to be near).
    std::string no_bus_id;
    const std::string gpu_bus_id =
        platform_ == kPlatformCuda ? gpuPciBusId(cuda_device_, &no_bus_id) : "";
    auto opened = std::make_unique<Mlx5Device>(api_);
    const int status = opened->open(device_name != nullptr ? device_name : "", gpu_bus_id, &why);
    if (status != kOk) {
      memory_.reset();
      return fail(status, "initialize(mlx5): " + why);
    }
    const EnvLookup env = [](const char* n) -> const char* { return std::getenv(n); };
    QpTuning tuning;
    uint32_t flags = 0;
    if (!readQpTuning(env, opened->port().is_roce, &tuning, &why) ||
        !readAtomicRoute(env, &flags, &why)) {
      memory_.reset();
      return fail(kInvalidArgument, "initialize(mlx5): " + why);
    }
    ibgda_flags_ = flags;
    tuning_ = tuning;
    device_ = std::move(opened);
    {
      std::lock_guard<std::mutex> lock(notes_mu_);
      device_note_.clear();
      if (!device_->skipped().empty()) device_note_ = "skipped: " + device_->skipped() + "\n";
      if (platform_ == kPlatformCuda && gpu_bus_id.empty())
        device_note_ += "NIC chosen without PCIe affinity: " + no_bus_id + "\n";
    }
    doorbell_ = chooseDoorbellPath(device_.get(), platform_, cuda_device_);
    if (doorbell_.gpu_reg == nullptr) {
      proxy_ = std::make_unique<DoorbellProxy>((uint64_t*)device_->uar()->reg_addr);
      proxy_->start();
    }
    return kOk;
  }

  int registerWindow(void* ptr, std::size_t bytes) override {
    if (!device_) return fail(kIllegalState, "registerMemory: initialize first");
    Region region;
    region.ptr = ptr;
    std::string why;
    const DmabufSource gpu = platform_ == kPlatformCuda ? &gpuDmabufFd : nullptr;
    if (registerRegion(*api_, device_->pd(), ptr, bytes, gpu, cuda_device_, &region.reg, &why) != 0)
      return fail(kUnavailable, "registerMemory(" + device_->name() + "): " + why);
    {
      std::lock_guard<std::mutex> lock(regions_mu_);
      regions_.push_back(region);
    }
    window_rkey_ = region.reg.mr->rkey;
    window_lkey_ = region.reg.mr->lkey;
    {
      std::lock_guard<std::mutex> lock(notes_mu_);
      registration_note_ =
          region.reg.note.empty()
              ? ""
              : "window registered with ibv_reg_mr (nvidia-peermem), dma-buf not used: " +
                    region.reg.note;
    }
    return kOk;
  }

  // Host-posted requests (transfer batches, notifications) use one key for both ends: the MR's
  // lkey locally and its rkey at the peer. mlx5_ib gives an ibv_reg_mr / dma-buf MR one mkey
  // for both, so they agree; a region whose keys differ is refused rather than guessed.
  int64_t regionKey(void* ptr, std::size_t bytes) override {
    std::lock_guard<std::mutex> lock(regions_mu_);
    for (size_t i = regions_.size(); i-- > 0;) {
      const ibv_mr* mr = regions_[i].reg.mr;
      if (regions_[i].ptr != ptr || bytes > mr->length) continue;
      if (mr->lkey != mr->rkey || mr->lkey == 0)
        return fail(kUnavailable, "regionKey: the region's lkey 0x" + hex(mr->lkey) +
                                      " and rkey 0x" + hex(mr->rkey) +
                                      " differ; host-posted requests need one key for both");
      return (int64_t)mr->lkey;
    }
    return fail(kInvalidArgument,
                "regionKey: no registration starts at that address and holds the range");
  }

  bool forgetRegion(void* ptr) override {
    std::lock_guard<std::mutex> lock(regions_mu_);
    for (size_t i = regions_.size(); i-- > 0;) {
      if (regions_[i].ptr != ptr) continue;
      const ibv_mr* mr = regions_[i].reg.mr;
      if (mr->rkey == window_rkey_ && (uint64_t)(uintptr_t)ptr == window_base_) {
        window_rkey_ = 0;
        window_lkey_ = 0;
      }
      api_->dereg_mr(regions_[i].reg.mr);
      regions_.erase(regions_.begin() + (long)i);
      return true;
    }
    return false;
  }

  bool controlAllocated() const override { return control_.allocated(); }
  void useRingSize(uint32_t wqebbs) override { layout_.ring = wqebbs; }

  int allocateControl() override {
    const uint32_t log_ring = log2Of(layout_.ring);
    const devx::GeneralCaps& caps = device_->caps();
    if ((caps.log_max_qp_sz != 0 && log_ring > caps.log_max_qp_sz) ||
        (caps.log_max_cq_sz != 0 && log_ring > caps.log_max_cq_sz))
      return fail(kInvalidArgument,
                  "allocateControlBuffer: a ring of " + std::to_string(layout_.ring) +
                      " WQEBBs exceeds " + device_->name() + "'s limits (QP 2^" +
                      std::to_string(caps.log_max_qp_sz) + ", CQ 2^" +
                      std::to_string(caps.log_max_cq_sz) + "); fix: setRingSize smaller");
    std::string why;
    if (!control_.allocate(memory_.get(), api_, device_->context(), device_->pd(),
                           layout_.totalBytes(numQps()), layout_.partStarts(numQps()), &why))
      return fail(kOutOfMemory, "allocateControlBuffer(" + device_->name() + "): " + why);
    return kOk;
  }

  void releaseControl() override { control_.release(); }

  // publishQueues hands device code the error record (the one the entry passes).
  int makeQueuePairs(void*, mooncake::device::McErrorRecord*) override {
    destroyQps();
    std::memset(control_.host(), 0, control_.bytes());
    std::vector<HwQp> qps(numQps());
    for (int i = 0; i < numQps(); ++i) {
      initCqes(i);
      std::string why;
      if (!createHwQp(*device_, control_, layout_, i, &qps[i], &why)) {
        for (HwQp& q : qps) destroyHwQp(*api_, &q);
        return fail(kSystemError, "createQueuePairs(" + device_->name() + "): QP " +
                                      std::to_string(i) + ": " + why);
      }
    }
    qps_ = std::move(qps);
    std::string why;
    if (!publishQueues(&why)) {
      destroyQps();
      return fail(kCudaError, "createQueuePairs: copying QP contexts: " + why);
    }
    return kOk;
  }

  int connectQueuePairs(int local_rank, bool is_roce, const uint64_t* remote_addrs,
                        const uint32_t* remote_keys, const uint32_t* remote_qpns,
                        const uint32_t* remote_lids, const uint64_t* subnet_prefixes,
                        const uint64_t* interface_ids, uint64_t active_ranks_mask) override {
    const PortInfo& port = device_->port();
    if (is_roce != port.is_roce)
      return fail(kInvalidArgument, std::string("connectPeers: the metadata says ") +
                                        (is_roce ? "RoCE" : "InfiniBand") + " but " +
                                        device_->name() + " is " +
                                        (port.is_roce ? "RoCE" : "InfiniBand"));
    connected_ = false;
    bool carried_traffic = false;
    for (const HwQp& q : qps_) carried_traffic |= q.state != QpState::kReset;
    if (carried_traffic) {
      std::string why;
      if (!restartQueues(&why))
        return fail(kSystemError, "connectPeers(" + device_->name() + "): " + why);
    }
    const int total = numQps();
    for (int r = 0; r < num_ranks_; ++r) {
      const bool active = (active_ranks_mask >> r) & 1u;
      devx::AddressPath path;
      std::string why;
      if (active && !addressPath(r, remote_lids, subnet_prefixes, interface_ids, &path, &why))
        return fail(kUnavailable, "connectPeers: rank " + std::to_string(r) + ": " + why);
      for (int c = 0; c < qps_per_rank_; ++c) {
        const int i = r * qps_per_rank_ + c;
        // RoCE v2: the UDP source port spreads QPs over ECMP paths (0xC000.. as the kernel).
        path.udp_sport = (uint16_t)(0xc000u | (qps_[i].qpn & 0x3fffu));
        const bool done =
            active ? connectHwQp(
                         *device_, &qps_[i],
                         remote_qpns[(size_t)r * total + (size_t)local_rank * qps_per_rank_ + c],
                         path, tuning_, &why)
                   : resetHwQp(*api_, &qps_[i], &why);
        if (!done)
          return fail(kSystemError, "connectPeers(" + device_->name() + "): QP " +
                                        std::to_string(i) + " (rank " + std::to_string(r) +
                                        ", channel " + std::to_string(c) + "): " + why);
      }
    }
    const int published = publishPeerWindows(remote_addrs, remote_keys, active_ranks_mask);
    if (published != kOk) return published;
    if (doorbell_.gpu_reg != nullptr && proxy_ == nullptr &&
        ((active_ranks_mask >> local_rank) & 1u) != 0) {
      const int s = probeDoorbells(local_rank);
      if (s != kOk) return s;
    }
    return kOk;
  }

  void addressValues(int64_t* out) const override {
    const PortInfo& port = device_->port();
    out[6] = window_rkey_;
    out[7] = (int64_t)bigEndian64(port.gid.raw);
    out[8] = (int64_t)bigEndian64(port.gid.raw + 8);
    out[9] = port.is_roce ? 0 : port.lid;
    out[10] = port.is_roce ? 1 : 0;
    out[11] = port.gid_index;
  }

  uint32_t qpNumber(int i) const override { return qps_[i].qpn; }

  bool isRoce() const override { return device_ && device_->port().is_roce; }
  int gidIndex() const override { return device_ ? device_->port().gid_index : 0; }

  // TableRdmaTransport
  uint32_t windowKey() const override { return window_lkey_; }
  bool haveQps() const override { return !qps_.empty(); }
  uint32_t ibgdaFlags() const override { return ibgda_flags_; }

  int statisticsCount() const override { return kStatCount; }

  int readStatistics(int64_t* out) override {
    for (int i = 0; i < kStatCount; ++i) out[i] = 0;
    if (!qps_.empty()) {
      std::vector<dev::IbgdaQp> table(numQps());
      std::string err;
      if (memory_->fromTable(table.data(), qp_table_, sizeof(dev::IbgdaQp) * table.size(), &err) !=
          0)
        return fail(kCudaError, "statistics: " + err);
      for (const dev::IbgdaQp& q : table) {
        out[0] += q.sq_pi;
        out[1] += q.sq_ci;
        out[2] += q.err_count;
      }
      for (const HwQp& q : qps_) out[3] += q.state == QpState::kRts ? 1 : 0;
    }
    out[4] = proxy_ ? (int64_t)proxy_->doorbells() : 0;
    out[5] = proxy_ ? (int64_t)proxy_->rereads() : 0;
    return kOk;
  }

  const char* statisticsNames() const override {
    return "wqes_posted,wqes_completed,error_cqes,qps_connected,proxy_doorbells,proxy_rereads";
  }

  const char* diagnostics() override {
    const std::string health = queueHealth();
    std::lock_guard<std::mutex> lock(notes_mu_);
    diagnostics_ = health;
    diagnostics_ += device_note_;
    if (probe_note_.rfind("GPU-rung doorbells verified", 0) != 0) diagnostics_ += probe_note_;
    if (!doorbell_.note.empty()) diagnostics_ += doorbell_.note + "\n";
    if (!registration_note_.empty()) diagnostics_ += registration_note_ + "\n";
    if (proxy_) diagnostics_ += proxy_->diagnostics();
    return diagnostics_.c_str();
  }

 private:
  static constexpr int kStatCount = 6;
  static constexpr size_t kMaxAsyncEvents = 16;
  // A loopback WRITE completes in microseconds; a second leaves room for a busy host.
  static constexpr uint64_t kProbeTimeoutNs = 1000000000ull;
  struct Region {
    void* ptr = nullptr;
    Registration reg;
  };

  // Connect-time check that the GPU's UAR writes arrive (doorbell_path.h, DoorbellVerdict):
  // a zero-length WRITE on the own rank's QP, rung by a GPU kernel. On a timeout the host proxy
  // takes over the doorbells and rings the same WQE; a completion then means the GPU's writes
  // are lost on the way, and device code leaves the UAR to the proxy from now on.
  int probeDoorbells(int local_rank) {
    const int self = local_rank * qps_per_rank_;
    void* qp = (dev::IbgdaQp*)qp_table_ + self;
    const uint64_t timeout_ns = kProbeTimeoutNs;
    std::string why;
    const int gpu =
        gpuDoorbellProbe(cuda_device_, qp, window_base_, window_rkey_, timeout_ns, &why);
    bool proxy_completed = false;
    if (gpu == mooncake::device::kMcRdmaTimeout) {
      std::string cause;
      if (!switchToProxy(&cause))
        return fail(kCudaError, "connectPeers: switching to proxy doorbells: " + cause);
      proxy_completed = awaitCqe(self, timeout_ns);
    }
    const DoorbellVerdict verdict = doorbellVerdict(gpu, proxy_completed);
    {
      std::lock_guard<std::mutex> lock(notes_mu_);
      probe_note_ =
          std::string(doorbellVerdictText(verdict)) + (gpu > 0 ? " (" + why + ")" : "") + "\n";
    }
    if (verdict == DoorbellVerdict::kBroken)
      return fail(kUnavailable,
                  "connectPeers(" + device_->name() + "): " + doorbellVerdictText(verdict) +
                      " (device status " + std::to_string(gpu) + "; " + queueHealth() +
                      "); fix: check the port with ibv_devinfo and the QP with the diagnostics");
    return kOk;
  }

  // Device code stops ringing the UAR (bf_reg nullptr in every QP context) and the proxy
  // watches the doorbell records from their current values.
  bool switchToProxy(std::string* why) {
    std::vector<dev::IbgdaQp> table(numQps());
    if (memory_->fromTable(table.data(), qp_table_, sizeof(dev::IbgdaQp) * table.size(), why) != 0)
      return false;
    for (dev::IbgdaQp& q : table) q.bf_reg = nullptr;
    if (memory_->toTable(qp_table_, table.data(), sizeof(dev::IbgdaQp) * table.size(), why) != 0)
      return false;
    proxy_ = std::make_unique<DoorbellProxy>((uint64_t*)device_->uar()->reg_addr);
    proxy_->setQps(watchedQps());
    proxy_->start();
    return true;
  }

  // Whether the CQE device code consumes next on QP `qp` becomes valid before timeout_ns.
  bool awaitCqe(int qp, uint64_t timeout_ns) {
    dev::IbgdaQp ctx;
    std::string why;
    if (memory_->fromTable(&ctx, (dev::IbgdaQp*)qp_table_ + qp, sizeof(ctx), &why) != 0)
      return false;
    const auto* cqe =
        (const mlx5::Cqe64*)(control_.host() + layout_.cqOffset(qp)) + (ctx.cq_ci & ctx.cq_mask);
    const auto end = std::chrono::steady_clock::now() + std::chrono::nanoseconds(timeout_ns);
    while (std::chrono::steady_clock::now() < end) {
      const uint32_t dw15 = __atomic_load_n(&cqe->dw[mlx5::kCqeDwOwner], __ATOMIC_ACQUIRE);
      if (mlx5::cqe_ready(dw15, ctx.cq_ci, ctx.cq_mask + 1)) return true;
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    return false;
  }

  std::vector<ProxyQp> watchedQps() const {
    std::vector<ProxyQp> watched(numQps());
    for (int i = 0; i < numQps(); ++i) {
      watched[i].dbrec = (const uint32_t*)(control_.host() + layout_.dbrOffset(i));
      watched[i].ring = control_.host() + layout_.sqOffset(i);
      watched[i].sq_mask = layout_.ring - 1;
      watched[i].qpn = qps_[i].qpn;
      watched[i].bf_size = doorbell_.bf_size;
    }
    return watched;
  }

  // Zeroes rings, CQs, doorbell records and fetch scratch, marks every CQE invalid, and hands
  // device code and the proxy fresh QP contexts (every counter 0). The NIC must not be using
  // the queues: they are new, or in RESET.
  bool publishQueues(std::string* why) {
    if (proxy_) proxy_->setQps({});
    std::memset(control_.host(), 0, control_.bytes());
    mooncake::device::McErrorRecord* record = errorRecord(why);
    if (record == nullptr) return false;
    std::vector<dev::IbgdaQp> table(numQps());
    for (int i = 0; i < numQps(); ++i) {
      initCqes(i);
      fillQpContext(i, qps_[i].qpn, &table[i]);
      table[i].error_record = record;  // where device code records a post it could not make
    }
    if (memory_->toTable(qp_table_, table.data(), sizeof(dev::IbgdaQp) * table.size(), why) != 0)
      return false;
    if (proxy_) proxy_->setQps(watchedQps());
    return true;
  }

  // Reconnecting QPs that have carried traffic. After 2RST the NIC starts over: it fetches WQE
  // 0 of the ring, expects PSN 0, writes CQE 0 with owner 0, and reads the doorbell records
  // afresh. Everything te4j keeps about the queues must start over with it, or the NIC would
  // re-execute old WQEs (te4j ringing its old sq_pi) and device code would consume old CQEs as
  // new ones. The QP numbers stay (the peers hold them), so this is rdma-core's RESET path
  // (clean the CQ, zero both doorbell records, re-initialise the indices), not a recreate.
  // Device code must not be using the transport meanwhile (connectPeers' contract).
  bool restartQueues(std::string* why) {
    if (proxy_) proxy_->setQps({});  // before the records it compares against are zeroed
    for (size_t i = 0; i < qps_.size(); ++i) {
      std::string cause;
      if (!resetHwQp(*api_, &qps_[i], &cause)) {
        *why = "QP " + std::to_string(i) + " back to RESET: " + cause;
        return false;
      }
    }
    if (!publishQueues(why)) {
      *why = "restarting the QP contexts: " + *why;
      return false;
    }
    return true;
  }

  // What the firmware and the device's async events say about the queues, when that is not
  // what te4j expects (QUERY_QP per connected QP, any async event since the last look): the
  // explanation of a wait that timed out without an error CQE. "" when all is as expected.
  std::string queueHealth() {
    std::string text;
    if (!device_) return text;
    for (size_t i = 0; i < qps_.size(); ++i) {
      if (qps_[i].qp == nullptr) continue;
      devx::QpQuery q;
      std::string why;
      const uint32_t want = qps_[i].state == QpState::kRts    ? devx::kQpStateRts
                            : qps_[i].state == QpState::kRtr  ? devx::kQpStateRtr
                            : qps_[i].state == QpState::kInit ? devx::kQpStateInit
                                                              : devx::kQpStateRst;
      if (!queryHwQp(*api_, qps_[i], &q, &why)) {
        if (api_->devx_obj_query != nullptr) text += "QP " + std::to_string(i) + ": " + why + "\n";
        continue;
      }
      if (q.state == want) continue;
      char counters[96];
      std::snprintf(counters, sizeof(counters),
                    " (NIC fetched WQEBB counter %u, doorbells announced %u)",
                    q.hw_sq_wqebb_counter, q.sw_sq_wqebb_counter);
      text += "QP " + std::to_string(i) + " (qpn 0x" + hex(qps_[i].qpn) + ", rank " +
              std::to_string(i / (size_t)qps_per_rank_) + " channel " +
              std::to_string(i % (size_t)qps_per_rank_) + "): QUERY_QP says " +
              devx::qpStateText(q.state) + ", te4j expects " + devx::qpStateText(want) + counters +
              "\n";
    }
    drainAsyncEvents();
    std::lock_guard<std::mutex> lock(notes_mu_);
    for (const std::string& e : async_events_) text += "async event: " + e + "\n";
    return text;
  }

  // Reads every pending async event without blocking (poll with a zero timeout) and keeps the
  // last few; each one is acknowledged at once, as ibverbs requires before a context closes.
  void drainAsyncEvents() {
    ibv_context* ctx = device_->context();
    if (api_->get_async_event == nullptr || api_->ack_async_event == nullptr || ctx->async_fd < 0)
      return;
    for (int n = 0; n < 64; ++n) {
      pollfd p{ctx->async_fd, POLLIN, 0};
      if (poll(&p, 1, 0) != 1 || (p.revents & POLLIN) == 0) return;
      ibv_async_event event;
      if (api_->get_async_event(ctx, &event) != 0) return;
      const std::string text = asyncEventText(event);
      api_->ack_async_event(&event);
      std::lock_guard<std::mutex> lock(notes_mu_);
      if (async_events_.size() >= kMaxAsyncEvents) async_events_.erase(async_events_.begin());
      async_events_.push_back(text);
    }
  }

  static std::string hex(uint32_t v) {
    char text[16];
    std::snprintf(text, sizeof(text), "%x", v);
    return text;
  }

  std::string asyncEventText(const ibv_async_event& e) const {
    const char* name = "unknown event";
    switch (e.event_type) {
      case IBV_EVENT_CQ_ERR: name = "CQ_ERR"; break;
      case IBV_EVENT_QP_FATAL: name = "QP_FATAL"; break;
      case IBV_EVENT_QP_REQ_ERR: name = "QP_REQ_ERR"; break;
      case IBV_EVENT_QP_ACCESS_ERR: name = "QP_ACCESS_ERR"; break;
      case IBV_EVENT_COMM_EST: name = "COMM_EST"; break;
      case IBV_EVENT_SQ_DRAINED: name = "SQ_DRAINED"; break;
      case IBV_EVENT_PATH_MIG: name = "PATH_MIG"; break;
      case IBV_EVENT_PATH_MIG_ERR: name = "PATH_MIG_ERR"; break;
      case IBV_EVENT_DEVICE_FATAL: name = "DEVICE_FATAL (the NIC needs a reset: see dmesg)"; break;
      case IBV_EVENT_PORT_ACTIVE: name = "PORT_ACTIVE"; break;
      case IBV_EVENT_PORT_ERR: name = "PORT_ERR (the link went down)"; break;
      case IBV_EVENT_LID_CHANGE: name = "LID_CHANGE"; break;
      case IBV_EVENT_PKEY_CHANGE: name = "PKEY_CHANGE"; break;
      case IBV_EVENT_SM_CHANGE: name = "SM_CHANGE"; break;
      case IBV_EVENT_CLIENT_REREGISTER: name = "CLIENT_REREGISTER"; break;
      case IBV_EVENT_GID_CHANGE: name = "GID_CHANGE"; break;
      default: break;
    }
    std::string text = device_->name() + ": " + name;
    if (e.event_type == IBV_EVENT_PORT_ACTIVE || e.event_type == IBV_EVENT_PORT_ERR ||
        e.event_type == IBV_EVENT_LID_CHANGE || e.event_type == IBV_EVENT_PKEY_CHANGE ||
        e.event_type == IBV_EVENT_SM_CHANGE || e.event_type == IBV_EVENT_CLIENT_REREGISTER ||
        e.event_type == IBV_EVENT_GID_CHANGE)
      text += " on port " + std::to_string(e.element.port_num);
    return text;
  }

  // CQEs start invalid with owner 0 (what the device code's cqe_ready expects on the first pass).
  void initCqes(int qp) {
    auto* cqes = (mlx5::Cqe64*)(control_.host() + layout_.cqOffset(qp));
    for (uint32_t c = 0; c < layout_.ring; ++c)
      cqes[c].dw[mlx5::kCqeDwOwner] = mlx5::cqe_make_dw15(0, mlx5::kCqeInvalid, 0);
  }

  // The device context of QP i: rings and records through device code's view of the control
  // buffer; the fetch scratch by its registered (host) address, which only the NIC uses.
  void fillQpContext(int i, uint32_t qpn, dev::IbgdaQp* t) const {
    std::memset(t, 0, sizeof(*t));
    t->qpn = qpn;
    t->sq_mask = layout_.ring - 1;
    t->cq_mask = layout_.ring - 1;
    t->bf_size = doorbell_.bf_size;
    t->sq_buf = control_.device() + layout_.sqOffset(i);
    t->cq_buf = control_.device() + layout_.cqOffset(i);
    t->sq_dbrec = (uint32_t*)(control_.device() + layout_.dbrOffset(i));
    t->cq_dbrec = (uint32_t*)(control_.device() + layout_.cqDbrOffset(i));
    t->bf_reg = proxy_ ? nullptr : doorbell_.gpu_reg;  // the proxy rings once it runs
    t->scratch_addr = (uint64_t)(uintptr_t)(control_.host() + layout_.scratchOffset(i));
    t->scratch_lkey = control_.lkey();
  }

  // Rank r's address path: its LID (InfiniBand) or its GID and MAC (RoCE v2).
  bool addressPath(int r, const uint32_t* lids, const uint64_t* prefixes, const uint64_t* ifids,
                   devx::AddressPath* path, std::string* why) {
    const PortInfo& port = device_->port();
    path->is_roce = port.is_roce;
    path->port = port.number;
    path->sl = tuning_.sl;
    path->traffic_class = tuning_.traffic_class;
    if (!port.is_roce) {
      if (lids[r] == 0 || lids[r] > 0xffff) {
        *why = "its metadata has no InfiniBand LID (" + std::to_string(lids[r]) + ")";
        return false;
      }
      path->rlid = (uint16_t)lids[r];
      return true;
    }
    putBigEndian64(prefixes[r], path->rgid);
    putBigEndian64(ifids[r], path->rgid + 8);
    path->gid_index = (uint8_t)port.gid_index;
    // The firmware does not resolve MACs: the kernel's neighbour table does (roce_mac.h).
    return resolveRoceMac(*api_, device_->pd(), port.number, port.gid_index, path->rgid, path->rmac,
                          why);
  }

  void destroyQps() {
    if (proxy_) proxy_->setQps({});  // before the rings it watches are reused
    for (HwQp& q : qps_) destroyHwQp(*api_, &q);
    qps_.clear();
    connected_ = false;
  }

  // Reverse order of acquisition.
  void release() {
    releaseErrorRecord();
    if (proxy_) proxy_->stop();
    destroyQps();
    freeTables();
    releaseControl();
    {
      std::lock_guard<std::mutex> lock(regions_mu_);
      for (Region& r : regions_) api_->dereg_mr(r.reg.mr);
      regions_.clear();
    }
    releaseDoorbellPath(cuda_device_, &doorbell_);
    proxy_.reset();
    device_.reset();
    memory_.reset();
  }

  const VerbsApi* const api_;
  std::unique_ptr<Mlx5Device> device_;
  DoorbellPath doorbell_;
  std::unique_ptr<DoorbellProxy> proxy_;
  std::mutex regions_mu_;        // regionKey runs on the callers' threads
  std::vector<Region> regions_;  // guarded by regions_mu_
  uint32_t window_rkey_ = 0;
  uint32_t window_lkey_ = 0;
  ControlLayout layout_;
  ControlBuffer control_;
  std::vector<HwQp> qps_;
  std::mutex notes_mu_;  // diagnostics may be read while another thread registers memory
  std::string registration_note_;
  std::string device_note_;                // devices skipped, missing PCIe affinity
  std::string probe_note_;                 // the connect-time doorbell verdict
  std::vector<std::string> async_events_;  // guarded by notes_mu_
  QpTuning tuning_;
  uint32_t ibgda_flags_ =
      0;  // IbgdaContext::flags: kIbgdaAtomicsViaNic unless TE4J_RDMA_ATOMICS=local
  std::string diagnostics_;
};

}  // namespace

RdmaTransport* newMlx5RdmaTransport(int platform, int device, const VerbsApi* api) {
  return new (std::nothrow) Mlx5RdmaTransport(platform, device, api);
}

}  // namespace rdma
}  // namespace te4j

#endif  // TE4J_HAVE_RDMA_CORE_HEADERS
