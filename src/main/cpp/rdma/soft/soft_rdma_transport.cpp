// soft_rdma_transport.cpp — RdmaTransport over the software NIC (soft_nic.h).
//
// Control memory, one block per QP (rounded to 4 KiB), device addresses = NIC addresses + the
// same offsets:
//   +0                  send ring       ring_size x 64 B
//   +ring*64            CQ              ring_size x 64 B (one CQE per WQE at most)
//   +ring*128           doorbell record 8 B   (64-B slot)
//   +ring*128 + 64      CQ doorbell     8 B   (64-B slot)
//   +ring*128 + 128     UAR words       two 8-B words 256 B apart (the BlueFlame halves)
//   +ring*128 + 640     fetch scratch   8 B   (registered, local write)
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "te4j/rdma_api.h"
#include "transport/device/ibgda_device.cuh"
#include "transport/device/ibgda/cqe.cuh"
#include "rdma/memory_port.h"
#include "rdma/device_tables.h"
#include "rdma/region_table.h"
#include "rdma/soft/soft_nic.h"
#include "rdma/soft/socket_io.h"
#include "rdma/soft/soft_rdma_transport.h"

namespace te4j {
namespace rdma {

namespace dev = mooncake::device;
namespace mlx5 = mooncake::device::mlx5;

namespace {

constexpr uint32_t kBfSize = 256;
constexpr size_t kDbrOffset(uint32_t ring) { return (size_t)ring * 128; }
constexpr size_t blockBytes(uint32_t ring) {
  return ((size_t)ring * 128 + 704 + 4095) & ~(size_t)4095;
}
constexpr int kConnectTimeoutMs = 30000;  // the whole of connectPeers unless told otherwise

// TE4J_SOFTNIC_MEMORY=staged: the host platform's memory is reached through the staging
// arenas, as GPU memory is (tests the staged path on machines without a GPU).
bool stagedHostMemory() {
  const char* v = std::getenv("TE4J_SOFTNIC_MEMORY");
  return v != nullptr && std::strcmp(v, "staged") == 0;
}

class SoftRdmaTransport final : public TableRdmaTransport {
 public:
  SoftRdmaTransport(int platform, int device) : TableRdmaTransport(platform, device) {}
  ~SoftRdmaTransport() override { release(); }

  int backend() const override { return kRdmaBackendSoft; }

  int openNic(const char* device_name) override {
    uint32_t ip = 0x7f000001u;
    uint16_t port = 0;
    const std::string name = device_name ? device_name : "";
    if (!parseSoftName(name, &ip, &port))
      return fail(kInvalidArgument, "initialize: device name '" + name +
                                        "' is not soft, soft@<IPv4> or soft@<IPv4>:<port>");
    std::string err;
    if (platform_ != kPlatformHost)
      memory_ = makeCudaMemoryPort(cuda_device_, &err);
    else if (stagedHostMemory())
      memory_ = makeStagedHostMemoryPort();
    else
      memory_ = makeHostMemoryPort();
    if (!memory_) return fail(kUnavailable, "initialize: " + err);
    nic_ = std::make_unique<SoftNic>(memory_.get(), &regions_);
    if (nic_->start(ip, port, &err) != 0) {
      nic_.reset();
      return fail(kSystemError, "initialize: software NIC listener: " + err);
    }
    return kOk;
  }

  int registerWindow(void* ptr, std::size_t bytes) override {
    const uint32_t key = regions_.add((uint64_t)(uintptr_t)ptr, bytes, kAccessAll);
    if (key == 0) return fail(kOutOfMemory, "registerMemory: region table full");
    window_key_ = key;
    return kOk;
  }

  int64_t regionKey(void* ptr, std::size_t bytes) override {
    const uint32_t key = regions_.keyOf((uint64_t)(uintptr_t)ptr);
    if (key == 0 || key == ctrl_key_ || !regions_.check(key, (uint64_t)(uintptr_t)ptr, bytes, 0))
      return fail(kInvalidArgument,
                  "regionKey: no registration starts at that address and holds the range");
    return (int64_t)key;
  }

  bool forgetRegion(void* ptr) override {
    const uint32_t key = regions_.keyOf((uint64_t)(uintptr_t)ptr);
    if (key == 0 || key == ctrl_key_ || !regions_.remove(key)) return false;
    if (key == window_key_) window_key_ = 0;
    return true;
  }

  int deregisterRange(void* ptr, std::size_t bytes) override {
    if (ptr == nullptr || bytes == 0)
      return fail(kInvalidArgument, "deregisterRange: null or empty");
    regions_.removeOverlapping((uint64_t)(uintptr_t)ptr, bytes, ctrl_key_);
    if (window_key_ != 0 && !regions_.check(window_key_, window_base_, 0, 0)) window_key_ = 0;
    return ok();
  }

  bool controlAllocated() const override { return ctrl_host_ != nullptr; }
  void useRingSize(uint32_t wqebbs) override { ring_ = wqebbs; }

  int allocateControl() override {
    std::string err;
    ctrl_bytes_ = blockBytes(ring_) * (size_t)numQps();
    void* host = nullptr;
    void* device = nullptr;
    if (memory_->allocControl(ctrl_bytes_, &host, &device, &err) != 0)
      return fail(kOutOfMemory, "allocateControlBuffer: " + err);
    ctrl_host_ = (uint8_t*)host;
    ctrl_dev_ = (uint8_t*)device;
    ctrl_key_ = regions_.add((uint64_t)(uintptr_t)ctrl_dev_, ctrl_bytes_,
                             kAccessLocalRead | kAccessLocalWrite);
    return kOk;
  }

  void releaseControl() override {
    if (ctrl_key_ != 0) regions_.remove(ctrl_key_);
    if (ctrl_host_ != nullptr && memory_) memory_->freeControl(ctrl_host_);
    ctrl_host_ = ctrl_dev_ = nullptr;
    ctrl_key_ = 0;
  }

  int makeQueuePairs(void* stream, mooncake::device::McErrorRecord* record) override {
    (void)stream;
    // QPs still served: take them back first (closing their connections), or the NIC's readers
    // would answer into destroyed QPs.
    if (!qp_ptrs_.empty()) {
      qp_ptrs_.clear();
      nic_->takeQps();
    }
    std::memset(ctrl_host_, 0, ctrl_bytes_);
    std::vector<std::unique_ptr<SoftQp>> qps;
    std::vector<dev::IbgdaQp> table(numQps());
    qpns_.assign(numQps(), 0);
    qp_ptrs_.assign(numQps(), nullptr);
    for (int i = 0; i < numQps(); ++i) {
      const size_t block = blockBytes(ring_) * (size_t)i;
      uint8_t* h = ctrl_host_ + block;
      uint8_t* d = ctrl_dev_ + block;
      auto qp = std::make_unique<SoftQp>();
      qp->qpn = next_qpn_++ & 0xffffffu;
      qp->sq_mask = ring_ - 1;
      qp->cq_mask = ring_ - 1;
      qp->bf_size = kBfSize;
      qp->sq_buf = h;
      qp->cq_buf = h + (size_t)ring_ * 64;
      qp->sq_dbrec = (uint32_t*)(h + kDbrOffset(ring_));
      qp->cq_dbrec = (uint32_t*)(h + kDbrOffset(ring_) + 64);
      qp->uar = (uint64_t*)(h + kDbrOffset(ring_) + 128);
      // CQEs start invalid with owner 0: the first pass of the producer writes owner 0 too.
      for (uint32_t c = 0; c < ring_; ++c)
        ((mlx5::Cqe64*)qp->cq_buf)[c].dw[mlx5::kCqeDwOwner] =
            mlx5::cqe_make_dw15(0, mlx5::kCqeInvalid, 0);
      dev::IbgdaQp& t = table[i];
      t.qpn = qp->qpn;
      t.sq_mask = ring_ - 1;
      t.cq_mask = ring_ - 1;
      t.bf_size = kBfSize;
      t.sq_buf = d;
      t.cq_buf = d + (size_t)ring_ * 64;
      t.sq_dbrec = (uint32_t*)(d + kDbrOffset(ring_));
      t.cq_dbrec = (uint32_t*)(d + kDbrOffset(ring_) + 64);
      t.bf_reg = (uint64_t*)(d + kDbrOffset(ring_) + 128);
      t.scratch_addr = (uint64_t)(uintptr_t)(d + kDbrOffset(ring_) + 640);
      t.scratch_lkey = ctrl_key_;
      t.error_record = record;
      qpns_[i] = qp->qpn;
      qp_ptrs_[i] = qp.get();
      qps.push_back(std::move(qp));
    }
    std::string err;
    if (memory_->toTable(qp_table_, table.data(), sizeof(dev::IbgdaQp) * table.size(), &err) != 0)
      return fail(kCudaError, "createQueuePairs: copying QP contexts: " + err);
    nic_->setQps(std::move(qps));
    return kOk;
  }

  int connectQueuePairs(int local_rank, bool is_roce, const uint64_t* remote_addrs,
                        const uint32_t* remote_keys, const uint32_t* remote_qpns,
                        const uint32_t* remote_lids, const uint64_t* subnet_prefixes,
                        const uint64_t* interface_ids, uint64_t active_ranks_mask) override {
    if (!is_roce)
      return fail(kInvalidArgument,
                  "connectPeers: the software NIC is RoCE-addressed (is_roce must be true)");
    std::vector<PeerEndpoint> peers(num_ranks_);
    for (int r = 0; r < num_ranks_; ++r) {
      if (!((active_ranks_mask >> r) & 1u)) continue;
      if (subnet_prefixes[r] != 0 || (interface_ids[r] >> 32) != 0xffffu || remote_lids[r] == 0 ||
          remote_lids[r] > 0xffffu)
        return fail(kInvalidArgument,
                    "connectPeers: rank " + std::to_string(r) +
                        " is not a software NIC endpoint (GID ::ffff:IPv4, lid = port)");
      peers[r].active = true;
      peers[r].ipv4 = (uint32_t)interface_ids[r];
      peers[r].port = (uint16_t)remote_lids[r];
    }
    const int published = publishPeerWindows(remote_addrs, remote_keys, active_ranks_mask);
    if (published != kOk) return published;
    for (int r = 0; r < num_ranks_; ++r) {
      if (!peers[r].active) continue;
      if ((size_t)num_ranks_ * kAuthKeyBytes != peer_keys_.size())
        return fail(kInvalidArgument,
                    "connectPeers: the peers' keys are missing (setPeerKeys, from their metadata)");
      std::memcpy(peers[r].key, peer_keys_.data() + (size_t)r * kAuthKeyBytes, kAuthKeyBytes);
    }
    setPeers(local_rank, remote_qpns, active_ranks_mask);
    std::string err;
    if (nic_->connect(local_rank, peers, connect_timeout_ms_, &err) != 0)
      return fail(kPeerLost, "connectPeers: " + err);
    return kOk;
  }

  void addressValues(int64_t* out) const override {
    out[6] = window_key_;
    out[7] = 0;
    out[8] = (int64_t)(0x0000ffff00000000ull | nic_->ipv4());
    out[9] = nic_->port();
    out[10] = 1;
    out[11] = 0;
  }

  uint32_t qpNumber(int i) const override { return qpns_[i]; }

  bool isRoce() const override { return true; }
  int gidIndex() const override { return 0; }

  // TableRdmaTransport
  uint32_t windowKey() const override { return window_key_; }
  bool haveQps() const override { return !qpns_.empty(); }

  int statisticsCount() const override { return SoftNicStats::kCount; }

  int readStatistics(int64_t* out) override {
    nic_->stats().snapshot(out);
    return kOk;
  }

  const char* statisticsNames() const override {
    return "doorbells,dbr_mismatches,uar_mismatches,wqes,local_errors,remote_errors,flushes,"
           "cqes,cq_overruns,bytes_written,atomics,rejected,bad_frames,handshakes_refused,"
           "handshakes_dropped,bytes_read";
  }

  const char* diagnostics() override {
    // Java calls this from many threads at once: each gets its own copy (as lastError does),
    // valid until its next call, instead of one member string reassigned under the readers.
    thread_local std::string copy;
    copy = nic_ ? nic_->diagnostics() : std::string();
    return copy.c_str();
  }

  int lostPeers(int32_t* out, int capacity) override {
    if (!nic_ || out == nullptr || capacity < num_ranks_)
      return fail(kInvalidArgument, "lostPeers: initialize first, capacity below num_ranks");
    static_assert(SoftNic::kLostClosed == kPeerClosedConnection,
                  "one code for a closed connection");
    for (int r = 0; r < num_ranks_; ++r) out[r] = nic_->lostCause(r);
    ok();
    return num_ranks_;
  }

  int setConnectTimeoutMs(int timeout_ms) override {
    if (timeout_ms < 1) return fail(kInvalidArgument, "setConnectTimeoutMs: at least 1 ms");
    connect_timeout_ms_ = timeout_ms;
    return ok();
  }

  int authKey(uint8_t* out, int capacity) override {
    if (!nic_) return fail(kIllegalState, "authKey: initialize first");
    if (out == nullptr || capacity < (int)kAuthKeyBytes)
      return fail(kInvalidArgument, "authKey: capacity below " + std::to_string(kAuthKeyBytes));
    std::memcpy(out, nic_->authKey(), kAuthKeyBytes);
    ok();
    return (int)kAuthKeyBytes;
  }

  int setPeerKeys(const uint8_t* keys, int bytes) override {
    if (keys == nullptr || bytes != num_ranks_ * (int)kAuthKeyBytes)
      return fail(kInvalidArgument, "setPeerKeys: " + std::to_string(num_ranks_) + " keys of " +
                                        std::to_string(kAuthKeyBytes) + " bytes expected");
    peer_keys_.assign(keys, keys + bytes);
    return ok();
  }

  int setPeerTimeoutMs(int timeout_ms) override {
    if (timeout_ms < 1000) return fail(kInvalidArgument, "setPeerTimeoutMs: at least 1000 ms");
    if (!nic_) return fail(kIllegalState, "setPeerTimeoutMs: initialize first");
    nic_->setPeerTimeoutMs(timeout_ms);
    return ok();
  }

 private:
  // QP (dst r, channel c) pairs with rank r's QP (dst local_rank, channel c).
  void setPeers(int local_rank, const uint32_t* remote_qpns, uint64_t mask) {
    const int total = numQps();
    for (int i = 0; i < total; ++i) {
      const int r = i / qps_per_rank_;
      const int c = i % qps_per_rank_;
      const bool active = (mask >> r) & 1u;
      qp_ptrs_[i]->peer_rank.store(active ? r : -1);
      qp_ptrs_[i]->peer_qpn.store(
          active ? remote_qpns[(size_t)r * total + (size_t)local_rank * qps_per_rank_ + c] : 0);
    }
  }

  static bool parseSoftName(const std::string& name, uint32_t* ip, uint16_t* port) {
    if (name.empty() || name == "soft") return true;
    if (name.compare(0, 5, "soft@") != 0) return false;
    std::string rest = name.substr(5);
    const size_t colon = rest.find(':');
    if (colon != std::string::npos) {
      const std::string p = rest.substr(colon + 1);
      if (p.empty() || p.size() > 5 || p.find_first_not_of("0123456789") != std::string::npos)
        return false;
      const unsigned long v = std::stoul(p);
      if (v > 65535) return false;
      *port = (uint16_t)v;
      rest = rest.substr(0, colon);
    }
    return parseIpv4(rest, ip);
  }

  void release() {
    releaseErrorRecord();
    if (nic_) nic_->stop();
    nic_.reset();
    freeTables();
    releaseControl();
  }

  RegionTable regions_;
  std::unique_ptr<SoftNic> nic_;
  uint32_t ring_ = 256;
  uint32_t window_key_ = 0;
  uint8_t* ctrl_host_ = nullptr;
  uint8_t* ctrl_dev_ = nullptr;
  size_t ctrl_bytes_ = 0;
  uint32_t ctrl_key_ = 0;
  std::vector<uint32_t> qpns_;
  std::vector<SoftQp*> qp_ptrs_;  // owned by nic_, valid until takeQps
  uint32_t next_qpn_ = 0x100;
  int connect_timeout_ms_ = kConnectTimeoutMs;
  std::vector<uint8_t> peer_keys_;
};

}  // namespace

RdmaTransport* newSoftRdmaTransport(int platform, int device) {
  return new (std::nothrow) SoftRdmaTransport(platform, device);
}

}  // namespace rdma
}  // namespace te4j
