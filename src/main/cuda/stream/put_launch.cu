// put_launch.cu — te4j's put kernel policy for P2P and own-rank routes (see put_launch.h).
#include "stream/put_launch.h"

#include <atomic>

#include "stream/kernels/bulk_put_kernel.cuh"
#include "stream/kernels/lean_put_kernel.cuh"
#include "stream/put_kernel_launch.cuh"
#include "te4j/tuning.h"

namespace te4j {
namespace cuda {
namespace {

std::atomic<PutLauncher> g_launcher{nullptr};

}  // namespace

uint32_t putFlags() {
  using namespace te4j::tuning;
  uint32_t flags = 0;
  if (get(kSignal) != kSignalAtom) flags |= kPutFlagRedSignal;
  if (get(kArrival) == kArrivalGpu) flags |= kPutFlagGpuArrival;
  return flags;
}

cudaError_t launchPut(const PutLaunch& put) {
  if (put.nbytes >= kBulkPutBytes) {
    using Body = McBulkPutBody<8, 16384>;
    return launchPutKernel(put, mc_put_copy_kernel<Body>, Body::kSharedBytes, nullptr);
  }
  return launchPutKernel(put, mc_put_lean_kernel, 0, nullptr);
}

void setPutLauncher(PutLauncher launcher) { g_launcher.store(launcher, std::memory_order_release); }

PutLauncher putLauncher() { return g_launcher.load(std::memory_order_acquire); }

}  // namespace cuda
}  // namespace te4j
