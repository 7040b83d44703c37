// put_launch.cu — te4j's put kernel policy for P2P and own-rank routes (see put_launch.h).
#include "stream/put_launch.h"

#include <map>
#include <mutex>
#include <utility>

#include "stream/kernels/bulk_put_kernel.cuh"
#include "stream/kernels/lean_put_kernel.cuh"
#include "te4j/tuning.h"

namespace te4j {
namespace cuda {
namespace {

// Thread-block clusters larger than this are not portable.
constexpr unsigned kMaxClusterBlocks = 8;

// Raises the dynamic shared-memory limit of `kernel` on `device` once (the attribute is per
// kernel and device; setting it again would cost a driver call per launch).
cudaError_t allowSharedMemory(PutKernelFn kernel, size_t smem, int device) {
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

}  // namespace

uint32_t putFlags() {
  using namespace te4j::tuning;
  uint32_t flags = 0;
  if (get(kSignal) != kSignalAtom) flags |= kPutFlagRedSignal;
  if (get(kArrival) == kArrivalGpu) flags |= kPutFlagGpuArrival;
  return flags;
}

cudaError_t launchPutKernel(const PutLaunch& put, PutKernelFn kernel, uint32_t flags, size_t smem,
                            bool pdl, bool cluster) {
  cudaError_t e = allowSharedMemory(kernel, smem, put.device);
  if (e != cudaSuccess) return e;
  unsigned blocks = put.blocks;
  if (cluster && blocks > kMaxClusterBlocks) blocks = kMaxClusterBlocks;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(blocks);
  cfg.blockDim = dim3(put.threads);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = put.stream;
  cudaLaunchAttribute attr[2];
  cfg.attrs = attr;
  if (pdl) {
    attr[cfg.numAttrs].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[cfg.numAttrs].val.programmaticStreamSerializationAllowed = 1;
    ++cfg.numAttrs;
  }
  if (cluster) {
    attr[cfg.numAttrs].id = cudaLaunchAttributeClusterDimension;
    attr[cfg.numAttrs].val.clusterDim.x = blocks;
    attr[cfg.numAttrs].val.clusterDim.y = 1;
    attr[cfg.numAttrs].val.clusterDim.z = 1;
    ++cfg.numAttrs;
  }
  return cudaLaunchKernelEx(&cfg, kernel, *put.ctx, put.dst_rank, put.recv_ptr, put.send_ptr,
                            put.nbytes, put.sig_ptr, put.value, flags, put.scratch, put.status);
}

cudaError_t launchPut(const PutLaunch& put) {
  if (put.nbytes >= kBulkPutBytes) {
    constexpr int kStages = 8;
    constexpr int kChunk = 16384;
    return launchPutKernel(put, mc_put_copy_kernel<kMcPutBulk, 8, kStages, kChunk>, put.flags,
                           (size_t)kStages * kChunk, put.pdl, false);
  }
  return launchPutKernel(put, mc_put_lean_kernel<false>, put.flags, 0, put.pdl, false);
}

}  // namespace cuda
}  // namespace te4j
