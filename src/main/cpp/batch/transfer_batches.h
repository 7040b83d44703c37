// transfer_batches.h — factories of the TransferBatch implementations. Private to libte4j.
#pragma once

#include <string>

#include "te4j/batch_api.h"

namespace te4j {

/// The host platform's batch; nullptr only when memory is exhausted.
TransferBatch* createHostTransferBatch(int capacity);
/// The CUDA platform's batch (a host-only build returns one whose status() says why not).
TransferBatch* createCudaTransferBatch(int device, int capacity);
/// A batch that refuses every call with `status` and `why` (bad arguments, platform missing).
TransferBatch* newUnavailableTransferBatch(int status, const std::string& why);

}  // namespace te4j
