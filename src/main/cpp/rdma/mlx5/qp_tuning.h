// qp_tuning.h — the QP attributes a fabric dictates rather than te4j: service level / priority,
// traffic class (DSCP), ack timeout and retry counts, read from the environment.
//
// Lossless RoCE fabrics usually carry RDMA in one DSCP / priority (often DSCP 26, priority 3)
// with PFC; priority 0 is lossy, and a congested lossy fabric makes RC QPs exceed their retry
// count within well under a second. The names follow NVSHMEM's NVSHMEM_IB_SL /
// NVSHMEM_IB_TRAFFIC_CLASS / NVSHMEM_IB_TIMEOUT / NVSHMEM_IB_RETRY_CNT:
//   TE4J_RDMA_SL              0..15 (InfiniBand SL; RoCE: the Ethernet priority, 0..7)  default 0
//   TE4J_RDMA_TRAFFIC_CLASS   0..255, the GRH traffic class byte (DSCP << 2 | ECN)      default 0
//   TE4J_RDMA_ACK_TIMEOUT     0..31: 4.096 us << n per try (0: infinite)                default 20
//   TE4J_RDMA_RETRY_COUNT     0..7 transport retries                                   default 7
//   TE4J_RDMA_RNR_RETRY       0..7 receiver-not-ready retries (7: infinite)            default 7
#pragma once

#include <cstdint>
#include <string>

namespace te4j {
namespace rdma {

struct QpTuning {
  uint8_t sl = 0;
  uint8_t traffic_class = 0;
  uint8_t ack_timeout = 20;
  uint8_t retry_count = 7;
  uint8_t rnr_retry = 7;
};

/// Where the variables are read (getenv, or a test's table).
using EnvLookup = const char* (*)(const char* name);

/// Reads the variables above through `env` into *out (defaults for unset ones). False, with
/// *why naming the variable, its value and the accepted range, when one is malformed or out of
/// range; `roce` restricts TE4J_RDMA_SL to the eight Ethernet priorities.
bool readQpTuning(EnvLookup env, bool roce, QpTuning* out, std::string* why);

}  // namespace rdma
}  // namespace te4j
