// ibgda/status.cuh — return values of the device-side RDMA primitives.
//
// 0 is success; negative values never collide with routing.cuh's positive route codes.
// Device code returns them and records details in the QP context; it never traps.
#pragma once

namespace mooncake {
namespace device {

enum : int {
  kMcRdmaOk = 0,
  kMcRdmaInvalid = -1,  // no such QP (rank/channel/qps_per_rank out of range), no RDMA tables
  kMcRdmaTimeout = -2,  // the QP lock, a ring slot or a completion did not come within the bound
  kMcRdmaQpError = -3,  // an error CQE was seen: the QP is in the error state until recreated
  kMcRdmaFatal = -4,    // a CQE with an opcode a requester never receives (counted in err_fatal)
};

}  // namespace device
}  // namespace mooncake
