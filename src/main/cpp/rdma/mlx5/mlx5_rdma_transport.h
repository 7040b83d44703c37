// mlx5_rdma_transport.h — constructor of the ConnectX (DevX) RdmaTransport; rdma_transport.cpp's
// factory picks it for backend mlx5, and for auto when an mlx5 device exists.
#pragma once

#if defined(TE4J_HAVE_RDMA_CORE_HEADERS)

#include "te4j/rdma_api.h"
#include "rdma/mlx5/verbs_api.h"

namespace te4j {
namespace rdma {

/// api: the rdma-core table (loadVerbsApi, or a test's fake); must outlive the transport.
RdmaTransport* newMlx5RdmaTransport(int platform, int device, const VerbsApi* api);

}  // namespace rdma
}  // namespace te4j

#endif  // TE4J_HAVE_RDMA_CORE_HEADERS
