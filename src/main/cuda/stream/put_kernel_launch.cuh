// put_kernel_launch.cuh — launches one P2P put kernel (put_launch.h's signature) for a PutLaunch.
// Internal linkage on purpose: te4j (put_launch.cu) and te4j-bench's variants each link their own
// static CUDA runtime, and a kernel can only be launched through the runtime that registered it,
// so each library must run its own copy of this code, never the other's.
#pragma once

#include <cuda_runtime.h>
#include <stddef.h>

#include <map>
#include <mutex>
#include <utility>

#include "stream/put_launch.h"

namespace te4j {
namespace cuda {

/// Raises the dynamic shared-memory limit of `kernel` on `device` once (the attribute is per
/// kernel and device; setting it again would cost a driver call per launch).
static inline cudaError_t allowPutSharedMemory(PutKernelFn kernel, size_t smem, int device) {
  if (smem <= 48 * 1024) return cudaSuccess;
  static std::mutex mu;
  static std::map<std::pair<PutKernelFn, int>, bool>* raised =
      new std::map<std::pair<PutKernelFn, int>, bool>();  // never destroyed: outlives streams
  std::lock_guard<std::mutex> lock(mu);
  if (raised->count({kernel, device}) != 0) return cudaSuccess;
  const cudaError_t e =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
  if (e == cudaSuccess) (*raised)[{kernel, device}] = true;
  return e;
}

/// Launches `kernel` for `put` (its grid, block, stream, put.flags): `smem` bytes of dynamic
/// shared memory per block, programmatic dependent launch when put.pdl, and `extra` (nullptr: none)
/// as one more launch attribute.
static inline cudaError_t launchPutKernel(const PutLaunch& put, PutKernelFn kernel, size_t smem,
                                          const cudaLaunchAttribute* extra) {
  cudaError_t e = allowPutSharedMemory(kernel, smem, put.device);
  if (e != cudaSuccess) return e;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(put.blocks);
  cfg.blockDim = dim3(put.threads);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = put.stream;
  cudaLaunchAttribute attr[2];
  cfg.attrs = attr;
  if (put.pdl) {
    attr[cfg.numAttrs].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[cfg.numAttrs].val.programmaticStreamSerializationAllowed = 1;
    ++cfg.numAttrs;
  }
  if (extra != nullptr) attr[cfg.numAttrs++] = *extra;
  return cudaLaunchKernelEx(&cfg, kernel, *put.ctx, put.dst_rank, put.recv_ptr, put.send_ptr,
                            put.nbytes, put.sig_ptr, put.value, put.flags, put.scratch, put.status);
}

}  // namespace cuda
}  // namespace te4j
