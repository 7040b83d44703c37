// variants/put_variants.cu — the experiment variants of the put kernel (knob `put` of
// te4j/tuning.h), measured by te4j-bench beside te4j's own policy (put_launch.cu). Compiled only
// into a libte4j configured with TE4J_PUT_VARIANTS=ON; the library's build never sets it.
//
//   u8 / u16   grid-stride 16-byte copy with 8 / 16 loads in flight per thread
//   u8c        each block copies one contiguous slab (8 in flight)
//   tma*       bulk copies (cp.async.bulk), S stages x C bytes per block; puts under 256 KiB use u8
//   tmah/tmaq  thread 0 moves 1/2 (1/4) of the body through tma8's bulk pipeline while warps 1..
//              copy the rest with 16-byte LSU stores (does the SM's bulk path add to its store
//              path, or share its limit?)
//   cluster    the lean kernel as one thread-block cluster (<= 8 blocks): the blocks of a
//              putWithSignal meet at the cluster barrier instead of an L2 counter
#include "stream/put_launch.h"

#include "stream/kernels/bulk_put_kernel.cuh"
#include "stream/kernels/lean_put_kernel.cuh"
#include "te4j/tuning.h"

namespace te4j {
namespace cuda {
namespace {

// u16's registers (4 per in-flight word) allow blocks of at most 512 threads.
constexpr unsigned kU16MaxThreads = 512;

struct Variant {
  PutKernelFn kernel;
  size_t smem;  // dynamic shared memory per block
};

template <int kStages, int kChunk>
Variant bulkOrGrid(size_t nbytes) {
  if (nbytes < kBulkMinBytes) return {mc_put_copy_kernel<kMcPutGrid, 8, 1, 16>, 0};
  return {mc_put_copy_kernel<kMcPutBulk, 8, kStages, kChunk>, (size_t)kStages * kChunk};
}

template <int kBulkQuarters>
Variant hybridOrGrid(size_t nbytes) {
  if (nbytes < kBulkMinBytes) return {mc_put_copy_kernel<kMcPutGrid, 8, 1, 16>, 0};
  return {mc_put_copy_kernel<kMcPutHybrid, 8, 8, 16384, kBulkQuarters>, 8 * 16384};
}

Variant variantFor(int put_knob, size_t nbytes) {
  using namespace te4j::tuning;
  switch (put_knob) {
    case kPutU8: return {mc_put_copy_kernel<kMcPutGrid, 8, 1, 16>, 0};
    case kPutU16: return {mc_put_copy_kernel<kMcPutGrid, 16, 1, 16>, 0};
    case kPutU8Contig: return {mc_put_copy_kernel<kMcPutContig, 8, 1, 16>, 0};
    case kPutTma: return bulkOrGrid<4, 32768>(nbytes);
    case kPutTma8: return bulkOrGrid<8, 16384>(nbytes);
    case kPutTma3: return bulkOrGrid<3, 65536>(nbytes);
    case kPutTmaHalf: return hybridOrGrid<2>(nbytes);
    case kPutTmaQuarter: return hybridOrGrid<1>(nbytes);
    case kPutCluster: return {mc_put_lean_kernel<true>, 0};
    default: return {nullptr, 0};
  }
}

}  // namespace

cudaError_t launchPutVariant(int put_knob, const PutLaunch& put) {
  const Variant v = variantFor(put_knob, put.nbytes);
  if (v.kernel == nullptr) return cudaErrorInvalidValue;
  PutLaunch shaped = put;
  if (put_knob == tuning::kPutU16 && shaped.threads > kU16MaxThreads) {
    shaped.blocks *= (shaped.threads + kU16MaxThreads - 1) / kU16MaxThreads;
    shaped.threads = kU16MaxThreads;
  }
  return launchPutKernel(shaped, v.kernel, put.flags, v.smem, put.pdl,
                         put_knob == tuning::kPutCluster);
}

}  // namespace cuda
}  // namespace te4j
