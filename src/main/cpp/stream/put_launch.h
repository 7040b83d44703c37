// put_launch.h — how a CUDA op stream launches a put / putWithSignal to a P2P or own-rank route
// (RDMA routes take kernels/put_kernels.cuh instead, which post RDMA ops).
//
// te4j's policy (put_launch.cu), the one that measured best (docs/history/PERFORMANCE-notebook.md):
// the lean kernel below kBulkPutBytes, the 8 x 16 KiB bulk kernel from there on; the op stream
// first hands bodies to the copy engine where the host tables map the route, from a size that
// depends on the route (body_path.h). The put kernel's experiment variants are te4j-bench's
// (bench/src/main/cuda/bench/put_variants.cu): its library routes a put through them with
// setPutLauncher, the one private extension point here (this header is not installed).
#pragma once

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "stream/kernels/stream_state.cuh"
#include "transport/device/comm_device.cuh"

namespace te4j {
namespace cuda {

// From this size on a put leaves the lean kernel (the bulk kernel won at 1 GiB on 16 SMs and
// tied at 64 MiB); where the host tables map the route, body_path.h sends it to the copy engine.
constexpr size_t kBulkPutBytes = 32u << 20;

/// One put / putWithSignal (sig_ptr nullptr: put) on `stream`, the current device `device`.
struct PutLaunch {
  int device;
  cudaStream_t stream;
  unsigned blocks;
  unsigned threads;
  const mooncake::device::CommCtx* ctx;
  int dst_rank;
  void* recv_ptr;
  const void* send_ptr;
  size_t nbytes;
  uint32_t* sig_ptr;
  uint32_t value;
  McStreamScratch* scratch;
  McStreamStatus* status;
  uint32_t flags;  // kPutFlag*: putFlags() of the stream's knob snapshot
  bool pdl;        // programmatic dependent launch (knob pdl of the snapshot)
};

/// The kernel signature every P2P put kernel shares (lean and bulk families).
using PutKernelFn = void (*)(mooncake::device::CommCtx, int, void*, const void*, size_t, uint32_t*,
                             uint32_t, uint32_t, McStreamScratch*, McStreamStatus*);

/// Launches te4j's put kernel for the size (see above) with put.flags and put.pdl. Returns the
/// launch error or cudaSuccess.
cudaError_t launchPut(const PutLaunch& put);

/// The kernel flags (kPutFlag*) the knobs signal and arrival now ask for (read into a stream's
/// snapshot, not per launch).
uint32_t putFlags();

/// Launches a put in place of launchPut: te4j-bench's variant kernels, compiled into its own
/// library (which launches them with its own CUDA runtime on the op stream's stream).
using PutLauncher = cudaError_t (*)(const PutLaunch& put);

/// Sets the launcher every CUDA op stream uses for its P2P and own-rank puts (nullptr: te4j's
/// policy, the default). A stream reads it with the knobs, so it takes effect at the next
/// tuning::apply; while set, no body goes to the copy engine (the launcher's kernel moves every
/// size). Only te4j-bench sets it.
void setPutLauncher(PutLauncher launcher);

/// The launcher set, or nullptr.
PutLauncher putLauncher();

}  // namespace cuda
}  // namespace te4j
