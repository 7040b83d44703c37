// put_variants.cu — the put kernel's experiment variants (te4j-bench's knob put,
// te4j/bench_knobs.h), measured beside te4j's own policy (the library's stream/put_launch.cu).
// libte4j keeps only the kernels it launches; a variant reaches te4j's CUDA op streams through the
// library's private launcher hook (setPutLauncher, stream/put_launch.h), and this library launches
// it with its own CUDA runtime, the one its kernels are registered with.
//
//   u8 / u16   grid-stride 16-byte copy with 8 / 16 loads in flight per thread
//   u8c        each block copies one contiguous slab (8 in flight)
//   tma*       bulk copies (cp.async.bulk), S stages x C bytes per block; puts under 256 KiB use u8
//   tmah/tmaq  thread 0 moves 1/2 (1/4) of the body through tma8's bulk pipeline while warps 1..
//              copy the rest with 16-byte LSU stores (does the SM's bulk path add to its store
//              path, or share its limit?)
//   cluster    the lean kernel as one thread-block cluster (<= 8 blocks): the blocks of a
//              putWithSignal meet at the cluster barrier instead of an L2 counter
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "stream/kernels/bulk_put_kernel.cuh"
#include "stream/kernels/lean_put_kernel.cuh"
#include "stream/put_kernel_launch.cuh"
#include "stream/put_launch.h"
#include "te4j/bench_knobs.h"

namespace te4j {
namespace bench {
namespace {

namespace dev = mooncake::device;
using cuda::PutLaunch;
using cuda::PutLauncher;

// Below this a bulk variant is not worth its pipeline: too few chunks to spread over blocks.
constexpr size_t kBulkMinBytes = 256 * 1024;
// u16's registers (4 per in-flight word) allow blocks of at most 512 threads.
constexpr unsigned kU16MaxThreads = 512;
// Thread-block clusters larger than this are not portable.
constexpr unsigned kMaxClusterBlocks = 8;

__device__ __forceinline__ size_t globalThread() {
  return (size_t)blockIdx.x * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ size_t gridThreads() { return (size_t)gridDim.x * blockDim.x; }

// Bodies for the library's mc_put_copy_kernel (kernels/bulk_put_kernel.cuh: the contract).
// Registers: U in-flight 16-byte words need 4U registers; 1024-thread blocks stay legal for
// U <= 8 (64 registers), U = 16 gets up to 128 (blocks of at most 512 threads).
template <int kUnroll>
struct GridBody {
  static constexpr int kStages = 0;
  static constexpr unsigned kMaxThreads = kUnroll > 8 ? 512 : 1024;
  static constexpr size_t kSharedBytes = 0;
  __device__ static bool copy(uint8_t* dst, const uint8_t* src, size_t nbytes, uint64_t*,
                              uint64_t) {
    dev::detail::mc_copy_cooperative_unrolled<kUnroll>(dst, src, nbytes, globalThread(),
                                                       gridThreads());
    return true;
  }
};

template <int kUnroll>
struct ContigBody {
  static constexpr int kStages = 0;
  static constexpr unsigned kMaxThreads = 1024;
  static constexpr size_t kSharedBytes = 0;
  __device__ static bool copy(uint8_t* dst, const uint8_t* src, size_t nbytes, uint64_t*,
                              uint64_t) {
    const size_t slab = ((nbytes + gridDim.x - 1) / gridDim.x + 15) / 16 * 16;
    const size_t lo = (size_t)blockIdx.x * slab;
    if (lo < nbytes) {
      const size_t n = nbytes - lo < slab ? nbytes - lo : slab;
      dev::detail::mc_copy_cooperative_unrolled<kUnroll>(dst + lo, src + lo, n, threadIdx.x,
                                                         blockDim.x);
    }
    return true;
  }
};

// The first kBulkQuarters / 4 of the body (whole chunks) through thread 0's bulk pipeline, the
// rest through warps 1.. of every block (16-byte LSU stores, 8 in flight).
template <int kBulkQuarters>
struct HybridBody {
  static constexpr int kStages = 8;
  static constexpr int kChunk = 16384;
  static constexpr unsigned kMaxThreads = 1024;
  static constexpr size_t kSharedBytes = (size_t)kStages * kChunk;
  __device__ static bool copy(uint8_t* dst, const uint8_t* src, size_t nbytes, uint64_t* bars,
                              uint64_t deadline) {
    if ((((uintptr_t)dst ^ (uintptr_t)src) & 15u) != 0) {
      return GridBody<8>::copy(dst, src, nbytes, bars, deadline);
    }
    extern __shared__ __align__(128) uint8_t mc_bulk_smem[];
    size_t body = 0;
    const size_t head = cuda::mc_put_copy_edges(dst, src, nbytes, &body);
    size_t bulk = body / 4 * kBulkQuarters / (size_t)kChunk * (size_t)kChunk;
    if (blockDim.x <= 32) bulk = body;  // no warp 1: all bulk
    const bool ok = dev::detail::mc_bulk_block_copy<kStages, kChunk>(dst + head, src + head, bulk,
                                                                     mc_bulk_smem, bars, deadline);
    if (bulk < body && threadIdx.x >= 32) {
      const size_t lanes = blockDim.x - 32;
      dev::detail::mc_copy_int4_unrolled<8>(
          (dev::mc_int4*)(dst + head + bulk), (const dev::mc_int4*)(src + head + bulk),
          (body - bulk) / 16, (size_t)blockIdx.x * lanes + (threadIdx.x - 32),
          (size_t)gridDim.x * lanes);
    }
    return ok;
  }
};

/// Cluster barrier of every thread of the cluster: the arrive releases, the wait acquires, at
/// cluster scope (Hopper thread-block clusters; the hardware barrier, no memory round trip).
__device__ __forceinline__ void clusterSyncAcqRel() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;"
               :
               :
               : "memory");
}

__device__ __forceinline__ uint32_t clusterRank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}

/// The lean kernel's copy with the grid as ONE thread-block cluster: the blocks meet at the
/// cluster barrier instead of the arrival counter (an L2 atomic round trip) before one block
/// signals. Each block's stores are performed at system scope by its thread 0 before it arrives
/// (unless kPutFlagGpuArrival: then the signal's cumulative release covers them, as in the lean
/// kernel); the signalling thread's wait acquires every arrival, so every block's stores happen
/// before its release add.
__global__ void __launch_bounds__(1024, 1)
    cluster_put_kernel(mooncake::device::CommCtx ctx, int dst_rank, void* recv_ptr,
                       const void* send_ptr, size_t nbytes, uint32_t* sig_ptr, uint32_t value,
                       uint32_t flags, cuda::McStreamScratch* scratch,
                       cuda::McStreamStatus* status) {
  using namespace mooncake::device;
  asm volatile("griddepcontrol.wait;" : : : "memory");
  asm volatile("griddepcontrol.launch_dependents;" : : : "memory");
  uint32_t* sig = nullptr;
  if (!cuda::mc_lean_put_copy(ctx, dst_rank, recv_ptr, send_ptr, nbytes, sig_ptr, scratch, status,
                              &sig)) {
    return;
  }
  mc_bar_sync();
  if (gridDim.x > 1) {
    if (threadIdx.x == 0 && (flags & cuda::kPutFlagGpuArrival) == 0) mc_fence();
    clusterSyncAcqRel();
    if (clusterRank() != 0) return;
  }
  if (threadIdx.x != 0) return;
  cuda::mc_put_release_signal(sig, value, flags);
}

template <class Body>
cudaError_t launchBody(const PutLaunch& put) {
  return cuda::launchPutKernel(put, cuda::mc_put_copy_kernel<Body>, Body::kSharedBytes, nullptr);
}

// tma*: bulk copies from kBulkMinBytes, u8 below.
template <int kStages, int kChunk>
cudaError_t launchBulk(const PutLaunch& put) {
  if (put.nbytes < kBulkMinBytes) return launchBody<GridBody<8>>(put);
  return launchBody<cuda::McBulkPutBody<kStages, kChunk>>(put);
}

template <int kBulkQuarters>
cudaError_t launchHybrid(const PutLaunch& put) {
  if (put.nbytes < kBulkMinBytes) return launchBody<GridBody<8>>(put);
  return launchBody<HybridBody<kBulkQuarters>>(put);
}

cudaError_t launchU16(const PutLaunch& put) {
  PutLaunch shaped = put;
  if (shaped.threads > kU16MaxThreads) {  // the same threads in total, in blocks u16 allows
    shaped.blocks *= (shaped.threads + kU16MaxThreads - 1) / kU16MaxThreads;
    shaped.threads = kU16MaxThreads;
  }
  return launchBody<GridBody<16>>(shaped);
}

cudaError_t launchCluster(const PutLaunch& put) {
  PutLaunch shaped = put;
  if (shaped.blocks > kMaxClusterBlocks) shaped.blocks = kMaxClusterBlocks;
  cudaLaunchAttribute cluster;
  cluster.id = cudaLaunchAttributeClusterDimension;
  cluster.val.clusterDim.x = shaped.blocks;
  cluster.val.clusterDim.y = 1;
  cluster.val.clusterDim.z = 1;
  return cuda::launchPutKernel(shaped, cluster_put_kernel, 0, &cluster);
}

PutLauncher launcherFor(int variant) {
  switch (variant) {
    case kPutU8: return launchBody<GridBody<8>>;
    case kPutU16: return launchU16;
    case kPutU8Contig: return launchBody<ContigBody<8>>;
    case kPutTma: return launchBulk<4, 32768>;
    case kPutTma8: return launchBulk<8, 16384>;
    case kPutTma3: return launchBulk<3, 65536>;
    case kPutTmaHalf: return launchHybrid<2>;
    case kPutTmaQuarter: return launchHybrid<1>;
    case kPutCluster: return launchCluster;
    default: return nullptr;
  }
}

}  // namespace
}  // namespace bench
}  // namespace te4j

// Declared in bench_factory.cpp, which is also compiled without CUDA.
void te4j_bench_route_put_variant(int variant) {
  te4j::cuda::setPutLauncher(te4j::bench::launcherFor(variant));
}
