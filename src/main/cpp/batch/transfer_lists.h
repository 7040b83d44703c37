// transfer_lists.h — factories of the TransferList implementations. Private to libte4j.
#pragma once

#include <string>

#include "te4j/list_api.h"

namespace te4j {

/// The host platform's list; nullptr only when memory is exhausted. The descriptors are checked.
TransferList* createHostTransferList(int count, const int32_t* opcodes, const uint64_t* local,
                                     const uint64_t* remote, const uint64_t* lengths);
/// The CUDA platform's list (a host-only build returns one whose status() says why not).
TransferList* createCudaTransferList(int device, int count, const int32_t* opcodes,
                                     const uint64_t* local, const uint64_t* remote,
                                     const uint64_t* lengths);
/// A list that refuses every call with `status` and `why` (bad arguments, platform missing).
TransferList* newUnavailableTransferList(int status, const std::string& why);

}  // namespace te4j
