// device_tables.h — what both RdmaTransport backends hand to device code, in one place: the
// device tables (QP contexts, raddrs, rkeys) and the window they describe, the RDMA part of a
// device context built from them, a QP's error record read back, and the base of the
// software-NIC and mlx5 transports (TableRdmaTransport), which checks every call's arguments
// and state once for both.
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

/// Why connectPeers' (or connectMetadata's) active_ranks_mask is refused for num_ranks ranks, or
/// "" when it names none at or above num_ranks: such a rank would be skipped, and the caller
/// told it was connected.
std::string activeMaskError(int num_ranks, uint64_t active_ranks_mask);

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
/// the device timeout, the calls answered from them alone, and every argument and state check of
/// the calls that reach the NIC. Each such call is a template method: the public entry checks
/// its arguments and the transport's state once, here, with one status and message for both
/// backends, and only then calls the backend's hook (protected, below), which does the NIC's part
/// and returns kOk or fail(...). Backends fill the members; windowKey() is the local key the
/// window was registered with (0: not yet).
class TableRdmaTransport : public RdmaTransport {
 public:
  /// platform: kPlatformHost or kPlatformCuda; device: the CUDA ordinal (kPlatformCuda).
  TableRdmaTransport(int platform, int device) : platform_(platform), cuda_device_(device) {}
  ~TableRdmaTransport() override { releaseErrorRecord(); }

  int initialize(const char* device_name, int num_ranks, int num_qps) final;
  int registerMemory(void* ptr, std::size_t bytes) final;
  int deregisterMemory(void* ptr) final;
  int setRingSize(int wqebbs) final;
  int allocateControlBuffer() final;
  int createQueuePairs(void* stream) final;
  int recreateQueuePairs(void* stream) final;
  int connectPeers(int local_rank, bool is_roce, const uint64_t* remote_addrs,
                   const uint32_t* remote_keys, const uint32_t* remote_qpns,
                   const uint32_t* remote_lids, const uint64_t* subnet_prefixes,
                   const uint64_t* interface_ids, uint64_t active_ranks_mask) final;
  int localMetadataLength() const final { return kRdmaMetadataHeader + numQps(); }
  int localMetadata(int64_t* out, int capacity) final;
  int statistics(int64_t* out, int capacity) final;

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
  // The backends' hooks. Each runs only after its entry's checks passed, and returns kOk or
  // fail(status, message); the entry then records what every backend records (the shape, the
  // window, the connection) and clears the error.

  /// Opens the NIC and the memory port (initialize, the shape already checked; num_ranks_ and
  /// qps_per_rank_ are set once it succeeds).
  virtual int openNic(const char* device_name) = 0;
  /// Registers [ptr, ptr + bytes) (not null, not empty) as the window.
  virtual int registerWindow(void* ptr, std::size_t bytes) = 0;
  /// Forgets the registration that starts at ptr; false when there is none.
  virtual bool forgetRegion(void* ptr) = 0;
  /// Whether allocateControlBuffer has run (the ring size is fixed from then on).
  virtual bool controlAllocated() const = 0;
  /// Takes a valid ring size (a power of two, 2..32768) for the control buffer to come.
  virtual void useRingSize(uint32_t wqebbs) = 0;
  /// Allocates the rings, CQs and records (initialized, not yet allocated); the device tables
  /// are the entry's.
  virtual int allocateControl() = 0;
  /// Frees what allocateControl allocated (its tables failed, or the transport closes).
  virtual void releaseControl() = 0;
  /// Creates the QPs, replacing any that exist (initialized, control allocated); `record` is
  /// where device code records a post it could not make.
  virtual int makeQueuePairs(void* stream, mooncake::device::McErrorRecord* record) = 0;
  /// Connects the QPs (arguments checked: QPs exist, local_rank in range, the mask within
  /// num_ranks, no table null).
  virtual int connectQueuePairs(int local_rank, bool is_roce, const uint64_t* remote_addrs,
                                const uint32_t* remote_keys, const uint32_t* remote_qpns,
                                const uint32_t* remote_lids, const uint64_t* subnet_prefixes,
                                const uint64_t* interface_ids, uint64_t active_ranks_mask) = 0;
  /// localMetadata's values [6] rkey .. [11] gid_index (the rest is the entry's).
  virtual void addressValues(int64_t* out) const = 0;
  /// The QP number of QP i (i < numQps(), QPs exist).
  virtual uint32_t qpNumber(int i) const = 0;
  /// How many values statistics writes, and writing them (out has room for that many).
  virtual int statisticsCount() const = 0;
  virtual int readStatistics(int64_t* out) = 0;

  /// Whether initialize has succeeded (it sets the shape last).
  bool initialized() const { return num_ranks_ > 0; }

  /// Why initialize's (num_ranks, num_qps) is refused, or "" when it is a valid shape: 1..64
  /// ranks and a positive multiple of num_ranks QPs (both backends accept the same shapes).
  static std::string shapeError(int num_ranks, int num_qps);

  /// Device code's view of this transport's error record (ibgda/error_record.cuh), allocated in
  /// control memory on first use and registered for the op streams of (platform_, cuda_device_);
  /// nullptr (with *err) when the allocation fails. Needs memory_.
  mooncake::device::McErrorRecord* errorRecord(std::string* err);
  /// Unregisters and frees the record; backends call it before releasing memory_.
  void releaseErrorRecord();
  /// Copies each active rank's window address and key (0 for the others) into the device tables
  /// raddrs_ and rkeys_; kOk or fail(kCudaError, ...).
  int publishPeerWindows(const uint64_t* remote_addrs, const uint32_t* remote_keys,
                         uint64_t active_ranks_mask);
  /// Frees the device tables (allocateControlBuffer's); backends call it before releasing memory_.
  void freeTables();

  virtual uint32_t windowKey() const = 0;
  virtual bool haveQps() const = 0;
  /// IbgdaContext::flags of this backend (0: none).
  virtual uint32_t ibgdaFlags() const { return 0; }
  int numQps() const { return num_ranks_ * qps_per_rank_; }

  const int platform_;
  const int cuda_device_;  // CUDA ordinal (kPlatformCuda)
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
