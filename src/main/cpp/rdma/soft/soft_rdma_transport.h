// soft_rdma_transport.h — constructor of the software-NIC RdmaTransport (rdma_transport.cpp's
// factory picks it).
#pragma once

#include "te4j/rdma_api.h"

namespace te4j {
namespace rdma {

RdmaTransport* newSoftRdmaTransport(int platform, int device);

}  // namespace rdma
}  // namespace te4j
