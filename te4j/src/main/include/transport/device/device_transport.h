// device_transport.h — the seed's header name for the host-side transport interfaces.
// te4j defines them once, in te4j/api.h; this header re-exports them under the seed's
// namespaces so code written against the seed finds them where it expects.
// Host code only (std::string inside); kernels include comm_device.cuh instead.
#pragma once

#include "te4j/api.h"
#include "comm_device.cuh"

namespace mooncake {
using P2pTransport = te4j::P2pTransport;
using OpStream = te4j::OpStream;

namespace device {
using P2pTransport = te4j::P2pTransport;
using OpStream = te4j::OpStream;
}  // namespace device
}  // namespace mooncake
