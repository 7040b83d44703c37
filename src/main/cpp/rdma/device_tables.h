// device_tables.h — what both RdmaTransport backends hand to device code, in one place: the
// device tables (QP contexts, raddrs, rkeys) and the window they describe, the RDMA part of a
// device context built from them, and a QP's error record read back (TableRdmaTransport, the
// base of the software-NIC and mlx5 transports).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "rdma/memory_port.h"
#include "te4j/rdma_api.h"

namespace mooncake {
namespace device {
struct IbgdaContext;
struct McErrorRecord;
}  // namespace device
}  // namespace mooncake

namespace te4j {
namespace rdma {

/// A transport's device tables and the window they describe.
struct DeviceTables {
  void* qp_table = nullptr;  // IbgdaQp[num_ranks * qps_per_rank]
  void* raddrs = nullptr;    // uint64 per rank
  void* rkeys = nullptr;     // uint32 per rank
  uint64_t window_base = 0;
  uint32_t window_lkey = 0;
  int num_ranks = 0;
  int qps_per_rank = 0;
  uint64_t timeout_ns = 0;
  uint32_t flags = 0;                                       // IbgdaContext::flags (kIbgda*)
  mooncake::device::McErrorRecord* error_record = nullptr;  // device code's view
};

/// Fills *out (zeroed first) from the tables.
void fillIbgdaContext(const DeviceTables& tables, mooncake::device::IbgdaContext* out);

/// The 8 values of RdmaTransport::queryQpError for QP qp_index, read from the device table
/// through `memory`; 0, or -1 with *err when the read failed.
int readQpError(MemoryPort& memory, const void* qp_table, int qp_index, int64_t out[8],
                std::string* err);

/// The part of an RdmaTransport both backends share: the device tables, the registered window,
/// the device timeout, and the calls answered from them alone. Backends fill the members;
/// windowKey() is the local key the window was registered with (0: not yet).
class TableRdmaTransport : public RdmaTransport {
 public:
  ~TableRdmaTransport() override { releaseErrorRecord(); }
  void* raddrsPtr() override { return connected_ ? raddrs_ : nullptr; }
  void* rkeysPtr() override { return connected_ ? rkeys_ : nullptr; }
  void* qpDevCtxsPtr() override { return haveQps() ? qp_table_ : nullptr; }
  int numRanks() const override { return num_ranks_; }
  int qpsPerRank() const override { return qps_per_rank_; }
  int setDeviceTimeoutNs(int64_t timeout_ns) override;
  int fillIbgdaContext(mooncake::device::IbgdaContext* out) override;
  int queryQpError(int qp_index, int64_t* out, int capacity) override;
  uint64_t registeredBytes() const override { return window_bytes_; }

 protected:
  /// Why initialize's (num_ranks, num_qps) is refused, or "" when it is a valid shape: 1..64
  /// ranks and a positive multiple of num_ranks QPs (both backends accept the same shapes).
  static std::string shapeError(int num_ranks, int num_qps);

  /// Device code's view of this transport's error record (ibgda/error_record.cuh), allocated in
  /// control memory on first use and registered for the op streams of (platform, device);
  /// nullptr (with *err) when the allocation fails. Needs memory_.
  mooncake::device::McErrorRecord* errorRecord(int platform, int device, std::string* err);
  /// Unregisters and frees the record; backends call it before releasing memory_.
  void releaseErrorRecord();

  virtual uint32_t windowKey() const = 0;
  virtual bool haveQps() const = 0;
  /// IbgdaContext::flags of this backend (0: none).
  virtual uint32_t ibgdaFlags() const { return 0; }
  int numQps() const { return num_ranks_ * qps_per_rank_; }

  std::unique_ptr<MemoryPort> memory_;
  void* qp_table_ = nullptr;  // IbgdaQp[numQps()], platform memory
  void* raddrs_ = nullptr;    // uint64 per rank
  void* rkeys_ = nullptr;     // uint32 per rank
  uint64_t window_base_ = 0;
  uint64_t window_bytes_ = 0;
  int num_ranks_ = 0;
  int qps_per_rank_ = 0;
  bool connected_ = false;
  uint64_t timeout_ns_ = 10000000000ull;
  void* error_host_ = nullptr;  // the record as the host reads it
  void* error_dev_ = nullptr;   // ... and as device code writes it
};

}  // namespace rdma
}  // namespace te4j
