// device_tables.h — what both RdmaTransport backends hand to device code, in one place: the
// RDMA part of a device context built from a transport's tables, and a QP's error record read
// back from them (RdmaTransport::fillIbgdaContext / queryQpError).
#pragma once

#include <cstdint>
#include <string>

namespace mooncake { namespace device { struct IbgdaContext; } }

namespace te4j {
namespace rdma {

class MemoryPort;

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
};

/// Fills *out (zeroed first) from the tables.
void fillIbgdaContext(const DeviceTables& tables, mooncake::device::IbgdaContext* out);

/// The 8 values of RdmaTransport::queryQpError for QP qp_index, read from the device table
/// through `memory`; 0, or -1 with *err when the read failed.
int readQpError(MemoryPort& memory, const void* qp_table, int qp_index, int64_t out[8],
                std::string* err);

}  // namespace rdma
}  // namespace te4j
