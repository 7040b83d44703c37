// cuda_bridge.h — what api.cpp calls in the CUDA sources (src/main/cuda/*.cu). Plain C++: no CUDA
// header, so api.cpp compiles with g++. Defined only in a TE4J_WITH_CUDA build.
// Private to libte4j.
#pragma once

#include <cstddef>
#include <string>

#include "te4j/api.h"

/// The CUDA-platform P2pTransport; nullptr only when memory is exhausted, otherwise check
/// status() / lastError().
te4j::P2pTransport* te4j_create_cuda_p2p_transport(int device, int num_ranks);

namespace te4j {
namespace cuda_bridge {

// Each returns a te4j::Status (< 0) with the reason in *error, or a result >= 0.
int deviceCount(std::string* error);
/// The calling thread's current CUDA device (cudaGetDevice).
int currentDevice(std::string* error);
int canAccessPeer(int device, int peer_device, std::string* error);
int copy(int device, void* dst, const void* src, std::size_t bytes, std::string* error);
int fill(int device, void* dst, int byte_value, std::size_t bytes, std::string* error);

/// Frees the op streams' idle word slabs (cuda_op_stream.cu); the bytes freed.
std::size_t releaseIdleStreamWords();

/// Appends the "cuda.*" lines of availabilityReport() (everything but cuda.built). Never fails.
void appendAvailability(std::string* report);

}  // namespace cuda_bridge
}  // namespace te4j
