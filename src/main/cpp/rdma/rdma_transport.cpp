// rdma_transport.cpp — RdmaTransport's factory (backend choice) and its shared helpers.
#include <cstring>
#include <new>
#include <string>

#include "te4j/rdma_api.h"
#include "transport/device/comm_device.cuh"
#include "rdma/mlx5_probe.h"
#include "rdma/soft/soft_rdma_transport.h"
#if defined(TE4J_HAVE_RDMA_CORE_HEADERS)
#include "rdma/mlx5/mlx5_rdma_transport.h"
#include "rdma/mlx5/verbs_api.h"
#endif

namespace te4j {

namespace {

// A transport that only reports why it cannot exist (JNI callers get status() / lastError()).
class UnavailableRdmaTransport final : public RdmaTransport {
 public:
  UnavailableRdmaTransport(int status, const std::string& why, int backend) : backend_(backend) {
    init_status_ = fail(status, why);
  }
  int backend() const override { return backend_; }
  int initialize(const char*, int, int) override { return again(); }
  int registerMemory(void*, std::size_t) override { return again(); }
  int deregisterMemory(void*) override { return again(); }
  int setRingSize(int) override { return again(); }
  int allocateControlBuffer() override { return again(); }
  int createQueuePairs(void*) override { return again(); }
  int recreateQueuePairs(void*) override { return again(); }
  int connectPeers(int, bool, const uint64_t*, const uint32_t*, const uint32_t*, const uint32_t*,
                   const uint64_t*, const uint64_t*, uint64_t) override {
    return again();
  }
  int localMetadataLength() const override { return 0; }
  int localMetadata(int64_t*, int) override { return again(); }
  void* raddrsPtr() override { return nullptr; }
  void* rkeysPtr() override { return nullptr; }
  void* qpDevCtxsPtr() override { return nullptr; }
  bool isRoce() const override { return false; }
  int gidIndex() const override { return 0; }
  int numRanks() const override { return 0; }
  int qpsPerRank() const override { return 0; }
  int setDeviceTimeoutNs(int64_t) override { return again(); }
  int fillIbgdaContext(mooncake::device::IbgdaContext*) override { return again(); }
  int queryQpError(int, int64_t*, int) override { return again(); }
  int statistics(int64_t*, int) override { return again(); }
  const char* statisticsNames() const override { return ""; }
  const char* diagnostics() override { return ""; }

 private:
  int again() { return init_status_; }
  int backend_;
};

}  // namespace

RdmaTransport* RdmaTransport::create(int platform, int device, int backend) {
  if (platform != kPlatformHost && platform != kPlatformCuda)
    return new (std::nothrow) UnavailableRdmaTransport(
        kInvalidArgument, "RdmaTransport: unknown platform " + std::to_string(platform), backend);
  if (backend == kRdmaBackendSoft) return rdma::newSoftRdmaTransport(platform, device);
  if (backend != kRdmaBackendMlx5 && backend != kRdmaBackendAuto)
    return new (std::nothrow) UnavailableRdmaTransport(
        kInvalidArgument, "RdmaTransport: unknown backend " + std::to_string(backend), backend);
#if defined(TE4J_HAVE_RDMA_CORE_HEADERS)
  // The hardware backend when an mlx5 device is listed; auto falls back to the software NIC.
  std::string why;
  const rdma::VerbsApi* api = rdma::probeMlx5(&why) ? rdma::loadVerbsApi(&why) : nullptr;
  if (api != nullptr) return rdma::newMlx5RdmaTransport(platform, device, api);
  if (backend == kRdmaBackendMlx5)
    return new (std::nothrow)
        UnavailableRdmaTransport(kUnavailable, "RdmaTransport(mlx5): " + why, backend);
#else
  if (backend == kRdmaBackendMlx5)
    return new (std::nothrow) UnavailableRdmaTransport(
        kUnavailable, std::string("RdmaTransport(mlx5): ") + rdma::kBuiltWithoutRdmaCore, backend);
#endif
  return rdma::newSoftRdmaTransport(platform, device);
}

namespace {

// The routes of a context gaining or losing its RDMA tables: every rank no mapping reaches goes
// over RDMA while the tables are there, and reaches nothing without them. A context built the
// upstream way (routes unknown) keeps deriving its routes from the tables.
void setUnmappedRoutes(mooncake::device::CommCtx* ctx, uint8_t from, uint8_t to) {
  for (int r = 0; r < mooncake::device::kMcMaxRanks; ++r) {
    if (mooncake::device::mc_decided_route(*ctx, r) == from) {
      mooncake::device::mc_set_decided_route(ctx, r, to);
    }
  }
}

}  // namespace

int RdmaTransport::fillCommCtx(mooncake::device::CommCtx* ctx) {
  if (ctx == nullptr) return fail(kInvalidArgument, "fillCommCtx: null context");
  const int st = fillIbgdaContext(&ctx->ibgda);
  // By what the context holds now (a failed refill may have left it without tables).
  if (mooncake::device::mc_rdma_available(ctx->ibgda)) {
    setUnmappedRoutes(ctx, mooncake::device::kMcRankRouteNone, mooncake::device::kMcRankRouteRdma);
  } else {
    setUnmappedRoutes(ctx, mooncake::device::kMcRankRouteRdma, mooncake::device::kMcRankRouteNone);
  }
  return st;
}

int RdmaTransport::clearCommCtx(mooncake::device::CommCtx* ctx) {
  if (ctx == nullptr) return kInvalidArgument;
  std::memset(&ctx->ibgda, 0, sizeof(ctx->ibgda));
  setUnmappedRoutes(ctx, mooncake::device::kMcRankRouteRdma, mooncake::device::kMcRankRouteNone);
  return kOk;
}

}  // namespace te4j
