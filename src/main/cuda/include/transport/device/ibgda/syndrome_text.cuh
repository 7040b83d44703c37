// ibgda/syndrome_text.cuh — names of the error-CQE syndromes, for host-side error messages
// (both op streams describe an RDMA failure with the same words).
#pragma once

#include <stdint.h>

#include "transport/device/platform.cuh"
#include "mlx5_defs.cuh"

namespace mooncake {
namespace device {

MC_HOST_DEVICE inline const char* mc_rdma_syndrome_text(uint32_t syndrome) {
  switch (syndrome) {
    case mlx5::kSyndromeLocalLengthErr: return "local length error";
    case mlx5::kSyndromeLocalQpOpErr: return "local QP operation error";
    case mlx5::kSyndromeLocalProtErr:
      return "local protection error (source outside the registered buffer)";
    case mlx5::kSyndromeWrFlushErr:
      return "work request flushed (the QP was already in the error state)";
    case mlx5::kSyndromeMwBindErr: return "memory window bind error";
    case mlx5::kSyndromeBadRespErr: return "bad response";
    case mlx5::kSyndromeLocalAccessErr: return "local access error";
    case mlx5::kSyndromeRemoteInvalReqErr: return "remote invalid request";
    case mlx5::kSyndromeRemoteAccessErr:
      return "remote access error (bad rkey or address outside the peer's registered buffer)";
    case mlx5::kSyndromeRemoteOpErr: return "remote operation error";
    case mlx5::kSyndromeTransportRetryExcErr:
      return "transport retry counter exceeded (peer unreachable or QP not connected)";
    case mlx5::kSyndromeRnrRetryExcErr: return "RNR retry counter exceeded";
    case mlx5::kSyndromeRemoteAbortedErr: return "remote aborted";
  }
  return "unknown syndrome";
}

}  // namespace device
}  // namespace mooncake
