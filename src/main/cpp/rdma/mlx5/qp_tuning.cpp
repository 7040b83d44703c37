// qp_tuning.cpp — see qp_tuning.h.
#include "rdma/mlx5/qp_tuning.h"

#include <cerrno>
#include <cstdlib>

namespace te4j {
namespace rdma {

namespace {

// A decimal (or 0x hex) integer in [0, max] from variable `name`; an unset or empty variable
// leaves *out as it is.
bool readOne(EnvLookup env, const char* name, unsigned max, uint8_t* out, std::string* why) {
  const char* text = env(name);
  if (text == nullptr || *text == '\0') return true;
  char* end = nullptr;
  errno = 0;
  const unsigned long v = std::strtoul(text, &end, 0);
  if (errno != 0 || end == text || *end != '\0' || *text == '-' || v > max) {
    *why = std::string(name) + "='" + text + "' is not an integer in 0.." + std::to_string(max) +
           " (fix: set it to one, or unset it for the default " + std::to_string(*out) + ")";
    return false;
  }
  *out = (uint8_t)v;
  return true;
}

}  // namespace

bool readQpTuning(EnvLookup env, bool roce, QpTuning* out, std::string* why) {
  QpTuning t;
  if (!readOne(env, "TE4J_RDMA_SL", roce ? 7 : 15, &t.sl, why) ||
      !readOne(env, "TE4J_RDMA_TRAFFIC_CLASS", 255, &t.traffic_class, why) ||
      !readOne(env, "TE4J_RDMA_ACK_TIMEOUT", 31, &t.ack_timeout, why) ||
      !readOne(env, "TE4J_RDMA_RETRY_COUNT", 7, &t.retry_count, why) ||
      !readOne(env, "TE4J_RDMA_RNR_RETRY", 7, &t.rnr_retry, why)) {
    if (roce && why->rfind("TE4J_RDMA_SL", 0) == 0)
      *why += "; on RoCE the SL is the Ethernet priority (PCP), 0..7";
    return false;
  }
  *out = t;
  return true;
}

}  // namespace rdma
}  // namespace te4j
