// mooncake_device_transport.cpp — upstream Mooncake's P2pTransport / RdmaTransport and their
// factories (transport/device/device_transport.h) as adapters over te4j's transports.
//
// The adapters translate shapes only: std::vector arguments to te4j's arrays, upstream's
// per-QP connection vectors to te4j's per-rank rows, status codes to upstream's 0 / non-zero,
// nullptr and bool results. te4j's transports do the work and keep the reason of a failure.
#include "transport/device/device_transport.h"

#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "te4j/api.h"
#include "te4j/rdma_api.h"
#include "core/thread_error.h"
#include "core/cuda_bridge.h"

namespace mooncake {
namespace device {
namespace {

/// The platform and device the factories bind to: the calling thread's current CUDA device, or
/// the host platform in a build without CUDA. false (reason in lastThreadError) when CUDA is
/// built but unusable here.
bool currentPlatform(int* platform, int* device) {
  if (!te4j::cuda_bridge::built()) {
    *platform = te4j::kPlatformHost;
    *device = 0;
    return true;
  }
  std::string why;
  const int count = te4j::cuda_bridge::deviceCount(&why);
  if (count <= 0) {
    te4j::setLastThreadError(count == 0 ? "no CUDA device is visible (check the driver and "
                                          "CUDA_VISIBLE_DEVICES)"
                                        : why);
    return false;
  }
  const int current = te4j::cuda_bridge::currentDevice(&why);
  if (current < 0) {
    te4j::setLastThreadError(why);
    return false;
  }
  *platform = te4j::kPlatformCuda;
  *device = current;
  return true;
}

uint64_t maskOf(const std::vector<int>& active_ranks_mask, int num_ranks) {
  uint64_t mask = 0;
  for (int r = 0; r < num_ranks && r < 64 && r < (int)active_ranks_mask.size(); ++r) {
    if (active_ranks_mask[(size_t)r] != 0) mask |= 1ull << r;
  }
  return mask;
}

class P2pAdapter final : public P2pTransport {
 public:
  explicit P2pAdapter(te4j::P2pTransport* t) : t_(t) {}
  ~P2pAdapter() override {
    if (window_ >= 0) t_->closeWindow(window_);
    te4j::destroyObject(t_);
  }

  te4j::P2pTransport* te4j() { return t_; }

  void* allocateBuffer(size_t bytes) override {
    void* out = nullptr;
    return t_->allocateBuffer(bytes, &out) == te4j::kOk ? out : nullptr;
  }

  void freeBuffer(void* ptr) override { t_->freeBuffer(ptr); }

  std::vector<int32_t> exportIpcHandle(void* ptr) override {
    std::vector<int32_t> blob((size_t)t_->handleInts());
    const int n = t_->exportIpcHandle(ptr, blob.data(), (int)blob.size());
    if (n <= 0) return {};
    blob.resize((size_t)n);
    return blob;
  }

  void importPeerHandles(void* local_ptr, int rank, int num_ranks,
                         const std::vector<std::vector<int32_t>>& remote_handles,
                         const std::vector<int>& active_ranks_mask) override {
    all_accessible_ = false;
    if (num_ranks <= 0 || (int)remote_handles.size() < num_ranks) return;
    // te4j takes the blobs as one row-major array of handleInts() ints per rank; rows of the
    // own rank and of inactive ranks are ignored, so they may stay zero.
    const size_t ints = (size_t)t_->handleInts();
    std::vector<int32_t> rows(ints * (size_t)num_ranks, 0);
    for (int r = 0; r < num_ranks; ++r) {
      const std::vector<int32_t>& h = remote_handles[(size_t)r];
      std::memcpy(rows.data() + ints * (size_t)r, h.data(),
                  sizeof(int32_t) * (h.size() < ints ? h.size() : ints));
    }
    const uint64_t mask = maskOf(active_ranks_mask, num_ranks);
    const int window = t_->importPeerHandles(local_ptr, rank, num_ranks, rows.data(), mask);
    if (window < 0) return;
    if (window_ >= 0) t_->closeWindow(window_);
    window_ = window;
    all_accessible_ = t_->allPeersAccessible(window_);
  }

  int32_t* availableTablePtr() override {
    return window_ < 0 ? nullptr : (int32_t*)t_->availableTablePtr(window_);
  }

  void** peerPtrsTablePtr() override {
    return window_ < 0 ? nullptr : (void**)t_->peerPtrsTablePtr(window_);
  }

  bool allPeersAccessible() const override { return all_accessible_; }

  bool verifyPeerAccess() override {
    if (window_ < 0) return false;
    if (t_->verifyPeerAccess(window_) != te4j::kOk) all_accessible_ = false;
    return all_accessible_;
  }

 private:
  te4j::P2pTransport* t_;
  int window_ = -1;
  bool all_accessible_ = false;
};

class RdmaAdapter final : public RdmaTransport {
 public:
  RdmaAdapter(te4j::RdmaTransport* t, std::vector<std::string> filter)
      : t_(t), filter_(std::move(filter)) {}
  ~RdmaAdapter() override { te4j::destroyObject(t_); }

  te4j::RdmaTransport* te4j() { return t_; }

  int initialize(const std::string& device_name, int num_ranks, int num_qps) override {
    const std::string name = !device_name.empty() || filter_.empty() ? device_name : filter_[0];
    return code(t_->initialize(name.c_str(), num_ranks, num_qps));
  }

  int registerMemory(void* ptr, size_t bytes) override {
    return code(t_->registerMemory(ptr, bytes));
  }
  int allocateControlBuffer() override { return code(t_->allocateControlBuffer()); }
  int createQueuePairs(void* stream) override { return code(t_->createQueuePairs(stream)); }
  int recreateQueuePairs(void* stream) override { return code(t_->recreateQueuePairs(stream)); }

  int connectPeers(int local_rank, bool is_roce, const std::vector<int64_t>& remote_addrs,
                   const std::vector<int32_t>& remote_keys, const std::vector<int32_t>& remote_qpns,
                   const std::vector<int32_t>& remote_lids,
                   const std::vector<int64_t>& subnet_prefixes,
                   const std::vector<int64_t>& interface_ids,
                   const std::vector<int>& active_ranks_mask) override {
    const int n = t_->numRanks();
    const int qpr = t_->qpsPerRank();
    const size_t num_qps = (size_t)n * (size_t)qpr;
    if (n <= 0 || qpr <= 0 || local_rank < 0 || local_rank >= n) return 1;
    if (remote_addrs.size() < (size_t)n || remote_keys.size() < (size_t)n ||
        remote_qpns.size() < num_qps || subnet_prefixes.size() < (size_t)n ||
        interface_ids.size() < (size_t)n || active_ranks_mask.size() < (size_t)n ||
        (!is_roce && remote_lids.size() < num_qps)) {
      return 1;
    }
    // Upstream hands local QP i (rank i / qpr, channel i % qpr) its remote QP number; te4j
    // takes each rank's whole QP list and picks the QP serving (local_rank, channel) itself.
    std::vector<uint32_t> rows(num_qps * (size_t)n, 0);
    std::vector<uint64_t> addrs((size_t)n), prefixes((size_t)n), ids((size_t)n);
    std::vector<uint32_t> keys((size_t)n), lids((size_t)n, 0);
    for (int r = 0; r < n; ++r) {
      addrs[(size_t)r] = (uint64_t)remote_addrs[(size_t)r];
      keys[(size_t)r] = (uint32_t)remote_keys[(size_t)r];
      prefixes[(size_t)r] = (uint64_t)subnet_prefixes[(size_t)r];
      ids[(size_t)r] = (uint64_t)interface_ids[(size_t)r];
      if (!remote_lids.empty() && remote_lids.size() >= num_qps)
        lids[(size_t)r] = (uint32_t)remote_lids[(size_t)r * (size_t)qpr];
      for (int c = 0; c < qpr; ++c) {
        rows[num_qps * (size_t)r + (size_t)local_rank * (size_t)qpr + (size_t)c] =
            (uint32_t)remote_qpns[(size_t)r * (size_t)qpr + (size_t)c];
      }
    }
    return code(t_->connectPeers(local_rank, is_roce, addrs.data(), keys.data(), rows.data(),
                                 lids.data(), prefixes.data(), ids.data(),
                                 maskOf(active_ranks_mask, n)));
  }

  RdmaLocalMetadata localMetadata() const override {
    RdmaLocalMetadata meta{};
    const int length = t_->localMetadataLength();
    if (length < te4j::kRdmaMetadataHeader) return meta;
    std::vector<int64_t> m((size_t)length);
    if (t_->localMetadata(m.data(), length) < te4j::kRdmaMetadataHeader) return meta;
    // te4j's layout (te4j/rdma_api.h): [5] raddr [6] rkey [7] subnet_prefix [8] interface_id
    // [9] lid, QP numbers from [12]; upstream repeats the port's lid once per QP.
    meta.raddr = m[5];
    meta.rkey = (int32_t)m[6];
    meta.subnet_prefix = m[7];
    meta.interface_id = m[8];
    for (size_t i = (size_t)te4j::kRdmaMetadataHeader; i < m.size(); ++i) {
      meta.qpns.push_back((int32_t)m[i]);
      meta.lids.push_back((int32_t)m[9]);
    }
    return meta;
  }

  void* raddrsPtr() override { return t_->raddrsPtr(); }
  void* rkeysPtr() override { return t_->rkeysPtr(); }
  void* qpDevCtxsPtr() override { return t_->qpDevCtxsPtr(); }
  bool isRoce() const override { return t_->isRoce(); }
  int gidIndex() const override { return t_->gidIndex(); }

 private:
  /// Upstream's convention: 0 on success, non-zero otherwise (te4j's negative status).
  static int code(int status) { return status == te4j::kOk ? 0 : (status < 0 ? -status : status); }

  te4j::RdmaTransport* t_;
  std::vector<std::string> filter_;
};

}  // namespace

std::unique_ptr<P2pTransport> wrapP2pTransport(te4j::P2pTransport* t) {
  if (t == nullptr) return nullptr;
  if (t->status() != te4j::kOk) {
    te4j::setLastThreadError(std::string("P2pTransport: ") + t->lastError());
    te4j::destroyObject(t);
    return nullptr;
  }
  P2pAdapter* adapter = new (std::nothrow) P2pAdapter(t);
  if (adapter == nullptr) te4j::destroyObject(t);
  return std::unique_ptr<P2pTransport>(adapter);
}

std::unique_ptr<RdmaTransport> wrapRdmaTransport(te4j::RdmaTransport* t,
                                                 const std::vector<std::string>& device_filter) {
  if (t == nullptr) return nullptr;
  if (t->status() != te4j::kOk) {
    te4j::setLastThreadError(std::string("RdmaTransport: ") + t->lastError());
    te4j::destroyObject(t);
    return nullptr;
  }
  try {
    return std::unique_ptr<RdmaTransport>(new RdmaAdapter(t, device_filter));
  } catch (...) {
    te4j::destroyObject(t);
    return nullptr;
  }
}

std::unique_ptr<P2pTransport> createP2pDeviceTransport(int num_ranks) {
  int platform = 0;
  int device = 0;
  if (!currentPlatform(&platform, &device)) return nullptr;
  te4j::P2pTransport* t = te4j::P2pTransport::create(platform, device, num_ranks);
  if (t == nullptr) te4j::setLastThreadError("createP2pDeviceTransport: out of memory");
  return wrapP2pTransport(t);
}

std::unique_ptr<RdmaTransport> createIbgdaDeviceTransport(
    const std::vector<std::string>& device_filter) {
  int platform = 0;
  int device = 0;
  if (!currentPlatform(&platform, &device)) return nullptr;
  te4j::RdmaTransport* t = te4j::RdmaTransport::create(platform, device, te4j::kRdmaBackendAuto);
  if (t == nullptr) te4j::setLastThreadError("createIbgdaDeviceTransport: out of memory");
  return wrapRdmaTransport(t, device_filter);
}

te4j::P2pTransport* te4jP2p(P2pTransport* transport) {
  P2pAdapter* a = dynamic_cast<P2pAdapter*>(transport);
  return a != nullptr ? a->te4j() : nullptr;
}

te4j::RdmaTransport* te4jRdma(RdmaTransport* transport) {
  RdmaAdapter* a = dynamic_cast<RdmaAdapter*>(transport);
  return a != nullptr ? a->te4j() : nullptr;
}

}  // namespace device
}  // namespace mooncake
