// cuda_transfer_list_nocuda.cpp — the CUDA list of a host-only build: it says why it is missing.
#include "batch/transfer_lists.h"

namespace te4j {

TransferList* createCudaTransferList(int, int, const int32_t*, const uint64_t*, const uint64_t*,
                                     const uint64_t*) {
  return newUnavailableTransferList(kUnavailable,
                                    "TransferList: this libte4j was built without CUDA (nvcc was "
                                    "not found at build time)");
}

}  // namespace te4j
