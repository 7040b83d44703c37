// cuda_transfer_batch_nocuda.cpp — the CUDA batch of a host-only build: it says why it is missing.
#include "batch/transfer_batches.h"

namespace te4j {

TransferBatch* createCudaTransferBatch(int, int) {
  return newUnavailableTransferBatch(kUnavailable,
                                     "TransferBatch: this libte4j was built without CUDA (nvcc was "
                                     "not found at build time)");
}

}  // namespace te4j
