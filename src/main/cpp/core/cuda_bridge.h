// cuda_bridge.h — what the host-only code calls of the CUDA platform. Plain C++: no CUDA header.
// A CUDA build defines it in core/cuda_runtime_api.cu, p2p/cuda_p2p_transport.cu and
// stream/cuda_op_stream.cu; a build without nvcc in core/cuda_bridge_nocuda.cpp, where every
// call says that this te4j has no CUDA. Private to libte4j.
#pragma once

#include <cstddef>
#include <string>

#include "te4j/api.h"

/// The CUDA-platform P2pTransport; nullptr only when memory is exhausted, otherwise check
/// status() / lastError().
te4j::P2pTransport* te4j_create_cuda_p2p_transport(int device, int num_ranks);

/// The CUDA-platform OpStream. owned=true with stream=nullptr: te4j creates its own non-blocking
/// stream; owned=false: wraps `stream` (a cudaStream_t) without taking ownership.
te4j::OpStream* te4j_create_cuda_op_stream(int device, void* stream, bool owned);

namespace te4j {
namespace cuda_bridge {

/// Whether this libte4j was built with the CUDA platform.
bool built();

// Each returns a te4j::Status (< 0) with the reason in *error, or a result >= 0.
int deviceCount(std::string* error);
/// The calling thread's current CUDA device (cudaGetDevice).
int currentDevice(std::string* error);
int canAccessPeer(int device, int peer_device, std::string* error);
int copy(int device, void* dst, const void* src, std::size_t bytes, std::string* error);
int fill(int device, void* dst, int byte_value, std::size_t bytes, std::string* error);
/// The MemoryKindCode of `ptr` and its device (-1: host), from the driver's pointer attributes;
/// kMemoryPageableHost when no driver or device exists (then no CUDA memory can exist here).
int pointerKind(const void* ptr, int* device, std::string* error);

/// Frees the op streams' idle word slabs (cuda_op_stream.cu); the bytes freed.
std::size_t releaseIdleStreamWords();

/// Frees the transfer batches' idle resources (batch/cuda_batch_resources.cu); the bytes freed.
std::size_t releaseIdleBatchResources();

/// Appends the "cuda.*" lines of availabilityReport() (everything but cuda.built). Never fails.
void appendAvailability(std::string* report);

}  // namespace cuda_bridge
}  // namespace te4j
